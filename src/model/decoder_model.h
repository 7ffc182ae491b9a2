// The Llama-family decoder (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, and the mixtures of
// experts MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM): embedding,
// N x [RMSNorm, attention, RMSNorm, feed-forward] with residuals, final RMSNorm, LM head. The
// feed-forward block is a SwiGLU MLP (Gemma: GeGLU), or on the sparse layers of a mixture a
// SparseMoe. The architectures differ only in flags of ModelConfig (attention bias, q/k norm,
// rope scaling and partial rotary, sliding windows, tied embeddings, fused qkv / gate_up
// checkpoint tensors, experts; Gemma: 1 + w norms, a norm on the attention and MLP outputs before
// each residual add, GeGLU, scaled embeddings, attention scale and soft-capping, final logit
// soft-capping, a separate RoPE for the sliding layers), so one implementation built from the
// shared parallel layers serves them all.
//
// A DecoderModel holds one rank's part: the layers of its pipeline stage, sharded over its TP
// group. The hidden state passed between calls is the residual stream, F32 [tokens, hidden].
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "kv/kv_cache.h"
#include "model/layers/attention.h"
#include "model/layers/forward_context.h"
#include "model/layers/gated_mlp.h"
#include "model/layers/rms_norm.h"
#include "model/layers/sparse_moe.h"
#include "model/layers/vocab_parallel.h"
#include "model/model_config.h"
#include "model/stage_layout.h"
#include "model/weight_store.h"

namespace weft {

class DecoderModel {
 public:
  // `options`: how the TP group splits the experts of a mixture, weight quantization
  // (LoadContext).
  static absl::StatusOr<std::unique_ptr<DecoderModel>> load(const ModelConfig& config,
                                                            const WeightStore& weights,
                                                            Communicator& tp,
                                                            const StageLayout& layout,
                                                            const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const StageLayout& layout() const { return layout_; }
  // The KV-cache geometry of this rank (its layers, its KV heads).
  KvCacheShape kv_cache_shape(int block_size, DType dtype) const;

  // First stage only: hidden = embeddings of batch.token_ids (times
  // config.embedding_multiplier).
  absl::Status embed(const ForwardContext& fc, const TensorView& hidden) const;
  // Runs this stage's layers over the residual stream `hidden` in place. With LongRoPE it picks
  // each token's frequency set from fc.batch (model/rope.h: longrope_token_tables).
  absl::Status run_layers(const ForwardContext& fc, const KvCache& kv,
                          const TensorView& hidden) const;
  // Last stage only: final norm of rows batch.logit_rows of `hidden`, then this rank's vocabulary
  // shard of the logits: F32 [logit_rows, lm_head_shard().count]; soft-capped elementwise on each
  // shard when config.final_logit_softcapping is set.
  absl::StatusOr<Tensor> local_logits(const ForwardContext& fc, const TensorView& hidden) const;
  ShardRange lm_head_shard() const { return lm_head_->shard(); }

  // F32 [rotary_dim / 2]; LongRoPE: [2, rotary_dim / 2], the short and long sets.
  const Tensor& rope_inv_freq() const { return rope_inv_freq_; }
  float rope_attention_scaling() const { return rope_attention_scaling_; }
  // Bytes of weights this rank holds (tied embeddings counted once).
  size_t weight_bytes() const;
  // The sparse blocks of this stage's layers, in layer order (empty for a dense model): their
  // expert-load counters (SparseMoe::routed_tokens).
  std::vector<const SparseMoe*> sparse_blocks() const;

 private:
  struct Layer {
    RmsNorm input_norm;
    Attention attention;
    RmsNorm post_attention_norm;  // the norm before the MLP (Gemma: pre_feedforward_layernorm)
    std::optional<GatedMlp> mlp;   // dense layers
    std::optional<SparseMoe> moe;  // sparse layers of a mixture of experts
    // ModelConfig::sandwich_norms (Gemma): post_attention_layernorm on the attention output and
    // post_feedforward_layernorm on the MLP output, each before its residual add.
    std::optional<RmsNorm> attention_output_norm;
    std::optional<RmsNorm> mlp_output_norm;
  };

  ModelConfig config_;
  StageLayout layout_;
  std::optional<VocabParallelEmbedding> embedding_;
  std::vector<Layer> layers_;
  std::optional<RmsNorm> final_norm_;
  std::optional<ParallelLmHead> lm_head_;
  Tensor rope_inv_freq_;
  float rope_attention_scaling_ = 1.0f;
  // ModelConfig::sliding_rope (Gemma 3): F32 [rotary_dim / 2] for the sliding-window layers.
  Tensor sliding_rope_inv_freq_;
};

}  // namespace weft
