#include "model/decoder_model.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "model/rope.h"
#include "weft/kernels/activation.h"

namespace weft {

absl::StatusOr<std::unique_ptr<DecoderModel>> DecoderModel::load(const ModelConfig& config,
                                                                 const WeightStore& weights,
                                                                 Communicator& tp,
                                                                 const StageLayout& layout,
                                                                 const ModelLoadOptions& options) {
  const int expert_parallel = options.expert_parallel;
  auto model = std::make_unique<DecoderModel>();
  model->config_ = config;
  model->layout_ = layout;
  // The weights' copies on huge pages (held_weight); each keeps its chunk alive after the load.
  HugePageArena arena;
  const LoadContext ctx{weights,      model->config_,           tp, expert_parallel, options.quantization,
                        options.quantize_lm_head, options.mmap_weights, &arena};
  if (expert_parallel > 1 && !config.moe.enabled()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ep ", expert_parallel, ": ", config.architecture, " has no experts (expert parallelism is for mixtures of experts)"));
  }

  // The embedding is needed by the first stage, and by the last when the LM head is tied to it.
  const bool need_embedding = layout.has_embedding || (layout.has_head && config.tie_word_embeddings);
  if (need_embedding) {
    WEFT_ASSIGN_OR_RETURN(model->embedding_, VocabParallelEmbedding::load(ctx, "model.embed_tokens"));
  }
  for (int i = layout.first_layer; i < layout.end_layer; ++i) {
    const std::string prefix = absl::StrCat("model.layers.", i);
    WEFT_ASSIGN_OR_RETURN(RmsNorm input_norm,
                          RmsNorm::load(ctx, prefix + ".input_layernorm", config.hidden_size));
    WEFT_ASSIGN_OR_RETURN(Attention attention, Attention::load(ctx, prefix + ".self_attn",
                                                                    config.layer_window[i], i));
    const char* pre_mlp_norm =
        config.sandwich_norms ? ".pre_feedforward_layernorm" : ".post_attention_layernorm";
    WEFT_ASSIGN_OR_RETURN(RmsNorm post_norm,
                          RmsNorm::load(ctx, prefix + pre_mlp_norm, config.hidden_size));
    Layer layer{std::move(input_norm), std::move(attention), std::move(post_norm), {}, {}, {}, {}};
    if (config.moe.is_sparse(i)) {
      WEFT_ASSIGN_OR_RETURN(layer.moe, SparseMoe::load(ctx, i));
    } else {
      WEFT_ASSIGN_OR_RETURN(layer.mlp, GatedMlp::load(ctx, prefix + ".mlp"));
    }
    if (config.sandwich_norms) {
      WEFT_ASSIGN_OR_RETURN(
          layer.attention_output_norm,
          RmsNorm::load(ctx, prefix + ".post_attention_layernorm", config.hidden_size));
      WEFT_ASSIGN_OR_RETURN(
          layer.mlp_output_norm,
          RmsNorm::load(ctx, prefix + ".post_feedforward_layernorm", config.hidden_size));
    }
    model->layers_.push_back(std::move(layer));
  }
  if (layout.has_head) {
    WEFT_ASSIGN_OR_RETURN(model->final_norm_, RmsNorm::load(ctx, "model.norm", config.hidden_size));
    if (config.tie_word_embeddings) {
      WEFT_ASSIGN_OR_RETURN(model->lm_head_, ParallelLmHead::tied(ctx, *model->embedding_));
    } else {
      WEFT_ASSIGN_OR_RETURN(model->lm_head_, ParallelLmHead::load(ctx, "lm_head"));
    }
  }
  const std::vector<std::vector<float>> tables = weft::rope_inv_freq_tables(config);
  const int64_t pairs = static_cast<int64_t>(tables[0].size());
  model->rope_inv_freq_ =
      tables.size() == 1
          ? Tensor::empty(DType::kF32, Shape{pairs})
          : Tensor::empty(DType::kF32, Shape{static_cast<int64_t>(tables.size()), pairs});
  for (size_t t = 0; t < tables.size(); ++t) {
    std::memcpy(model->rope_inv_freq_.data_as<float>() + t * pairs, tables[t].data(),
                pairs * sizeof(float));
  }
  model->rope_attention_scaling_ = weft::rope_attention_scaling(config);
  if (config.sliding_rope) {
    const std::vector<float> sliding = weft::rope_inv_freq(sliding_rope_config(config));
    model->sliding_rope_inv_freq_ =
        Tensor::empty(DType::kF32, Shape{static_cast<int64_t>(sliding.size())});
    std::memcpy(model->sliding_rope_inv_freq_.data_as<float>(), sliding.data(),
                sliding.size() * sizeof(float));
  }
  return model;
}

KvCacheShape DecoderModel::kv_cache_shape(int block_size, DType dtype) const {
  KvCacheShape shape;
  shape.num_layers = layout_.num_layers();
  shape.block_size = block_size;
  shape.num_kv_heads = layers_.empty() ? 0 : layers_[0].attention.num_kv_heads();
  shape.head_dim = config_.head_dim;
  shape.dtype = dtype;
  return shape;
}

absl::Status DecoderModel::embed(const ForwardContext& fc, const TensorView& hidden) const {
  if (!layout_.has_embedding) return absl::InternalError("embed() on a stage without embeddings");
  WEFT_RETURN_IF_ERROR(embedding_->forward(fc.batch.token_ids.view(), hidden, fc.tp, fc.pool));
  if (config_.embedding_multiplier != 1.0f)
    kernels::scale_inplace(hidden, config_.embedding_multiplier, fc.pool);
  return absl::OkStatus();
}

absl::Status DecoderModel::run_layers(const ForwardContext& outer, const KvCache& kv,
                                      const TensorView& hidden) const {
  // Frequencies that vary by token, decided once per step for every layer. LongRoPE: which of
  // this model's two sets each token uses; dynamic NTK: the set of each token's length.
  const bool longrope = rope_inv_freq_.shape().rank() == 2;
  const bool dynamic = config_.rope_scaling.type == RopeScalingType::kDynamic;
  TokenRopeTables token_rope;
  if (longrope) {
    token_rope.inv_freq = rope_inv_freq_;
    token_rope.rows = longrope_token_tables(config_, outer.batch);
  } else if (dynamic) {
    token_rope = dynamic_ntk_token_tables(config_, outer.batch);
  }
  const bool per_token = longrope || dynamic;
  const ForwardContext fc{outer.batch,
                          per_token ? token_rope.inv_freq : outer.rope_inv_freq,
                          outer.rope_attention_scaling,
                          outer.tp,
                          outer.pool,
                          per_token ? &token_rope.rows : outer.rope_table,
                          outer.attention_probe};
  // Sliding layers with their own RoPE (Gemma 3) rotate by sliding_rope_inv_freq_.
  const ForwardContext sliding_fc{
      fc.batch,
      sliding_rope_inv_freq_.defined() ? sliding_rope_inv_freq_ : fc.rope_inv_freq,
      fc.rope_attention_scaling,
      fc.tp,
      fc.pool,
      fc.rope_table,
      fc.attention_probe};
  const int64_t tokens = fc.batch.num_tokens;
  Tensor x = Tensor::empty(DType::kF32, Shape{tokens, config_.hidden_size});
  Tensor delta = Tensor::empty(DType::kF32, Shape{tokens, config_.hidden_size});
  // The residual add of each sub-block is fused into the next norm: residual += delta; x = norm.
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = layers_[i];
    if (i == 0) {
      layer.input_norm.forward(hidden, x.view(), fc.pool);
    } else {
      layer.input_norm.add_forward(hidden, delta.view(), x.view(), fc.pool);
    }
    const int li = static_cast<int>(i);
    const ForwardContext& layer_fc = layer.attention.window() > 0 ? sliding_fc : fc;
    WEFT_RETURN_IF_ERROR(layer.attention.forward(layer_fc, x.view(), kv.keys(li), kv.values(li),
                                                 delta.view(), &kv.key_scales(li),
                                                 &kv.value_scales(li)));
    if (layer.attention_output_norm)
      layer.attention_output_norm->forward(delta.view(), delta.view(), fc.pool);
    layer.post_attention_norm.add_forward(hidden, delta.view(), x.view(), fc.pool);
    WEFT_RETURN_IF_ERROR(layer.moe ? layer.moe->forward(fc, x.view(), delta.view())
                                   : layer.mlp->forward(fc, x.view(), delta.view()));
    if (layer.mlp_output_norm) layer.mlp_output_norm->forward(delta.view(), delta.view(), fc.pool);
  }
  if (!layers_.empty()) kernels::add_inplace(hidden, delta.view(), fc.pool);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DecoderModel::local_logits(const ForwardContext& fc,
                                                  const TensorView& hidden) const {
  if (!layout_.has_head) return absl::InternalError("local_logits() on a stage without the head");
  const int64_t rows = static_cast<int64_t>(fc.batch.logit_rows.size());
  const int64_t h = config_.hidden_size;
  Tensor selected = Tensor::empty(DType::kF32, Shape{rows, h});
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(selected.data_as<float>() + r * h,
                static_cast<const float*>(hidden.data) + fc.batch.logit_rows[r] * h,
                h * sizeof(float));
  }
  final_norm_->forward(selected.view(), selected.view(), fc.pool);
  Tensor logits = Tensor::empty(DType::kF32, Shape{rows, lm_head_->shard().count});
  lm_head_->forward(selected.view(), logits.view(), fc.pool);
  if (config_.final_logit_softcapping) {
    kernels::softcap_inplace(logits.view(), static_cast<float>(*config_.final_logit_softcapping),
                             fc.pool);
  }
  return logits;
}

size_t DecoderModel::weight_bytes() const {
  size_t bytes = 0;
  if (embedding_) bytes += embedding_->weight_bytes();
  for (const Layer& layer : layers_) {
    bytes += layer.input_norm.weight_bytes() + layer.attention.weight_bytes() +
             layer.post_attention_norm.weight_bytes() +
             (layer.moe ? layer.moe->weight_bytes() : layer.mlp->weight_bytes());
    if (layer.attention_output_norm) bytes += layer.attention_output_norm->weight_bytes();
    if (layer.mlp_output_norm) bytes += layer.mlp_output_norm->weight_bytes();
  }
  if (final_norm_) bytes += final_norm_->weight_bytes();
  if (lm_head_) bytes += lm_head_->weight_bytes();
  return bytes;
}

std::vector<const SparseMoe*> DecoderModel::sparse_blocks() const {
  std::vector<const SparseMoe*> blocks;
  for (const Layer& layer : layers_) {
    if (layer.moe) blocks.push_back(&*layer.moe);
  }
  return blocks;
}

}  // namespace weft
