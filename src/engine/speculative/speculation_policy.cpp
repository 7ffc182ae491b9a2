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

double SpeculationPolicy::arm_rate(const Bucket& b, size_t arm) const {
  const Arm& a = b.arms[arm];
  const Arm& cur = b.arms[b.current];
  if (a.samples == 0 || cur.samples == 0 || cur.seconds <= 0.0) return 0.0;
  // Every arm's time as the current arm's now, times what it cost against it when timed:
  // arms timed while the contexts were shorter do not look cheap for it. A speculating arm's
  // steps without guesses are plain steps (timed as k = 0), the others its own.
  double relative = a.relative;
  if (arms_[arm] > 0 && b.arms[0].samples > 0 && speculating_steps_ > 0.0) {
    const double with_guesses = std::clamp(guessing_steps_ / speculating_steps_, 0.0, 1.0);
    relative = with_guesses * a.relative + (1.0 - with_guesses) * b.arms[0].relative;
  }
  return tokens_per_step(arms_[arm]) / (relative * cur.seconds);
}

int SpeculationPolicy::choose(int batch) {
  if (!adaptive_ || max_tokens_ == 0) return max_tokens_;
  const int k = choose_arm(batch);
  idle_steps_ = k == 0 ? idle_steps_ + 1 : 0;
  return k;
}

int SpeculationPolicy::choose_arm(int batch) {
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
  // From k = 0 a model proposer first catches up on every step since it last ran.
  const double catch_up = arms_[c] == 0 ? catch_up_per_token_ * static_cast<double>(idle_steps_) * batch : 0.0;
  if (step >= b.next_explore && b.explore_loss + catch_up <= kExploreBudget * b.decode_seconds) {
    b.explore_lower = !b.explore_lower;
    size_t arm = b.explore_lower ? lower : upper;
    if (arm == c) arm = b.explore_lower ? upper : lower;
    // Timed afresh (the workload may have changed since), its last cost kept to bound outliers.
    Arm& explored = b.arms[arm];
    explored = Arm{.prior = explored.samples > 0 ? explored.relative : explored.prior};
    b.exploring = arm;
    b.explore_steps = 1;
    return arms_[arm];
  }
  return arms_[c];
}

void SpeculationPolicy::climb(Bucket& b) {
  const size_t c = b.current;
  size_t best = c;
  double best_rate = arm_rate(b, c);
  for (size_t n : {c > 0 ? c - 1 : c, c + 1 < arms_.size() ? c + 1 : c}) {
    const double margin = n > c ? kClimbMargin : 1.0 / kClimbMargin;
    const double r = arm_rate(b, n);
    if (r > margin * best_rate) {
      best = n;
      best_rate = r;
    }
  }
  if (best == c) return;
  // The new current arm is the reference: every relative cost is re-based on it.
  const double base = b.arms[best].relative;
  for (Arm& arm : b.arms) {
    arm.relative /= base;
    arm.prior /= base;
  }
  b.current = best;
}

void SpeculationPolicy::time_current(Bucket& b, double seconds) {
  Arm& arm = b.arms[b.current];
  // Step-time noise only ever adds (an interrupt, another process): the warm-up keeps its fastest
  // sample, and later samples count at most kOutlierClip times the mean, so one slow step cannot
  // make an arm look several times dearer (a real change still moves the mean within a few
  // samples).
  if (arm.samples == 0) {
    arm.seconds = seconds;
  } else if (arm.samples < kWarmupSamples) {
    arm.seconds = std::min(arm.seconds, seconds);
  } else {
    arm.seconds = kTimeDecay * arm.seconds + (1.0 - kTimeDecay) * std::min(seconds, kOutlierClip * arm.seconds);
  }
  arm.relative = 1.0;
  ++arm.samples;
}

void SpeculationPolicy::time_other(Bucket& b, size_t index, double seconds) {
  Arm& arm = b.arms[index];
  // Against the current arm's time now (its decayed mean is a few steps long): side by side, as
  // both drift while the contexts grow. A mean of the exploration's steps, not its fastest: the
  // tokens it is credited with are a mean too, and noise only adds, so a fastest step against the
  // current arm's mean would flatter it. A step more than kOutlierClip times what the arm cost
  // when last timed counts that much.
  const double reference = b.arms[b.current].seconds;
  if (reference <= 0.0) return;
  if (arm.prior > 0.0) seconds = std::min(seconds, kOutlierClip * arm.prior * reference);
  const double n = arm.samples;
  arm.seconds = (arm.seconds * n + seconds) / (n + 1.0);
  arm.relative = (arm.relative * n + seconds / reference) / (n + 1.0);
  ++arm.samples;
}

double SpeculationPolicy::charge(Bucket& b, int k, double seconds) {
  b.decode_seconds += seconds;
  if (b.exploring == kNone) return -1.0;
  // What the current arm would have taken for the tokens this step made.
  const Arm& cur = b.arms[b.current];
  const double cur_tokens = tokens_per_step(arms_[b.current]);
  if (cur.samples == 0 || cur_tokens <= 0.0) return -1.0;
  const double loss = std::max(0.0, seconds - tokens_per_step(k) * cur.seconds / cur_tokens);
  b.explore_loss += loss;
  return loss;
}

void SpeculationPolicy::record_catch_up(int batch, int k, double seconds, int64_t tokens) {
  const size_t index = arm_index(k);
  if (!adaptive_ || batch <= 0 || seconds <= 0.0 || index == kNone) return;
  Bucket& b = bucket(batch);
  charge(b, k, seconds);
  // Learnt once the arm's own step time is known (record_time).
  if (tokens >= kMinCatchUpTokens) {
    b.catch_up_seconds = seconds;
    b.catch_up_arm = index;
    b.catch_up_tokens = tokens;
  }
}

void SpeculationPolicy::end_exploration(Bucket& b, bool moved) {
  b.exploring = kNone;
  if (moved) {  // it paid: its cost does not count against the next
    b.interval = kExploreEvery;
    b.warm_neighbours = true;
    b.explore_loss = 0.0;
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
  charge(b, k, seconds);
  if (index == b.current) {
    time_current(b, seconds);
  } else {
    time_other(b, index, seconds);
  }
  const Arm& arm = b.arms[index];
  if (b.catch_up_seconds > 0.0 && b.catch_up_arm == index) {
    catch_up_per_token_ = std::max(0.0, b.catch_up_seconds - arm.seconds) / static_cast<double>(b.catch_up_tokens);
    b.catch_up_seconds = 0.0;
  }
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
  speculating_steps_ = kAcceptanceDecay * speculating_steps_ + 1.0;
  guessing_steps_ = kAcceptanceDecay * guessing_steps_ + (proposed > 0 ? 1.0 : 0.0);
}

double SpeculationPolicy::rate(int batch, int k) const {
  auto b = buckets_.find(bucket_of(batch));
  const size_t index = arm_index(k);
  if (b == buckets_.end() || index == kNone) return 0.0;
  return arm_rate(b->second, index);
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
