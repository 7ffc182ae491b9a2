#include "engine/speculative/speculation_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>

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
  const int key = bucket_of(batch);
  auto it = buckets_.find(key);
  if (it != buckets_.end()) return it->second;
  Bucket b;
  b.arms.resize(arms_.size());
  b.current = arms_.size() / 2;
  // Start where the nearest bucket measured so far stands.
  int nearest = -1;
  for (const auto& [other, ob] : buckets_) {
    if (nearest < 0 || std::abs(other - key) < std::abs(nearest - key)) nearest = other;
  }
  if (nearest >= 0) b.current = buckets_.at(nearest).current;
  return buckets_.emplace(key, std::move(b)).first->second;
}

double SpeculationPolicy::tokens_per_step(int k) const {
  if (k == 0) return 1.0;
  // Before any guess was verified, assume they pay, so that speculation gets measured at all.
  const double a = accepted_ + rejected_ > 0 ? std::clamp(acceptance(), 0.0, 0.999) : 0.7;
  const double c = decoding_ > 0 ? std::clamp(proposed_ / decoding_, 0.0, 1.0) : 1.0;
  const double with_guesses = (1.0 - std::pow(a, k + 1)) / (1.0 - a);
  return 1.0 + c * (with_guesses - 1.0);
}

double SpeculationPolicy::arm_rate(const Arm& arm, int k) const {
  return arm.samples > 0 && arm.seconds > 0.0 ? tokens_per_step(k) / arm.seconds : 0.0;
}

int SpeculationPolicy::choose(int batch) {
  if (!adaptive_ || max_tokens_ == 0) return max_tokens_;
  Bucket& b = bucket(batch);
  const int64_t step = b.steps++;
  const size_t c = b.current;
  const size_t lower = c > 0 ? c - 1 : c;
  const size_t upper = c + 1 < arms_.size() ? c + 1 : c;
  for (size_t arm : {c, lower, upper}) {
    if (b.arms[arm].samples < kWarmupSamples) return arms_[arm];
  }
  if (step % kExploreEvery == kExploreEvery - 1) {
    b.explore_lower = !b.explore_lower;
    size_t arm = b.explore_lower ? lower : upper;
    if (arm == c) arm = b.explore_lower ? upper : lower;
    // A neighbour predicted well below the current arm is re-timed only every fourth time.
    const bool far_behind = arm_rate(b.arms[arm], arms_[arm]) < kFarBehind * arm_rate(b.arms[c], arms_[c]);
    if (!far_behind || step % (4 * kExploreEvery) == 4 * kExploreEvery - 1) return arms_[arm];
  }
  return arms_[c];
}

void SpeculationPolicy::record_time(int batch, int k, double seconds) {
  if (!adaptive_ || batch <= 0 || seconds <= 0.0) return;
  auto it = std::find(arms_.begin(), arms_.end(), k);
  if (it == arms_.end()) return;
  Bucket& b = bucket(batch);
  Arm& arm = b.arms[it - arms_.begin()];
  arm.seconds = arm.samples == 0 ? seconds : kTimeDecay * arm.seconds + (1.0 - kTimeDecay) * seconds;
  ++arm.samples;
  // Climb: the best predicted of the current arm and its neighbours.
  const size_t c = b.current;
  size_t best = c;
  for (size_t n : {c > 0 ? c - 1 : c, c + 1 < arms_.size() ? c + 1 : c}) {
    if (arm_rate(b.arms[n], arms_[n]) > arm_rate(b.arms[best], arms_[best])) best = n;
  }
  b.current = best;
}

void SpeculationPolicy::record_acceptance(int decoding, int proposed, int64_t accepted, int64_t rejected) {
  accepted_ = kAcceptanceDecay * accepted_ + static_cast<double>(accepted);
  rejected_ = kAcceptanceDecay * rejected_ + static_cast<double>(rejected);
  decoding_ = kAcceptanceDecay * decoding_ + decoding;
  proposed_ = kAcceptanceDecay * proposed_ + proposed;
}

double SpeculationPolicy::rate(int batch, int k) const {
  auto b = buckets_.find(bucket_of(batch));
  auto it = std::find(arms_.begin(), arms_.end(), k);
  if (b == buckets_.end() || it == arms_.end()) return 0.0;
  return arm_rate(b->second.arms[it - arms_.begin()], k);
}

int SpeculationPolicy::current(int batch) const {
  auto b = buckets_.find(bucket_of(batch));
  return b == buckets_.end() ? max_tokens_ : arms_[b->second.current];
}

}  // namespace weft
