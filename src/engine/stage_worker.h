// One rank's part of every step of a multi-rank job (DESIGN.md section 1).
//
// The coordinator's control message (a step plan, or shutdown) reaches the ranks of stage 0 by a
// broadcast in their TP group (world rank 0 is stage 0's tp_rank 0), and every later stage from
// the previous stage's rank with the same tp_rank, together with the hidden states. Each rank
// embeds (first stage) or receives the hidden states, runs its layers, and hands both on; the
// last stage computes the logits (gathered over its TP group) and its tp_rank 0 returns them to
// the coordinator, with the job's report on the plan's disk instructions when it had any
// (kv/kv_load_report.h: AND over each TP group, then along the pipeline).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/stage_runner.h"
#include "parallel/communicator.h"
#include "parallel/pipeline_channel.h"
#include "parallel/step_watchdog.h"
#include "parallel/world_config.h"

namespace weft {

// Broadcasts bytes from `root` over a communicator (size, then payload).
absl::Status broadcast_bytes(Communicator& comm, std::string& bytes, int root);
// Every member's bytes, by rank, on every member (sizes, then the payloads padded to the longest).
absl::StatusOr<std::vector<std::string>> all_gather_bytes(Communicator& comm, const std::string& mine);

class StageWorker {
 public:
  // Borrows everything. `watchdog` may be null (no step deadline).
  StageWorker(const WorldConfig& world, StageRunner& runner, Communicator& tp,
              PipelineChannel& pipeline, StepWatchdog* watchdog,
              std::chrono::milliseconds step_deadline);

  // Runs one control message on this rank. Returns false for shutdown (after passing it on).
  // On the coordinator of a single-stage job, `output` receives the step's output.
  absl::StatusOr<bool> handle(const std::string& control_bytes, StepOutput* output);

  // Every rank but the coordinator: receive and handle control messages until shutdown.
  absl::Status serve();

  int64_t vocab_size() const { return runner_.config().vocab_size; }
  // Seconds this rank spent computing steps (embedding, layers, logits), not waiting on other
  // ranks: with the job's wall time it gives the pipeline bubble.
  double compute_seconds() const { return compute_seconds_; }

 private:
  absl::StatusOr<std::string> receive_control();
  // The attention rows of the current plan so far: the earlier stages' (received after the
  // hidden states) and this stage's, from every rank of its TP group.
  absl::StatusOr<std::vector<AttentionRecord>> recorded_attention();
  // This rank's report on the plan's disk instructions AND its TP group's (kv/kv_load_report.h).
  absl::Status combine_over_tp(KvLoadReport& report);
  // Later stages: AND the earlier stages' report (sent after the hidden states and attention).
  absl::Status merge_earlier_report(KvLoadReport& report);

  WorldConfig world_;
  StageRunner& runner_;
  Communicator& tp_;
  PipelineChannel& pipeline_;
  StepWatchdog* watchdog_;
  std::chrono::milliseconds step_deadline_;
  double compute_seconds_ = 0;
};

}  // namespace weft
