// Grouped-query self-attention with rotary embeddings over the paged KV cache, tensor-parallel:
// q/k/v column-parallel by heads (KV heads replicated when fewer than TP ranks), o_proj
// row-parallel. Optional q/k biases (Qwen2, attention_bias) and per-head q/k RMSNorm (Qwen3);
// q/k/v from separate q_proj/k_proj/v_proj tensors or from one fused qkv_proj (Phi3); RoPE on the
// first rotary_dim dimensions of each head (partial rotary), with the token's frequency set.
// Scores scaled by head_dim^-0.5 or query_pre_attn_scalar^-0.5, optionally soft-capped (Gemma 2).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "model/layers/forward_context.h"
#include "model/layers/load_context.h"
#include "model/layers/parallel_linear.h"
#include "model/layers/rms_norm.h"

namespace weft {

class Attention {
 public:
  // `prefix` like "model.layers.3.self_attn"; `window`: 0 for full causal attention, else the
  // sliding window W (a query sees its W newest positions; ModelConfig::layer_window).
  // `layer`: the global layer index (what an AttentionProbe selects by).
  static absl::StatusOr<Attention> load(const LoadContext& ctx, const std::string& prefix,
                                        int64_t window = 0, int layer = 0);

  // x: F32 [tokens, hidden] (normalised input); out: F32 [tokens, hidden], the all-reduced
  // o_proj output. k_cache / v_cache: this layer's cache tensors (see kv/kv_cache.h);
  // k_scale / v_scale: their per-(slot, head) scales, required when the cache is I8.
  absl::Status forward(const ForwardContext& fc, const TensorView& x, const Tensor& k_cache,
                       const Tensor& v_cache, const TensorView& out,
                       const Tensor* k_scale = nullptr, const Tensor* v_scale = nullptr) const;

  int64_t num_heads() const { return num_heads_; }        // on this rank
  int64_t num_kv_heads() const { return num_kv_heads_; }  // on this rank
  int64_t window() const { return window_; }
  int64_t first_head() const { return first_head_; }  // global index of this rank's first head
  size_t weight_bytes() const;

 private:
  ColumnParallelLinear qkv_;
  RowParallelLinear o_proj_;
  std::optional<RmsNorm> q_norm_;
  std::optional<RmsNorm> k_norm_;
  int64_t num_heads_ = 0;
  int64_t num_kv_heads_ = 0;
  int64_t head_dim_ = 0;
  float scale_ = 1.0f;
  float softcap_ = 0.0f;  // ModelConfig::attn_logit_softcapping; 0: none
  int32_t window_ = 0;
  int layer_ = 0;
  int64_t first_head_ = 0;
};

}  // namespace weft
