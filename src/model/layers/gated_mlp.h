// The SwiGLU MLP of Llama-family models: down(silu(gate(x)) * up(x)) (Gemma's GeGLU: gelu_tanh
// in place of silu; ModelConfig::mlp_activation), tensor-parallel with
// gate/up column-parallel (fused into one weight; read from gate_proj/up_proj or from Phi3's
// gate_up_proj) and down row-parallel. An intermediate size
// not divisible by the TP size is zero-padded (padded units contribute exactly zero).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "model/layers/forward_context.h"
#include "model/layers/load_context.h"
#include "model/layers/parallel_linear.h"

namespace weft {

class GatedMlp {
 public:
  // `prefix` like "model.layers.3.mlp".
  static absl::StatusOr<GatedMlp> load(const LoadContext& ctx, const std::string& prefix);
  // x: F32 [tokens, hidden]; out: F32 [tokens, hidden] (all-reduced).
  absl::Status forward(const ForwardContext& fc, const TensorView& x, const TensorView& out) const;
  size_t weight_bytes() const { return gate_up_.weight_bytes() + down_.weight_bytes(); }

 private:
  ColumnParallelLinear gate_up_;
  RowParallelLinear down_;
  int64_t local_intermediate_ = 0;
  MlpActivation activation_ = MlpActivation::kSilu;
};

}  // namespace weft
