#include "engine/distributed_executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/step_plan_codec.h"

namespace weft {

DistributedExecutor::DistributedExecutor(const WorldConfig& world, StageWorker& worker,
                                         Communicator& tp, PipelineChannel& pipeline,
                                         StepWatchdog* watchdog,
                                         std::chrono::milliseconds step_deadline, int micro_batches)
    : world_(world),
      worker_(worker),
      tp_(tp),
      pipeline_(pipeline),
      watchdog_(watchdog),
      step_deadline_(step_deadline),
      micro_batches_(world.pp == 1 ? 1 : std::max(1, micro_batches)) {}

absl::StatusOr<Tensor> DistributedExecutor::distribute(std::string bytes) {
  WEFT_RETURN_IF_ERROR(broadcast_bytes(tp_, bytes, 0));
  Tensor logits;
  WEFT_ASSIGN_OR_RETURN(bool stepped, worker_.handle(bytes, &logits));
  (void)stepped;
  return logits;
}

absl::Status DistributedExecutor::submit(const StepPlan& plan) {
  if (watchdog_) watchdog_->arm(plan.step_id, step_deadline_);
  absl::StatusOr<Tensor> logits = distribute(encode_control({ControlKind::kStep, plan}));
  if (watchdog_) watchdog_->disarm();
  if (!logits.ok()) return logits.status();
  in_flight_.emplace_back(plan.step_id, *std::move(logits));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DistributedExecutor::collect() {
  if (in_flight_.empty()) return absl::FailedPreconditionError("collect() with no step submitted");
  auto [step_id, logits] = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (world_.pp == 1) return logits;
  if (watchdog_) watchdog_->arm(step_id, step_deadline_);
  absl::StatusOr<Tensor> result = receive_result(step_id);
  if (watchdog_) watchdog_->disarm();
  return result;
}

absl::StatusOr<Tensor> DistributedExecutor::receive_result(int64_t step_id) {
  WEFT_ASSIGN_OR_RETURN(std::string bytes, pipeline_.recv_result());
  WEFT_ASSIGN_OR_RETURN(StepResult result, decode_step_result(bytes));
  if (!result.error.empty()) {
    return absl::InternalError(absl::StrCat("step ", step_id, " failed on the last stage: ", result.error));
  }
  if (result.step_id != step_id) {
    return absl::InternalError(absl::StrCat("expected the result of step ", step_id,
                                            ", the last stage returned step ", result.step_id));
  }
  if (!result.logits.defined()) {  // a step in which no chunk wanted logits
    return Tensor::empty(DType::kF32, Shape{0, worker_.vocab_size()});
  }
  return result.logits;
}

absl::Status DistributedExecutor::shutdown() {
  ControlMessage message;
  message.kind = ControlKind::kShutdown;
  return distribute(encode_control(message)).status();
}

}  // namespace weft
