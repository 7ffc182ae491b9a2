// One rank's share of a step's forward pass, whatever device holds its weights and its slice of
// the KV cache. StageWorker drives every multi-rank step through this interface, so the
// distributed path (control messages, pipeline hand-offs, reports, results) is written once for
// all backends: HostStageRunner (below) runs ModelRunner on the CPU; a device backend implements
// the same calls over its own weights and cache.
//
// The runner holds the current step's hidden states. Between pipeline stages they travel as host
// F32 [num_tokens, hidden_size] rows, whatever the backend computes in.
//
// Per plan, in this order on one thread: transfer_kv(); then, when the plan has chunks,
// begin_step(); embed() on the first stage, or the previous stage's hidden states received into
// incoming_hidden(); run_layers(); then outgoing_hidden() for the next stage, or output() on the
// last. A runner works on one plan at a time: begin_step() replaces the previous step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/local_engine.h"
#include "engine/model_runner.h"
#include "engine/rank_model.h"
#include "engine/step_executor.h"
#include "engine/step_plan.h"
#include "kv/kv_load_report.h"
#include "model/model_config.h"
#include "model/stage_layout.h"
#include "parallel/communicator.h"

namespace weft {

class StageRunner {
 public:
  virtual ~StageRunner() = default;

  virtual const ModelConfig& config() const = 0;
  // Collective over the rank's TP group, once every rank has made its runner (a device backend
  // connects the group's transport here). The CPU runner needs nothing.
  virtual absl::Status join_tp_group() { return absl::OkStatus(); }
  // The plan's KV tier instructions on this rank's slice; `report` (optional) receives this
  // rank's outcome of its disk instructions (kv/kv_load_report.h).
  virtual absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report) = 0;
  // Checks the plan against this rank's KV cache and prepares its forward pass.
  virtual absl::Status begin_step(const StepPlan& plan) = 0;
  // Later stages: host F32 [num_tokens, hidden_size] to receive the previous stage's hidden states
  // into; run_layers() starts from them.
  virtual absl::StatusOr<TensorView> incoming_hidden() = 0;
  // First stage: embeds the step's tokens; run_layers() starts from them.
  virtual absl::Status embed() = 0;
  // This stage's layers over the hidden states.
  virtual absl::Status run_layers() = 0;
  // Not the last stage: the hidden states after run_layers(), host F32 [num_tokens, hidden_size],
  // valid until the next call.
  virtual absl::StatusOr<TensorView> outgoing_hidden() = 0;
  // Last stage: what the current plan asks for (logits, argmax tokens or candidates), complete
  // over the TP group, on the host.
  virtual absl::StatusOr<StepOutput> output() = 0;
  // The attention rows recorded for StepPlan::record_attention since the last call (this rank's
  // layers and heads).
  virtual std::vector<AttentionRecord> take_recorded_attention() = 0;
};

// A device backend's runner for one rank of a multi-rank job, with the KV blocks its device pool
// holds and a line saying where it runs (printed at start).
struct DeviceStageRunner {
  std::unique_ptr<StageRunner> runner;
  int64_t num_kv_blocks = 0;
  std::string description;
};
// Builds it from the rank's loaded model (config and weight store), the engine options, its
// pipeline stage and its TP group's host communicator (borrowed for the runner's life). Not
// collective: join_tp_group() is. The launcher passes src/engine/cuda's (make_cuda_stage_runner).
using DeviceStageRunnerFactory = std::function<absl::StatusOr<DeviceStageRunner>(
    const RankModel& model, const LocalEngineOptions& options, const StageLayout& layout, Communicator& tp)>;

// The CPU backend: ModelRunner's pieces over the current step's ForwardBatch and hidden states.
class HostStageRunner final : public StageRunner {
 public:
  explicit HostStageRunner(ModelRunner& runner) : runner_(runner) {}  // borrowed

  const ModelConfig& config() const override { return runner_.model().config(); }
  absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report) override {
    return runner_.transfer_kv(plan, report);
  }
  absl::Status begin_step(const StepPlan& plan) override;
  absl::StatusOr<TensorView> incoming_hidden() override;
  absl::Status embed() override;
  absl::Status run_layers() override { return runner_.run_layers(batch_, hidden_); }
  absl::StatusOr<TensorView> outgoing_hidden() override { return hidden_.view(); }
  absl::StatusOr<StepOutput> output() override { return runner_.output(wanted_, batch_, hidden_); }
  std::vector<AttentionRecord> take_recorded_attention() override { return runner_.take_recorded_attention(); }

 private:
  ModelRunner& runner_;
  ForwardBatch batch_;
  Tensor hidden_;  // F32 [num_tokens, hidden_size]
  // What output() needs of the plan (StepPlan::sample_candidates, candidate_logsumexp).
  StepPlan wanted_;
};

}  // namespace weft
