// The StepExecutor of a single process holding the whole model (world size 1).
#pragma once

#include "engine/model_runner.h"
#include "engine/step_executor.h"

namespace weft {

class LocalExecutor final : public StepExecutor {
 public:
  explicit LocalExecutor(ModelRunner& runner) : runner_(runner) {}
  absl::StatusOr<Tensor> execute(const StepPlan& plan) override { return runner_.execute(plan); }

 private:
  ModelRunner& runner_;
};

}  // namespace weft
