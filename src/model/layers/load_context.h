// What a layer needs to load its shard of the weights.
#pragma once

#include "model/model_config.h"
#include "model/weight_store.h"
#include "parallel/communicator.h"

namespace weft {

struct LoadContext {
  const WeightStore& weights;
  const ModelConfig& config;
  Communicator& tp;  // the tensor-parallel group this rank belongs to
  // Mixture-of-experts layers: the TP group is split into this many expert groups of
  // tp.size() / expert_parallel ranks; each group holds num_experts / expert_parallel whole experts
  // and splits their intermediate dimension over its ranks (model/layers/sparse_moe.h). 1: every
  // rank holds a slice of every expert.
  int expert_parallel = 1;
};

}  // namespace weft
