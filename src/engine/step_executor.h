// Runs a step plan on every rank of the job and returns the logits the coordinator samples
// from. The single-process executor calls the ModelRunner directly; the distributed one
// broadcasts the plan and collects the last stage's logits.
#pragma once

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/step_plan.h"

namespace weft {

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // F32 [rows, vocab]: for each chunk in order, one row for LogitsWanted::kLast, one per token
  // for kAll, none for kNone.
  virtual absl::StatusOr<Tensor> execute(const StepPlan& plan) = 0;
};

}  // namespace weft
