// The SwiGLU MLP of Llama-family models: down(silu(gate(x)) * up(x)) (Gemma's GeGLU: gelu_tanh
// in place of silu; ModelConfig::mlp_activation), tensor-parallel with
// gate/up column-parallel (fused into one weight; read from gate_proj/up_proj or from Phi3's
// gate_up_proj) and down row-parallel. An intermediate size
// not divisible by the TP size is zero-padded (padded units contribute exactly zero).
// The experts of a mixture (model/layers/sparse_moe.h) are GatedMlps too, loaded by tensor name
// with the intermediate shard their expert-parallel layout gives them.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/layers/forward_context.h"
#include "model/layers/load_context.h"
#include "model/layers/parallel_linear.h"

namespace weft {

// The three projections of one SwiGLU block, tensor names without ".weight".
struct GatedMlpNames {
  std::string gate;
  std::string up;
  std::string down;
};

class GatedMlp {
 public:
  // The dense MLP of a decoder layer, `prefix` like "model.layers.3.mlp", of the config's
  // intermediate_size split over the whole TP group.
  static absl::StatusOr<GatedMlp> load(const LoadContext& ctx, const std::string& prefix);
  // Intermediate units `shard` of a block of `intermediate` units named `names` (no biases).
  static absl::StatusOr<GatedMlp> load_shard(const LoadContext& ctx, const GatedMlpNames& names,
                                             int64_t intermediate, ShardRange shard);
  // x: F32 [tokens, hidden]; out: F32 [tokens, hidden] (all-reduced).
  absl::Status forward(const ForwardContext& fc, const TensorView& x, const TensorView& out) const;
  // This rank's partial sum of the output, not reduced (see RowParallelLinear::forward_partial);
  // x: F32 [rows, hidden] (any row count); out: F32 [rows, hidden].
  void forward_partial(const TensorView& x, const TensorView& out, ThreadPool& pool) const;
  size_t weight_bytes() const { return gate_up_.weight_bytes() + down_.weight_bytes(); }

 private:
  // gate(x) and up(x) side by side: F32 [rows, 2 * local_intermediate_], then the activation.
  Tensor activation(const TensorView& x, ThreadPool& pool) const;

  ColumnParallelLinear gate_up_;
  RowParallelLinear down_;
  int64_t local_intermediate_ = 0;
  MlpActivation activation_ = MlpActivation::kSilu;
};

}  // namespace weft
