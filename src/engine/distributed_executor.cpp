#include "engine/distributed_executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/step_plan_codec.h"

namespace weft {

DistributedExecutor::DistributedExecutor(const WorldConfig& world, StageWorker& worker,
                                         Communicator& tp, PipelineChannel& pipeline,
                                         StepWatchdog* watchdog,
                                         const AdaptiveDeadline::Options& step_deadline,
                                         int micro_batches)
    : world_(world),
      worker_(worker),
      tp_(tp),
      pipeline_(pipeline),
      watchdog_(watchdog),
      deadline_(step_deadline),
      micro_batches_(world.pp == 1 ? 1 : std::max(1, micro_batches)) {}

absl::StatusOr<StepOutput> DistributedExecutor::distribute(std::string bytes) {
  WEFT_RETURN_IF_ERROR(broadcast_bytes(tp_, bytes, 0));
  StepOutput output;
  WEFT_ASSIGN_OR_RETURN(bool stepped, worker_.handle(bytes, &output));
  (void)stepped;
  return output;
}

absl::Status DistributedExecutor::submit(const StepPlan& plan) {
  InFlight step;
  step.step_id = plan.step_id;
  step.num_tokens = plan.num_tokens();
  step.submitted = std::chrono::steady_clock::now();
  if (watchdog_) watchdog_->arm(plan.step_id, deadline_.deadline(step.num_tokens));
  absl::StatusOr<StepOutput> output = distribute(encode_control({ControlKind::kStep, plan}));
  if (watchdog_) watchdog_->disarm();
  if (!output.ok()) return output.status();
  step.output = *std::move(output);
  if (world_.pp == 1) observe(step);
  in_flight_.push_back(std::move(step));
  return absl::OkStatus();
}

void DistributedExecutor::observe(const InFlight& step) {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - step.submitted;
  deadline_.observe(took.count(), step.num_tokens);
}

absl::StatusOr<StepOutput> DistributedExecutor::collect() {
  if (in_flight_.empty()) return absl::FailedPreconditionError("collect() with no step submitted");
  InFlight step = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (world_.pp == 1) return std::move(step.output);
  if (watchdog_) watchdog_->arm(step.step_id, deadline_.deadline(step.num_tokens));
  absl::StatusOr<StepOutput> result = receive_result(step.step_id);
  if (watchdog_) watchdog_->disarm();
  if (result.ok()) observe(step);
  return result;
}

absl::StatusOr<StepOutput> DistributedExecutor::receive_result(int64_t step_id) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, pipeline_.recv_result());
  WEFT_ASSIGN_OR_RETURN(StepResult result, decode_step_result(bytes));
  if (!result.error.empty()) {
    return absl::InternalError(absl::StrCat("step ", step_id, " failed on the last stage: ", result.error));
  }
  if (result.step_id != step_id) {
    return absl::InternalError(absl::StrCat("expected the result of step ", step_id,
                                            ", the last stage returned step ", result.step_id));
  }
  StepOutput output;
  if (!result.sampled.empty()) {  // greedy tokens from the last stage
    for (const SampledTokenResult& s : result.sampled) output.tokens.push_back(s.token);
  } else if (!result.candidates.empty()) {
    output.candidates = std::move(result.candidates);
  } else if (result.logits.defined()) {
    output.logits = std::move(result.logits);
  } else {  // a step in which no chunk wanted logits
    output.logits = Tensor::empty(DType::kF32, Shape{0, worker_.vocab_size()});
  }
  output.attention = std::move(result.attention);
  output.kv_load_report = std::move(result.kv_load_report);
  return output;
}

absl::Status DistributedExecutor::shutdown() {
  ControlMessage message;
  message.kind = ControlKind::kShutdown;
  return distribute(encode_control(message)).status();
}

}  // namespace weft
