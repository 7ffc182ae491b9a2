// One rank's share of a step's forward pass, whatever device holds its weights and its slice of
// the KV cache. StageWorker drives every multi-rank step through this interface, so the
// distributed path (control messages, pipeline hand-offs, reports, results) is written once for
// all backends: HostStageRunner (stage_runner.cpp) runs ModelRunner on the CPU; a device backend
// implements the same calls over its own weights and cache.
//
// Per plan, in this order on one thread: transfer_kv(); then, when the plan has chunks,
// begin_step(), the hidden states from embed() (first stage) or received into hidden_buffer()
// (later stages), run_layers() on them, and on the last stage output(). A runner works on one
// plan at a time: begin_step() replaces the previous step.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/model_runner.h"
#include "engine/step_executor.h"
#include "engine/step_plan.h"
#include "kv/kv_load_report.h"
#include "model/model_config.h"

namespace weft {

class StageRunner {
 public:
  virtual ~StageRunner() = default;

  virtual const ModelConfig& config() const = 0;
  // The plan's KV tier instructions on this rank's slice; `report` (optional) receives this
  // rank's outcome of its disk instructions (kv/kv_load_report.h).
  virtual absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report) = 0;
  // Checks the plan against this rank's KV cache and prepares its forward pass.
  virtual absl::Status begin_step(const StepPlan& plan) = 0;
  // Tokens of the current step (its hidden states' rows).
  virtual int64_t num_tokens() const = 0;
  // Room for the current step's hidden states as the previous stage sends them: [num_tokens,
  // hidden_size], in the layout run_layers() takes.
  virtual Tensor hidden_buffer() const = 0;
  // First stage: the embedded tokens of the current step.
  virtual absl::StatusOr<Tensor> embed() = 0;
  // This stage's layers over `hidden`, in place.
  virtual absl::Status run_layers(const Tensor& hidden) = 0;
  // Last stage: what the current plan asks for (logits, argmax tokens or candidates), complete
  // over the TP group, on the host.
  virtual absl::StatusOr<StepOutput> output(const Tensor& hidden) = 0;
  // The attention rows recorded for StepPlan::record_attention since the last call (this rank's
  // layers and heads).
  virtual std::vector<AttentionRecord> take_recorded_attention() = 0;
};

// The CPU backend: ModelRunner's pieces, with the current step's ForwardBatch kept between calls.
class HostStageRunner final : public StageRunner {
 public:
  explicit HostStageRunner(ModelRunner& runner) : runner_(runner) {}  // borrowed

  const ModelConfig& config() const override { return runner_.model().config(); }
  absl::Status transfer_kv(const StepPlan& plan, KvLoadReport* report) override {
    return runner_.transfer_kv(plan, report);
  }
  absl::Status begin_step(const StepPlan& plan) override;
  int64_t num_tokens() const override { return batch_.num_tokens; }
  Tensor hidden_buffer() const override;
  absl::StatusOr<Tensor> embed() override { return runner_.embed(batch_); }
  absl::Status run_layers(const Tensor& hidden) override { return runner_.run_layers(batch_, hidden); }
  absl::StatusOr<StepOutput> output(const Tensor& hidden) override;
  std::vector<AttentionRecord> take_recorded_attention() override { return runner_.take_recorded_attention(); }

 private:
  ModelRunner& runner_;
  ForwardBatch batch_;
  // What output() needs of the plan (StepPlan::sample_candidates, candidate_logsumexp).
  StepPlan wanted_;
};

}  // namespace weft
