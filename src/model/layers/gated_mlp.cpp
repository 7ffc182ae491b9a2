#include "model/layers/gated_mlp.h"

#include <vector>

#include "core/status_macros.h"
#include "model/layers/layer_shards.h"
#include "weft/kernels/activation.h"

namespace weft {

absl::StatusOr<GatedMlp> GatedMlp::load(const LoadContext& ctx, const std::string& prefix) {
  const ModelConfig& c = ctx.config;
  const MlpShards shards = mlp_shards(c, prefix, ctx.tp.rank(), ctx.tp.size());
  const ShardRange shard = shards.intermediate;
  GatedMlp mlp;
  WEFT_ASSIGN_OR_RETURN(mlp.gate_up_, ColumnParallelLinear::load(ctx, shards.gate_up, c.hidden_size, c.mlp_bias));
  WEFT_ASSIGN_OR_RETURN(mlp.down_, RowParallelLinear::load(ctx, shards.down.name, shards.down.out_features,
                                                           shards.down.full_in, shard, c.mlp_bias));
  mlp.local_intermediate_ = shard.count;
  mlp.activation_ = c.mlp_activation;
  return mlp;
}

absl::StatusOr<GatedMlp> GatedMlp::load_shard(const LoadContext& ctx, const GatedMlpNames& names,
                                              int64_t intermediate, ShardRange shard) {
  const int64_t hidden = ctx.config.hidden_size;
  GatedMlp mlp;
  WEFT_ASSIGN_OR_RETURN(mlp.gate_up_, ColumnParallelLinear::load(
                                          ctx, {{names.gate, intermediate, shard},
                                                {names.up, intermediate, shard}},
                                          hidden, /*has_bias=*/false));
  WEFT_ASSIGN_OR_RETURN(mlp.down_, RowParallelLinear::load(ctx, names.down, hidden, intermediate,
                                                           shard, /*has_bias=*/false));
  mlp.local_intermediate_ = shard.count;
  mlp.activation_ = ctx.config.mlp_activation;
  return mlp;
}

Tensor GatedMlp::activation(const TensorView& x, ThreadPool& pool) const {
  const int64_t rows = x.shape[0];
  Tensor gate_up = Tensor::empty(DType::kF32, Shape{rows, 2 * local_intermediate_});
  gate_up_.forward(x, gate_up.view(), pool);
  Tensor act = Tensor::empty(DType::kF32, Shape{rows, local_intermediate_});
  if (activation_ == MlpActivation::kGeluTanh) {
    kernels::gelu_tanh_and_mul(gate_up.view(), act.view(), pool);
  } else {
    kernels::silu_and_mul(gate_up.view(), act.view(), pool);
  }
  return act;
}

absl::Status GatedMlp::forward(const ForwardContext& fc, const TensorView& x,
                               const TensorView& out) const {
  const Tensor act = activation(x, fc.pool);
  return down_.forward(act.view(), out, fc.tp, fc.pool);
}

void GatedMlp::forward_partial(const TensorView& x, const TensorView& out, ThreadPool& pool) const {
  const Tensor act = activation(x, pool);
  down_.forward_partial(act.view(), out, pool);
}

}  // namespace weft
