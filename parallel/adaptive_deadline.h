// Step deadlines that follow the job's own step times, so that a stopped or stalled rank is
// detected in seconds, not after the fixed worst-case --step-timeout.
//
// After `warmup_steps` observed steps, the deadline for a step of N tokens is
//   multiplier x max(p99 of recent step times, p99 of recent seconds-per-token x N),
// clamped to [floor, ceiling]: the per-token term lets a first large prefill chunk after many
// small decode steps take proportionally longer. Until warm (model warm-up, first long prefills)
// and whenever floor > ceiling, the deadline is `ceiling` (the configured --step-timeout).
// Plain data, not thread-safe: one owner (the coordinator's executor).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

namespace weft {

class AdaptiveDeadline {
 public:
  struct Options {
    std::chrono::milliseconds ceiling{std::chrono::minutes(5)};
    std::chrono::milliseconds floor{std::chrono::seconds(10)};
    double multiplier = 10.0;
    int warmup_steps = 8;
    int window = 256;  // most recent steps kept
  };

  explicit AdaptiveDeadline(const Options& options) : options_(options) {}

  // The deadline for a step of `num_tokens` tokens.
  std::chrono::milliseconds deadline(int64_t num_tokens) const;
  // Records that a step of `num_tokens` tokens took `seconds`.
  void observe(double seconds, int64_t num_tokens);

  int64_t observed() const { return static_cast<int64_t>(step_seconds_.size()); }

 private:
  Options options_;
  std::deque<double> step_seconds_;
  std::deque<double> token_seconds_;  // seconds per token of the same steps
};

}  // namespace weft
