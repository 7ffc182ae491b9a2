// The coordinator's StepExecutor in a multi-rank job: hands each plan to every rank (stage 0 by
// a TP broadcast, later stages through the pipeline), runs its own stage-0 part, and takes the
// logits from the last stage. With several micro-batches in flight the coordinator's stage works
// on plan k+1 while later stages work on plan k.
//
// The watchdog is armed with the step deadline while the coordinator works on or waits for a
// step: a rank that dies or stalls cannot leave it waiting forever.
#pragma once

#include <deque>
#include <utility>

#include "engine/stage_worker.h"
#include "engine/step_executor.h"

namespace weft {

class DistributedExecutor final : public StepExecutor {
 public:
  // `micro_batches`: plans kept in flight through the pipeline (1 disables pipelining; more than
  // pp gains nothing).
  DistributedExecutor(const WorldConfig& world, StageWorker& worker, Communicator& tp,
                      PipelineChannel& pipeline, StepWatchdog* watchdog,
                      std::chrono::milliseconds step_deadline, int micro_batches);
  absl::Status submit(const StepPlan& plan) override;
  absl::StatusOr<StepOutput> collect() override;
  int max_in_flight() const override { return micro_batches_; }
  // Tells every rank to leave its step loop. Call once, at the end.
  absl::Status shutdown();

 private:
  absl::StatusOr<StepOutput> distribute(std::string bytes);
  absl::StatusOr<StepOutput> receive_result(int64_t step_id);

  WorldConfig world_;
  StageWorker& worker_;
  Communicator& tp_;
  PipelineChannel& pipeline_;
  StepWatchdog* watchdog_;
  std::chrono::milliseconds step_deadline_;
  int micro_batches_;
  // Submitted steps, oldest first: their output (single stage) or their ids (awaiting the last
  // stage's result).
  std::deque<std::pair<int64_t, StepOutput>> in_flight_;
};

}  // namespace weft
