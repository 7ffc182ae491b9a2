// How many tokens to speculate each step, so that speculation never makes decoding slower.
//
// Whether guesses pay depends on how often the target accepts them (the proposer, the text, the
// sampling), on what a wider target step costs (almost nothing while decode is memory-bound at
// batch 1, nearly linear once a large batch makes it compute-bound) and on what the proposer
// costs. The policy predicts the decode rate of each candidate k ("arms": 0, then powers of two
// below K, and K) as tokens per step over seconds per step:
//   - tokens per decoding sequence and step, 1 + c * ((1 - a^(k+1)) / (1 - a) - 1), from the
//     per-guess acceptance a (a guess stands with probability a given those before it did) and
//     the fraction c of decoding sequences that got guesses
//     (an n-gram lookup finds none for some), both measured over every speculating step (many
//     samples: steady, unlike the tokens of single steps, which swing between 1 and k + 1);
//   - seconds per step, measured per arm and batch-size bucket (powers of two) as a decayed
//     mean of decode-only steps (a prefill chunk's time says nothing about k).
// Per bucket it keeps a current arm and climbs: the current arm and its two neighbours are each
// timed kWarmupSamples times, the current arm moves to the best predicted of the three after
// every measurement, and a neighbour is re-timed every kExploreEvery steps. So arms far from the
// best are not tried again (a bad k at batch 64 can cost several plain steps), moving from K to
// 0 takes a handful of steps, and the steady cost of exploring is one step in kExploreEvery at a
// neighbouring k (a fourth of that when the neighbour is predicted far behind). A new bucket
// starts from the current arm of the nearest bucket measured before (the middle arm when there is
// none).
//
// A proposer that runs a model falls behind while k = 0 and catches up on its next proposal;
// the engine does not time that first step (its catch-up is not what the arm costs).
//
// With adaptive off, every step speculates K (benchmarks, tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace weft {

class SpeculationPolicy {
 public:
  static constexpr int kWarmupSamples = 2;
  static constexpr int kExploreEvery = 24;
  // Weight of older samples in the decayed means.
  static constexpr double kTimeDecay = 0.8;
  static constexpr double kAcceptanceDecay = 0.98;
  // A neighbour whose predicted rate is below this fraction of the current arm's is explored
  // four times less often.
  static constexpr double kFarBehind = 0.85;

  SpeculationPolicy(int max_tokens, bool adaptive);

  // The k for a step with `batch` decoding sequences (0: do not speculate).
  int choose(int batch);
  // A decode-only step that used `k` over `batch` decoding sequences took `seconds` (the whole
  // step: proposing, the target pass, verification).
  void record_time(int batch, int k, double seconds);
  // A speculating step: of `decoding` decoding sequences, `proposed` got guesses; `accepted`
  // guesses were accepted in all, and `rejected` of those sequences had one rejected (a
  // sequence stops at its first rejection, so the per-guess acceptance a is estimated as
  // accepted / (accepted + rejected), the geometric law's maximum likelihood).
  void record_acceptance(int decoding, int proposed, int64_t accepted, int64_t rejected);

  const std::vector<int>& arms() const { return arms_; }
  int max_tokens() const { return max_tokens_; }
  bool adaptive() const { return adaptive_; }
  // Predicted tokens per second per sequence of arm `k` in `batch`'s bucket (0 when not timed).
  double rate(int batch, int k) const;
  // Predicted tokens per decoding sequence and step with k guesses.
  double tokens_per_step(int k) const;
  // The k `batch`'s bucket uses between explorations (K before it was ever measured).
  int current(int batch) const;
  double acceptance() const { return accepted_ + rejected_ > 0 ? accepted_ / (accepted_ + rejected_) : 0.0; }

 private:
  struct Arm {
    double seconds = 0.0;  // decayed mean step time
    int samples = 0;
  };
  struct Bucket {
    std::vector<Arm> arms;
    size_t current = 0;
    int64_t steps = 0;
    bool explore_lower = true;  // which neighbour the next exploration times
  };
  static int bucket_of(int batch);
  Bucket& bucket(int batch);
  double arm_rate(const Arm& arm, int k) const;

  int max_tokens_;
  bool adaptive_;
  std::vector<int> arms_;
  std::map<int, Bucket> buckets_;
  // Decayed sums over speculating steps.
  double accepted_ = 0.0, rejected_ = 0.0, decoding_ = 0.0, proposed_ = 0.0;
};

}  // namespace weft
