// How many tokens to speculate each step, so that speculation never makes decoding slower.
//
// Whether guesses pay depends on what the engine cannot know in advance: how often the target
// accepts them (the proposer, the text, the sampling), what a wider target step costs (almost
// nothing while decode is memory-bound at batch 1, nearly linear once a large batch makes it
// compute-bound) and what the proposer costs. So the policy measures instead of modelling: for
// each batch-size bucket (powers of two) it keeps a decayed mean of the decode rate, tokens
// emitted per second per decoding sequence, obtained with each candidate k ("arms": 0, then
// powers of two up to K, and K), uses the best, and re-measures the one tried longest ago every
// kExploreEvery decode steps of the bucket. Only steps that decode and prefill nothing are
// measured (a prefill chunk's time says nothing about k).
//
// With adaptive off, every step speculates K (benchmarks, tests).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace weft {

class SpeculationPolicy {
 public:
  static constexpr int kWarmupSamples = 3;
  static constexpr int kExploreEvery = 32;

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

 private:
  struct Arm {
    double rate = 0.0;  // tokens / s / sequence, decayed mean
    int samples = 0;
    int64_t last_used = -1;
  };
  struct Bucket {
    std::vector<Arm> arms;
    int64_t steps = 0;
  };
  static int bucket_of(int batch);
  Bucket& bucket(int batch);

  int max_tokens_;
  bool adaptive_;
  std::vector<int> arms_;
  std::map<int, Bucket> buckets_;
};

}  // namespace weft
