// The coordinator's StepExecutor in a multi-rank job: hands each plan to every rank (stage 0 by
// a TP broadcast, later stages through the pipeline), runs its own stage-0 part, and takes the
// logits from the last stage.
#pragma once

#include "engine/stage_worker.h"
#include "engine/step_executor.h"

namespace weft {

class DistributedExecutor final : public StepExecutor {
 public:
  // `watchdog` (may be null) is armed with `step_deadline` from the plan's hand-over until its
  // logits are back: a rank that dies or stalls cannot leave the coordinator waiting forever.
  DistributedExecutor(const WorldConfig& world, StageWorker& worker, Communicator& tp,
                      PipelineChannel& pipeline, StepWatchdog* watchdog,
                      std::chrono::milliseconds step_deadline);
  absl::StatusOr<Tensor> execute(const StepPlan& plan) override;
  // Tells every rank to leave its step loop. Call once, at the end.
  absl::Status shutdown();

 private:
  absl::StatusOr<Tensor> distribute(std::string bytes);
  absl::StatusOr<Tensor> run_step(const StepPlan& plan);

  WorldConfig world_;
  StageWorker& worker_;
  Communicator& tp_;
  PipelineChannel& pipeline_;
  StepWatchdog* watchdog_;
  std::chrono::milliseconds step_deadline_;
};

}  // namespace weft
