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
//     (an n-gram lookup finds none for some), both measured over every step that chose k > 0
//     (many samples: steady, unlike the tokens of single steps, which swing between 1 and k + 1);
//   - seconds per step, per batch-size bucket (powers of two), from decode-only steps (a prefill
//     chunk's time says nothing about k): the current arm's as a decayed mean robust to the odd
//     slow step (record_time), every other arm's as its cost relative to the current arm, timed
//     side by side: each step of an exploration over the current arm's mean then. Steps grow
//     dearer as the contexts grow, so an absolute time taken a hundred steps ago would flatter
//     the arm not in use; a relative cost does not (when the current arm moves, the relative
//     costs are re-based on the new one). Means, not fastest steps, as the tokens are means. A
//     step where no sequence got guesses (an n-gram lookup that found nothing) is a plain step
//     and timed as one, so a speculating arm's time is that of its steps with guesses, weighed
//     with plain steps by the fraction of steps that had guesses: at batch 1 its steps fall in
//     two modes, and two timed steps of the cheap one would make it look free.
//
// Per bucket it keeps a current arm and climbs: after every measurement the current arm moves to
// the best predicted of itself and its two neighbours, so arms far from the best are never tried
// (a bad k at batch 64 can cost several plain steps). Plain decoding is the reference the policy
// must never fall behind, so it starts there and risks as little as it can:
//   - The first bucket starts at k = 0 and times it and its neighbour kWarmupSamples times each,
//     then climbs while climbing pays. A bucket made later starts at the current arm of the
//     nearest bucket measured before; when that arm speculates, its neighbours are timed at once
//     (a k that paid at batch 1 may be ruinous at batch 64), when it is 0 they wait for the first
//     exploration (plain decoding can only lose the gain it did not try).
//   - Exploration re-times one neighbour afresh (kWarmupSamples steps, its old mean forgotten:
//     it may be hundreds of steps stale), alternately the lower and the upper, every `interval`
//     steps. The interval starts at kExploreEvery and doubles, up to kMaxExploreEvery, each time
//     an exploration leaves the current arm where it was; it starts over when the arm moves. An
//     exploration lasts until its arm has its timed steps (at most kMaxExploreSteps steps), so a
//     step that cannot be timed does not waste it.
//   - Exploring costs what its steps took beyond what the current arm would have taken for the
//     same tokens. A new exploration waits until the bucket's explorations so far, plus the
//     predicted catch-up of this one (below), cost at most kExploreBudget of its decode time.
//     So a workload where speculation does not pay settles at k = 0 with an exploration cost
//     under that fraction, and a workload that changes is noticed within an interval when
//     exploring is cheap (an exploration that moves the arm paid: its cost is forgiven).
//   - Moving to a larger k needs a predicted rate kClimbMargin above the current arm's; moving
//     down needs only one no more than kClimbMargin below it. Near a tie plain decoding wins: its
//     rate is measured, a speculating arm's depends on an acceptance estimate, and without the
//     band a noisy exploration that keeps a speculating arm backs the next one off (a losing arm
//     could stay for hundreds of steps).
//
// A proposer that runs a model falls behind while k = 0 and catches up on its next proposal:
// the tokens of every step it sat out go through the draft at once. The engine reports that step
// with record_catch_up: its time is not what the arm costs, but it is what the exploration cost.
// The cost grows with the steps since the last speculation, so backing off does not make it
// cheaper per step; the policy predicts it from the last catch-up, the warm-up's included
// (seconds per token the proposer ran beyond its arm's step), and the budget above keeps it small
// from the first exploration on (with a draft nearly as costly as the target, explorations from
// k = 0 all but stop).
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
  static constexpr int kMaxExploreEvery = 768;
  static constexpr int kMaxExploreSteps = 5;
  static constexpr double kExploreBudget = 0.03;
  static constexpr double kClimbMargin = 1.03;
  // Weight of older samples in the decayed means.
  static constexpr double kTimeDecay = 0.8;
  static constexpr double kAcceptanceDecay = 0.98;
  static constexpr double kOutlierClip = 1.5;
  // A catch-up of fewer tokens teaches nothing: a step's noise (tens of microseconds) over a few
  // tokens swamps their cost (batch 1's warm-up runs a prompt of a few tokens), and priced that
  // way an exploration from k = 0 would never fit the budget again.
  static constexpr int64_t kMinCatchUpTokens = 64;

  SpeculationPolicy(int max_tokens, bool adaptive);

  // The k for a step with `batch` decoding sequences (0: do not speculate).
  int choose(int batch);
  // A decode-only step that used `k` over `batch` decoding sequences took `seconds` (the whole
  // step: proposing, the target pass, verification). A step that chose k > 0 but where no
  // sequence got guesses is a plain step: the engine reports it with k = 0.
  void record_time(int batch, int k, double seconds);
  // A decode-only step that used `k` while a model proposer caught up on the steps it sat out
  // (k was 0), running `tokens` tokens to do so: charged to the exploration under way, not to
  // the arm. Its time beyond the arm's (timed by the next step of `k`) per token is what the
  // next exploration from k = 0 is predicted to cost per token it catches up: learnt from the
  // warm-up's catch-up too (which also runs the prompts, hence counting tokens, not steps), so
  // that the first exploration is within the budget as well; from catch-ups of at least
  // kMinCatchUpTokens tokens.
  void record_catch_up(int batch, int k, double seconds, int64_t tokens);
  // A step that chose k > 0 (with guesses or not): of `decoding` decoding sequences, `proposed`
  // got guesses; `accepted`
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
  // The k `batch`'s bucket uses between explorations (K when not adaptive, 0 before the bucket
  // was ever used).
  int current(int batch) const;
  // Steps between explorations in `batch`'s bucket now (kExploreEvery before the bucket was ever used).
  int explore_interval(int batch) const;
  double acceptance() const { return accepted_ + rejected_ > 0 ? accepted_ / (accepted_ + rejected_) : 0.0; }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct Arm {
    // The current arm's step time (decayed mean); another's relative cost: its mean step time
    // over the current arm's, timed side by side (1 for the current arm), and its seconds.
    double seconds = 0.0;
    double relative = 1.0;
    double prior = 0.0;  // `relative` when last timed (0: never), while an exploration re-times it
    int samples = 0;
  };
  struct Bucket {
    std::vector<Arm> arms;
    size_t current = 0;
    int64_t steps = 0;
    bool warm_neighbours = true;  // time the current arm's neighbours before exploring
    bool explore_lower = true;    // which neighbour the next exploration times
    int interval = kExploreEvery;
    int64_t next_explore = kExploreEvery;
    size_t exploring = kNone;  // the arm an exploration under way times
    int explore_steps = 0;
    double decode_seconds = 0.0;   // all decode-only steps' time
    double explore_loss = 0.0;     // explorations' time beyond the current arm's for their tokens
    // The last catch-up step not yet learnt from (0: none), its arm and the tokens it ran.
    double catch_up_seconds = 0.0;
    size_t catch_up_arm = kNone;
    int64_t catch_up_tokens = 0;
  };
  static int bucket_of(int batch);
  Bucket& bucket(int batch);
  // Predicted tokens per second per sequence of `arm` (of k guesses) in `b`.
  double arm_rate(const Bucket& b, size_t arm) const;
  // A step of the current arm, or one of another arm compared with the current arm's recent
  // steps.
  void time_current(Bucket& b, double seconds);
  void time_other(Bucket& b, size_t arm, double seconds);
  size_t arm_index(int k) const;
  // Moves the current arm to the best predicted of it and its neighbours.
  void climb(Bucket& b);
  // Ends the exploration under way: backs off when it left the current arm where it was.
  void end_exploration(Bucket& b, bool moved);
  // Adds a decode-only step of `k` to the bucket's time, and to the exploration's loss when one
  // is under way.
  // Returns the loss charged (-1 when no exploration is under way).
  double charge(Bucket& b, int k, double seconds);
  int choose_arm(int batch);

  int max_tokens_;
  bool adaptive_;
  std::vector<int> arms_;
  std::map<int, Bucket> buckets_;
  // Steps in a row that chose k = 0 (any bucket): a model proposer's next catch-up covers them.
  int64_t idle_steps_ = 0;
  // The last catch-up's cost beyond its arm's step, per token it ran.
  double catch_up_per_token_ = 0.0;
  // Decayed sums over speculating steps, and of those steps, and of those where some sequence
  // got guesses.
  double accepted_ = 0.0, rejected_ = 0.0, decoding_ = 0.0, proposed_ = 0.0;
  double speculating_steps_ = 0.0, guessing_steps_ = 0.0;
};

}  // namespace weft
