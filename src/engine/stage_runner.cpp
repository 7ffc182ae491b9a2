#include "engine/stage_runner.h"

#include "core/status_macros.h"

namespace weft {

absl::Status HostStageRunner::begin_step(const StepPlan& plan) {
  WEFT_ASSIGN_OR_RETURN(batch_, runner_.prepare(plan));
  wanted_.sample_candidates = plan.sample_candidates;
  wanted_.candidate_logsumexp = plan.candidate_logsumexp;
  return absl::OkStatus();
}

Tensor HostStageRunner::hidden_buffer() const {
  return Tensor::empty(DType::kF32, Shape{batch_.num_tokens, config().hidden_size});
}

absl::StatusOr<StepOutput> HostStageRunner::output(const Tensor& hidden) {
  return runner_.output(wanted_, batch_, hidden);
}

}  // namespace weft
