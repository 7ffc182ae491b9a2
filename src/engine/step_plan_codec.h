// StepPlan / StepResult / control messages <-> protobuf bytes (src/proto/step_plan.proto).
//
// The bytes travel between ranks (MPI control channel), so decoding treats them as untrusted:
// every decode_* validates what it parsed and answers InvalidArgument naming the field and what
// was expected, never crashing or allocating absurd amounts on hostile input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "engine/sample_candidates.h"
#include "engine/step_plan.h"
#include "kv/kv_load_report.h"

namespace weft {

// Bounds decode_step_plan enforces (independent of any model).
inline constexpr int64_t kMaxPlanChunks = 1 << 16;
inline constexpr int64_t kMaxPlanTokens = 1 << 22;      // summed over chunks
inline constexpr int64_t kMaxSequencePosition = 1 << 26;  // start_position + tokens
// Bounds decode_step_result enforces.
inline constexpr int64_t kMaxResultRows = 1 << 22;
inline constexpr int64_t kMaxResultVocab = 1 << 24;

// A token the last stage sampled for a sequence, with its log-probability.
struct SampledTokenResult {
  int64_t seq_id = 0;
  int32_t token = 0;
  float logprob = 0.0f;

  bool operator==(const SampledTokenResult&) const = default;
};

// What the last pipeline stage sends back for one step: logits (F32 [rows, vocab], the layout of
// StepExecutor::execute; undefined when none are sent) and/or sampled tokens; `error` non-empty
// when the step failed on that rank (then the rest may be empty).
struct StepResult {
  int64_t step_id = 0;
  Tensor logits;
  std::vector<SampledTokenResult> sampled;
  SampleCandidates candidates;  // StepPlan::sample_candidates > 1
  std::vector<AttentionRecord> attention;  // StepPlan::record_attention's rows
  std::optional<KvLoadReport> kv_load_report;  // StepOutput::kv_load_report
  std::string error;
};

enum class ControlKind : uint8_t { kStep, kShutdown };

// The message workers wait for: run `plan`, or leave the step loop.
struct ControlMessage {
  ControlKind kind = ControlKind::kStep;
  StepPlan plan;  // meaningful for kStep only
};

std::string encode_step_plan(const StepPlan& plan);
// Errors (InvalidArgument) on unparsable bytes, a negative step_id, no chunks or more than
// kMaxPlanChunks, a chunk without tokens, a negative or duplicated seq_id, a negative
// start_position / token id / block id, start_position + tokens past kMaxSequencePosition, more
// than kMaxPlanTokens tokens in all, more blocks than positions, an unknown logits value,
// sample_candidates outside 0..kMaxSampleCandidates, or a record_attention entry naming a
// sequence not in the plan (or twice), or a negative layer or head.
absl::StatusOr<StepPlan> decode_step_plan(std::string_view bytes);

// Model-dependent checks the receiver can add after decoding: token ids < vocab_size, block ids
// < num_blocks, and block tables covering start_position + tokens at block_size tokens a block.
// A limit of 0 is not checked.
struct PlanLimits {
  int64_t vocab_size = 0;
  int64_t num_blocks = 0;
  int block_size = 0;
};
absl::Status check_step_plan(const StepPlan& plan, const PlanLimits& limits);

// `result.logits`, when defined, must be an F32 host tensor of rank 2 (or rank 1 = one row).
std::string encode_step_result(const StepResult& result);
// Errors on unparsable bytes, negative or absurd rows / vocab, logits.size() != rows * vocab,
// sampled tokens with negative seq_id or token or a NaN / positive logprob, or candidates that
// are not whole rows of candidates_per_row (0..kMaxSampleCandidates) with ids in -1..vocab and
// logits below +inf, or attention rows that parse_attention_records refuses.
absl::StatusOr<StepResult> decode_step_result(std::string_view bytes);

std::string encode_control(const ControlMessage& message);
// Errors on unparsable bytes, an unknown or unspecified kind, or (kStep) an invalid plan.
absl::StatusOr<ControlMessage> decode_control(std::string_view bytes);

}  // namespace weft
