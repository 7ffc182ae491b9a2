#include "engine/stage_runner.h"

#include "core/status_macros.h"

namespace weft {

absl::Status HostStageRunner::begin_step(const StepPlan& plan) {
  WEFT_ASSIGN_OR_RETURN(batch_, runner_.prepare(plan));
  hidden_ = Tensor();
  wanted_.sample_candidates = plan.sample_candidates;
  wanted_.candidate_logsumexp = plan.candidate_logsumexp;
  return absl::OkStatus();
}

absl::StatusOr<TensorView> HostStageRunner::incoming_hidden() {
  hidden_ = Tensor::empty(DType::kF32, Shape{batch_.num_tokens, config().hidden_size});
  return hidden_.view();
}

absl::Status HostStageRunner::embed() {
  WEFT_ASSIGN_OR_RETURN(hidden_, runner_.embed(batch_));
  return absl::OkStatus();
}

}  // namespace weft
