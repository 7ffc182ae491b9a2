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
};

}  // namespace weft
