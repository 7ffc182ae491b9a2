// Runs step plans on every rank of the job and returns the logits the coordinator samples from.
// The single-process executor calls the ModelRunner directly; the distributed one hands the plan
// to every rank and collects the last stage's logits.
//
// Plans may be pipelined: up to max_in_flight() plans submitted before the oldest is collected
// (a pipeline of P stages works on P micro-batches at once). Results come back in submission
// order. Plans in flight together must hold disjoint sequences (Scheduler guarantees it).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/sample_candidates.h"
#include "engine/step_plan.h"
#include "kv/kv_load_report.h"

namespace weft {

// What one step returns to the coordinator, one of: logits to sample from; the argmax token of
// each of those rows (a plan with sample_candidates 1); or each row's best candidates (K > 1).
struct StepOutput {
  Tensor logits;                // F32 [rows, vocab]; undefined when one of the others is given
  std::vector<int32_t> tokens;  // [rows]
  SampleCandidates candidates;  // [rows * K]
  // The attention rows StepPlan::record_attention asked for, from every rank.
  std::vector<AttentionRecord> attention;
  // Multi-rank: every rank's outcome of the plan's disk instructions, combined (a plan that loads
  // or persists, kv/kv_load_report.h); empty otherwise.
  std::optional<KvLoadReport> kv_load_report;
  int64_t rows() const {
    if (logits.defined()) return logits.dim(0);
    return candidates.empty() ? static_cast<int64_t>(tokens.size()) : candidates.rows();
  }
};

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;

  // Starts `plan` on every rank.
  virtual absl::Status submit(const StepPlan& plan) = 0;
  // The output of the oldest submitted plan not yet collected. Rows: for each chunk in order, one
  // for LogitsWanted::kLast, one per token for kAll, none for kNone.
  virtual absl::StatusOr<StepOutput> collect() = 0;
  // How many plans may be in flight at once (1: each is collected before the next is submitted).
  virtual int max_in_flight() const { return 1; }

  absl::StatusOr<StepOutput> execute(const StepPlan& plan) {
    if (absl::Status s = submit(plan); !s.ok()) return s;
    return collect();
  }
};

}  // namespace weft
