#include "model/layers/attention.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/status_macros.h"
#include "model/layers/layer_shards.h"
#include "weft/kernels/attention.h"
#include "weft/kernels/rope.h"

namespace weft {

absl::StatusOr<Attention> Attention::load(const LoadContext& ctx, const std::string& prefix,
                                          int64_t window, int layer) {
  const ModelConfig& c = ctx.config;
  WEFT_ASSIGN_OR_RETURN(AttentionShards shards, attention_shards(c, prefix, ctx.tp.rank(), ctx.tp.size()));
  const ShardRange q_rows = shards.q_rows, kv_rows = shards.kv_rows;
  Attention attn;
  WEFT_ASSIGN_OR_RETURN(attn.qkv_, ColumnParallelLinear::load(ctx, shards.qkv, c.hidden_size, c.attention_bias));
  WEFT_ASSIGN_OR_RETURN(attn.o_proj_, RowParallelLinear::load(ctx, shards.o_proj.name, shards.o_proj.out_features,
                                                              shards.o_proj.full_in, shards.o_proj.shard,
                                                              c.o_proj_bias));
  if (c.qk_norm) {
    WEFT_ASSIGN_OR_RETURN(attn.q_norm_, RmsNorm::load(ctx, prefix + ".q_norm", c.head_dim));
    WEFT_ASSIGN_OR_RETURN(attn.k_norm_, RmsNorm::load(ctx, prefix + ".k_norm", c.head_dim));
  }
  attn.num_heads_ = q_rows.count / c.head_dim;
  attn.num_kv_heads_ = kv_rows.count / c.head_dim;
  attn.head_dim_ = c.head_dim;
  attn.scale_ = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.query_pre_attn_scalar) {
    // Gemma: query_pre_attn_scalar ** -0.5, a Python float rounded to F32 where it multiplies.
    attn.scale_ = static_cast<float>(std::pow(static_cast<double>(*c.query_pre_attn_scalar), -0.5));
  }
  attn.softcap_ = static_cast<float>(c.attn_logit_softcapping.value_or(0.0));
  attn.window_ = static_cast<int32_t>(window);
  attn.layer_ = layer;
  attn.first_head_ = q_rows.begin / c.head_dim;
  return attn;
}

absl::Status Attention::forward(const ForwardContext& fc, const TensorView& x,
                                const Tensor& k_cache, const Tensor& v_cache,
                                const TensorView& out, const Tensor* k_scale,
                                const Tensor* v_scale) const {
  const bool int8 = k_cache.dtype() == DType::kI8;
  if (int8 && (k_scale == nullptr || v_scale == nullptr || !k_scale->defined() ||
               !v_scale->defined())) {
    return absl::InvalidArgumentError("attention: an I8 KV cache needs its scale tensors");
  }
  const int64_t tokens = fc.batch.num_tokens;
  const int64_t q_width = num_heads_ * head_dim_;
  const int64_t kv_width = num_kv_heads_ * head_dim_;
  Tensor qkv = Tensor::empty(DType::kF32, Shape{tokens, q_width + 2 * kv_width});
  qkv_.forward(x, qkv.view(), fc.pool);

  // Split the fused rows into contiguous q, k, v for the kernels.
  Tensor q = Tensor::empty(DType::kF32, Shape{tokens, num_heads_, head_dim_});
  Tensor k = Tensor::empty(DType::kF32, Shape{tokens, num_kv_heads_, head_dim_});
  Tensor v = Tensor::empty(DType::kF32, Shape{tokens, num_kv_heads_, head_dim_});
  const float* src = qkv.data_as<float>();
  const int64_t row = q_width + 2 * kv_width;
  fc.pool.parallel_for(tokens, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float* r = src + t * row;
      std::memcpy(q.data_as<float>() + t * q_width, r, q_width * sizeof(float));
      std::memcpy(k.data_as<float>() + t * kv_width, r + q_width, kv_width * sizeof(float));
      std::memcpy(v.data_as<float>() + t * kv_width, r + q_width + kv_width,
                  kv_width * sizeof(float));
    }
  }, 16);

  if (q_norm_) {
    q_norm_->forward_heads(q.view(), fc.pool);
    k_norm_->forward_heads(k.view(), fc.pool);
  }
  const TensorView* rope_table = fc.rope_table != nullptr ? &fc.rope_table->view() : nullptr;
  kernels::apply_rope(q.view(), fc.batch.positions.view(), fc.rope_inv_freq.view(),
                      fc.rope_attention_scaling, fc.pool, rope_table);
  kernels::apply_rope(k.view(), fc.batch.positions.view(), fc.rope_inv_freq.view(),
                      fc.rope_attention_scaling, fc.pool, rope_table);
  Tensor attn_out = Tensor::empty(DType::kF32, Shape{tokens, num_heads_, head_dim_});
  kernels::AttentionBatch batch = fc.batch.attention();
  batch.window = window_;
  batch.softcap = softcap_;
  AttentionProbe* probe = fc.attention_probe;
  if (probe != nullptr && !probe->records_layer(layer_)) probe = nullptr;
  AttentionProbe::Pass recording;
  if (probe != nullptr) {
    recording = probe->begin(fc.batch, num_heads_);
    batch.weights_out = recording.out();
  }
  if (int8) {
    kernels::write_kv_cache(k.view(), v.view(), fc.batch.slots.view(), k_cache.view(),
                            v_cache.view(), k_scale->view(), v_scale->view(), fc.pool);
    kernels::paged_attention(q.view(), k_cache.view(), v_cache.view(), k_scale->view(),
                             v_scale->view(), batch, scale_, attn_out.view(),
                             fc.pool);
  } else {
    kernels::write_kv_cache(k.view(), v.view(), fc.batch.slots.view(), k_cache.view(),
                            v_cache.view(), fc.pool);
    kernels::paged_attention(q.view(), k_cache.view(), v_cache.view(), batch, scale_,
                             attn_out.view(), fc.pool);
  }
  if (probe != nullptr) probe->end(recording, fc.batch, layer_, first_head_, num_heads_);
  return o_proj_.forward(attn_out.view().reshaped(Shape{tokens, q_width}), out, fc.tp, fc.pool);
}

size_t Attention::weight_bytes() const {
  size_t bytes = qkv_.weight_bytes() + o_proj_.weight_bytes();
  if (q_norm_) bytes += q_norm_->weight_bytes() + k_norm_->weight_bytes();
  return bytes;
}

}  // namespace weft
