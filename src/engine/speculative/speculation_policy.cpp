#include "engine/speculative/speculation_policy.h"

#include <algorithm>
#include <bit>

namespace weft {

SpeculationPolicy::SpeculationPolicy(int max_tokens, bool adaptive)
    : max_tokens_(max_tokens), adaptive_(adaptive) {
  arms_.push_back(0);
  for (int k = 1; k < max_tokens; k *= 2) arms_.push_back(k);
  if (max_tokens > 0) arms_.push_back(max_tokens);
}

int SpeculationPolicy::bucket_of(int batch) {
  return batch <= 1 ? 0 : std::bit_width(static_cast<unsigned>(batch)) - 1;
}

SpeculationPolicy::Bucket& SpeculationPolicy::bucket(int batch) {
  Bucket& b = buckets_[bucket_of(batch)];
  if (b.arms.empty()) b.arms.resize(arms_.size());
  return b;
}

int SpeculationPolicy::choose(int batch) {
  if (!adaptive_ || max_tokens_ == 0) return max_tokens_;
  Bucket& b = bucket(batch);
  const int64_t step = b.steps++;
  size_t pick = arms_.size();
  // Warm up: each arm a few times, largest k first.
  for (size_t i = arms_.size(); i-- > 0;) {
    if (b.arms[i].samples < kWarmupSamples) {
      pick = i;
      break;
    }
  }
  if (pick == arms_.size() && step % kExploreEvery == kExploreEvery - 1) {
    pick = 0;
    for (size_t i = 1; i < arms_.size(); ++i) {
      if (b.arms[i].last_used < b.arms[pick].last_used) pick = i;
    }
  }
  if (pick == arms_.size()) {
    pick = 0;
    for (size_t i = 1; i < arms_.size(); ++i) {
      if (b.arms[i].rate > b.arms[pick].rate) pick = i;
    }
  }
  b.arms[pick].last_used = step;
  return arms_[pick];
}

void SpeculationPolicy::record(int batch, int k, int64_t tokens, double seconds) {
  if (!adaptive_ || batch <= 0 || seconds <= 0.0) return;
  auto it = std::find(arms_.begin(), arms_.end(), k);
  if (it == arms_.end()) return;
  Arm& arm = bucket(batch).arms[it - arms_.begin()];
  const double r = static_cast<double>(tokens) / seconds / batch;
  arm.rate = arm.samples == 0 ? r : 0.8 * arm.rate + 0.2 * r;
  ++arm.samples;
}

double SpeculationPolicy::rate(int batch, int k) const {
  auto b = buckets_.find(bucket_of(batch));
  auto it = std::find(arms_.begin(), arms_.end(), k);
  if (b == buckets_.end() || it == arms_.end()) return 0.0;
  return b->second.arms[it - arms_.begin()].rate;
}

}  // namespace weft
