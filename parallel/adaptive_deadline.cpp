#include "parallel/adaptive_deadline.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace weft {
namespace {

double p99(const std::deque<double>& values) {
  std::vector<double> sorted(values.begin(), values.end());
  const size_t index = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))) - 1;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(index), sorted.end());
  return sorted[index];
}

}  // namespace

std::chrono::milliseconds AdaptiveDeadline::deadline(int64_t num_tokens) const {
  const Options& o = options_;
  if (observed() < o.warmup_steps || o.floor >= o.ceiling) return o.ceiling;
  const double seconds = o.multiplier * std::max(p99(step_seconds_),
                                                 p99(token_seconds_) * static_cast<double>(std::max<int64_t>(1, num_tokens)));
  const double ms = std::clamp(seconds * 1000.0, static_cast<double>(o.floor.count()),
                               static_cast<double>(o.ceiling.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(ms)));
}

void AdaptiveDeadline::observe(double seconds, int64_t num_tokens) {
  step_seconds_.push_back(seconds);
  token_seconds_.push_back(seconds / static_cast<double>(std::max<int64_t>(1, num_tokens)));
  while (static_cast<int>(step_seconds_.size()) > options_.window) {
    step_seconds_.pop_front();
    token_seconds_.pop_front();
  }
}

}  // namespace weft
