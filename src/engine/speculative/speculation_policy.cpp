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

size_t SpeculationPolicy::arm_index(int k) const {
  auto it = std::find(arms_.begin(), arms_.end(), k);
  return it == arms_.end() ? kNone : static_cast<size_t>(it - arms_.begin());
}

SpeculationPolicy::Bucket& SpeculationPolicy::bucket(int batch) {
  const int key = bucket_of(batch);
  auto it = buckets_.find(key);
  if (it != buckets_.end()) return it->second;
  Bucket b;
  b.arms.resize(arms_.size());
  // The first bucket starts from plain decoding; a later one where the nearest bucket measured
  // so far stands.
  int nearest = -1;
  for (const auto& [other, ob] : buckets_) {
    if (nearest < 0 || std::abs(other - key) < std::abs(nearest - key)) nearest = other;
  }
  if (nearest >= 0) {
    b.current = buckets_.at(nearest).current;
    b.warm_neighbours = arms_[b.current] > 0;
  }
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
  if (b.exploring != kNone) {
    if (b.explore_steps++ < kMaxExploreSteps) return arms_[b.exploring];
    end_exploration(b, /*moved=*/false);  // no step of it could be timed
  }
  const size_t c = b.current;
  const size_t lower = c > 0 ? c - 1 : c;
  const size_t upper = c + 1 < arms_.size() ? c + 1 : c;
  if (b.arms[c].samples < kWarmupSamples) return arms_[c];
  if (b.warm_neighbours) {
    for (size_t arm : {lower, upper}) {
      if (b.arms[arm].samples < kWarmupSamples) return arms_[arm];
    }
  }
  if (step >= b.next_explore) {
    b.explore_lower = !b.explore_lower;
    size_t arm = b.explore_lower ? lower : upper;
    if (arm == c) arm = b.explore_lower ? upper : lower;
    // Measured afresh: its old mean may be many steps stale.
    b.arms[arm] = Arm{};
    b.exploring = arm;
    b.explore_steps = 1;
    return arms_[arm];
  }
  return arms_[c];
}

void SpeculationPolicy::climb(Bucket& b) {
  const size_t c = b.current;
  size_t best = c;
  for (size_t n : {c > 0 ? c - 1 : c, c + 1 < arms_.size() ? c + 1 : c}) {
    if (arm_rate(b.arms[n], arms_[n]) > arm_rate(b.arms[best], arms_[best])) best = n;
  }
  b.current = best;
}

void SpeculationPolicy::end_exploration(Bucket& b, bool moved) {
  b.exploring = kNone;
  if (moved) {
    b.interval = kExploreEvery;
    b.warm_neighbours = true;
  } else {
    b.interval = std::min(2 * b.interval, kMaxExploreEvery);
  }
  b.next_explore = b.steps + b.interval;
}

void SpeculationPolicy::record_time(int batch, int k, double seconds) {
  if (!adaptive_ || batch <= 0 || seconds <= 0.0) return;
  const size_t index = arm_index(k);
  if (index == kNone) return;
  Bucket& b = bucket(batch);
  Arm& arm = b.arms[index];
  arm.seconds = arm.samples == 0 ? seconds : kTimeDecay * arm.seconds + (1.0 - kTimeDecay) * seconds;
  ++arm.samples;
  const size_t before = b.current;
  climb(b);
  const bool moved = b.current != before;
  if (b.exploring == index && (moved || arm.samples >= kWarmupSamples)) {
    end_exploration(b, moved);
  } else if (moved) {
    b.interval = kExploreEvery;
    b.next_explore = b.steps + b.interval;
  }
}

void SpeculationPolicy::record_acceptance(int decoding, int proposed, int64_t accepted, int64_t rejected) {
  accepted_ = kAcceptanceDecay * accepted_ + static_cast<double>(accepted);
  rejected_ = kAcceptanceDecay * rejected_ + static_cast<double>(rejected);
  decoding_ = kAcceptanceDecay * decoding_ + decoding;
  proposed_ = kAcceptanceDecay * proposed_ + proposed;
}

double SpeculationPolicy::rate(int batch, int k) const {
  auto b = buckets_.find(bucket_of(batch));
  const size_t index = arm_index(k);
  if (b == buckets_.end() || index == kNone) return 0.0;
  return arm_rate(b->second.arms[index], k);
}

int SpeculationPolicy::current(int batch) const {
  if (!adaptive_) return max_tokens_;
  auto b = buckets_.find(bucket_of(batch));
  return b == buckets_.end() ? 0 : arms_[b->second.current];
}

int SpeculationPolicy::explore_interval(int batch) const {
  auto b = buckets_.find(bucket_of(batch));
  return b == buckets_.end() ? kExploreEvery : b->second.interval;
}

}  // namespace weft
