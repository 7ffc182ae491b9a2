// The coordinator's StepExecutor in a multi-rank job: hands each plan to every rank (stage 0 by
// a TP broadcast, later stages through the pipeline), runs its own stage-0 part, and takes the
// logits from the last stage. With several micro-batches in flight the coordinator's stage works
// on plan k+1 while later stages work on plan k.
//
// The watchdog is armed with the step deadline while the coordinator works on or waits for a
// step: a rank that dies or stalls cannot leave it waiting forever. The deadline adapts to the
// observed step times (parallel/adaptive_deadline.h, from the step's submission to its result),
// with the configured step deadline as its ceiling.
#pragma once

#include <deque>
#include <utility>

#include "engine/stage_worker.h"
#include "engine/step_executor.h"
#include "parallel/adaptive_deadline.h"

namespace weft {

class DistributedExecutor final : public StepExecutor {
 public:
  // `micro_batches`: plans kept in flight through the pipeline (1 disables pipelining; more than
  // pp gains nothing).
  DistributedExecutor(const WorldConfig& world, StageWorker& worker, Communicator& tp,
                      PipelineChannel& pipeline, StepWatchdog* watchdog,
                      const AdaptiveDeadline::Options& step_deadline, int micro_batches);
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
  AdaptiveDeadline deadline_;
  int micro_batches_;
  // A submitted step: its output (single stage), or its id awaiting the last stage's result.
  struct InFlight {
    int64_t step_id = 0;
    int64_t num_tokens = 0;
    std::chrono::steady_clock::time_point submitted;
    StepOutput output;
  };
  std::deque<InFlight> in_flight_;  // oldest first

  // Records how long `step` took, submission to result.
  void observe(const InFlight& step);
};

}  // namespace weft
