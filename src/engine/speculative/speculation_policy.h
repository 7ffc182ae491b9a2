// How many tokens to speculate each step, so that speculation never makes decoding slower.
//
// Whether guesses pay depends on what the engine cannot know in advance: how often the target
// accepts them (the proposer, the text, the sampling), what a wider target step costs (almost
// nothing while decode is memory-bound at batch 1, nearly linear once a large batch makes it
// compute-bound) and what the proposer costs. So the policy measures instead of modelling.
//
// Candidate ks ("arms"): 0, then powers of two below K, and K. For each batch-size bucket
// (powers of two) it keeps the decode rate obtained with each arm (tokens emitted per second per
// decoding sequence, as a ratio of decayed sums) and a current arm, and climbs: the current arm and
// its two neighbours are each measured kWarmupSamples times, the current arm moves to the best
// measured of the three after every measurement, and a neighbour is re-measured every
// kExploreEvery steps. So arms far from the best are not tried again (a bad k at batch 64 can
// cost several plain steps), moving from K to 0 takes a handful of steps, and the steady cost of
// exploring is one step in kExploreEvery at a neighbouring k. A new bucket starts from the
// current arm of the nearest bucket measured before (K when there is none). Only steps that
// decode and prefill nothing are measured (a prefill chunk's time says nothing about k).
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
  static constexpr int kWarmupSamples = 3;
  static constexpr int kExploreEvery = 24;
  // Weight of the older samples in each arm's decayed sums (about 1 / (1 - kDecay) samples).
  static constexpr double kDecay = 0.85;

  SpeculationPolicy(int max_tokens, bool adaptive);

  // The k for a step with `batch` decoding sequences (0: do not speculate).
  int choose(int batch);
  // The outcome of a decode-only step that used `k`: `tokens` emitted by its `batch` decoding
  // sequences in `seconds` (the whole step: proposing, the target pass, verification).
  void record(int batch, int k, int64_t tokens, double seconds);

  const std::vector<int>& arms() const { return arms_; }
  int max_tokens() const { return max_tokens_; }
  bool adaptive() const { return adaptive_; }
  // The measured rate of arm `k` in `batch`'s bucket (0 when never measured).
  double rate(int batch, int k) const;
  // The k `batch`'s bucket uses between explorations (K before it was ever measured).
  int current(int batch) const;

 private:
  struct Arm {
    // Decayed sums of tokens per sequence and of seconds: the rate is their ratio (steady under
    // the noise of single step times, unlike a mean of per-step rates).
    double tokens = 0.0;
    double seconds = 0.0;
    int samples = 0;
    double rate() const { return seconds > 0.0 ? tokens / seconds : 0.0; }
  };
  struct Bucket {
    std::vector<Arm> arms;
    size_t current = 0;
    int64_t steps = 0;
    bool explore_lower = true;  // which neighbour the next exploration measures
  };
  static int bucket_of(int batch);
  Bucket& bucket(int batch);

  int max_tokens_;
  bool adaptive_;
  std::vector<int> arms_;
  std::map<int, Bucket> buckets_;
};

}  // namespace weft
