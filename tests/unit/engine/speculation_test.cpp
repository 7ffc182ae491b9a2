// The n-gram proposer's lookup and the speculation policy's choices, as plain data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/speculative/ngram_proposer.h"
#include "engine/speculative/speculation_policy.h"

namespace weft {
namespace {

using Ids = std::vector<int32_t>;

TEST(NgramProposerTest, ProposesWhatFollowedTheMostRecentEarlierOccurrence) {
  // ... 1 2 3 [4 5 6] ... 1 2 3 [7 8] ... 1 2 3 -> the most recent match (7 8 ...) wins.
  const Ids tokens = {1, 2, 3, 4, 5, 6, 9, 1, 2, 3, 7, 8, 9, 1, 2, 3};
  EXPECT_EQ(NgramProposer::lookup(tokens, 1, 3, 2), (Ids{7, 8}));
  EXPECT_EQ(NgramProposer::lookup(tokens, 1, 3, 5), (Ids{7, 8, 9, 1, 2}));
}

TEST(NgramProposerTest, LongerSuffixesComeFirstAndMinNIsHonoured) {
  // The suffix "5 6" occurred once (followed by 7); "6" alone more recently (followed by 0).
  const Ids tokens = {5, 6, 7, 6, 0, 5, 6};
  EXPECT_EQ(NgramProposer::lookup(tokens, 1, 2, 1), (Ids{7}));
  EXPECT_EQ(NgramProposer::lookup(tokens, 1, 1, 1), (Ids{0}));
  EXPECT_EQ(NgramProposer::lookup(tokens, 3, 4, 1), (Ids{}));  // no 3-gram repeats
}

TEST(NgramProposerTest, ProposesOnlyTokensThatExistAndNothingWithoutAMatch) {
  EXPECT_EQ(NgramProposer::lookup(Ids{1, 2, 3, 4}, 1, 4, 3), (Ids{}));
  EXPECT_EQ(NgramProposer::lookup(Ids{7}, 1, 4, 3), (Ids{}));
  // "9 9 9": the suffix 9 9 matches at 0 and only one token follows it.
  EXPECT_EQ(NgramProposer::lookup(Ids{9, 9, 9}, 1, 2, 4), (Ids{9}));
}

TEST(NgramProposerTest, ProposeReadsPromptAndOutputTogether) {
  NgramProposer proposer(1, 3);
  const Ids prompt = {10, 11, 12, 13, 14};
  const Ids output = {10, 11};
  SamplingParams params;
  ProposalRequest r;
  r.prompt_ids = prompt;
  r.output_ids = output;
  r.params = &params;
  r.max_tokens = 2;
  auto proposals = proposer.propose(std::vector<ProposalRequest>{r});
  ASSERT_TRUE(proposals.ok());
  EXPECT_EQ((*proposals)[0].tokens, (Ids{12, 13}));
  EXPECT_TRUE((*proposals)[0].q.empty());
}

TEST(SpeculationPolicyTest, FixedWhenNotAdaptive) {
  SpeculationPolicy policy(5, false);
  for (int batch : {1, 16, 64}) EXPECT_EQ(policy.choose(batch), 5);
  EXPECT_EQ(policy.arms(), (std::vector<int>{0, 1, 2, 4, 5}));
}

// One simulated step of `batch` sequences with k guesses each, accepted with probability `a`
// each (given the ones before), on a step time `seconds`.
void simulate(SpeculationPolicy& policy, int batch, int k, double a, double seconds, std::mt19937& rng) {
  if (k > 0) {
    std::bernoulli_distribution stands(a);
    int64_t accepted = 0, rejected = 0;
    for (int s = 0; s < batch; ++s) {
      int j = 0;
      while (j < k && stands(rng)) ++j;
      accepted += j;
      rejected += j < k;
    }
    policy.record_acceptance(batch, batch, accepted, rejected);
  }
  policy.record_time(batch, k, seconds);
}

TEST(SpeculationPolicyTest, EstimatesThePerGuessAcceptance) {
  SpeculationPolicy policy(4, true);
  std::mt19937 rng(1);
  for (int i = 0; i < 400; ++i) simulate(policy, 8, 4, 0.7, 0.01, rng);
  EXPECT_NEAR(policy.acceptance(), 0.7, 0.05);
  EXPECT_NEAR(policy.tokens_per_step(4), (1 - std::pow(0.7, 5)) / 0.3, 0.15);
  EXPECT_EQ(policy.tokens_per_step(0), 1.0);
}

// Cheap guesses that mostly stand make it settle on K; dear guesses that mostly fail on 0.
// Exploration re-times the neighbouring arm now and then.
TEST(SpeculationPolicyTest, SettlesOnTheArmThatDecodesFastest) {
  for (bool speculation_pays : {false, true}) {
    SpeculationPolicy policy(4, true);
    std::mt19937 rng(7);
    std::vector<int> chosen;
    for (int step = 0; step < 400; ++step) {
      const int k = policy.choose(16);
      const double a = speculation_pays ? 0.8 : 0.3;
      const double seconds = speculation_pays ? 0.010 * (1.0 + 0.1 * k) : 0.010 * (1.0 + 0.5 * k);
      simulate(policy, 16, k, a, seconds, rng);
      if (step >= 100) chosen.push_back(k);
    }
    const int best = speculation_pays ? 4 : 0;
    const long hits = std::count(chosen.begin(), chosen.end(), best);
    EXPECT_GT(hits, static_cast<long>(chosen.size() * 0.9)) << "speculation pays: " << speculation_pays;
    EXPECT_LT(hits, static_cast<long>(chosen.size())) << "never explored";
  }
}

// A batch where every guess costs more than it gains: the policy starts at k = 0, times k = 1
// twice, and stays; the steps spent at k > 0 afterwards are explorations of k = 1 only, and they
// get rarer (the interval doubles each time one confirms k = 0).
TEST(SpeculationPolicyTest, StaysAtZeroAndExploresLessAndLessWhenGuessesDoNotPay) {
  SpeculationPolicy policy(8, true);
  std::mt19937 rng(3);
  int warmup_nonzero = 0, later_nonzero = 0, later_far = 0;
  for (int step = 0; step < 3000; ++step) {
    const int k = policy.choose(64);
    simulate(policy, 64, k, 0.2, 0.01 * (1.0 + 0.3 * k), rng);
    if (step < 10) {
      warmup_nonzero += k > 0;
    } else {
      later_nonzero += k > 0;
      later_far += k > 1;
    }
  }
  EXPECT_EQ(policy.current(64), 0);
  EXPECT_EQ(warmup_nonzero, SpeculationPolicy::kWarmupSamples);
  EXPECT_EQ(later_far, 0);
  // 24, 48, 96, ..., 768, 768, ...: 5 explorations to reach the cap, then one per 768 steps,
  // each kWarmupSamples steps long.
  EXPECT_LE(later_nonzero, SpeculationPolicy::kWarmupSamples * (5 + 3000 / SpeculationPolicy::kMaxExploreEvery));
  EXPECT_GE(later_nonzero, 3);
  EXPECT_EQ(policy.explore_interval(64), SpeculationPolicy::kMaxExploreEvery);
}

// A model proposer's first step after k = 0 is not timed (it catches up on what it skipped).
// Explorations still get their timing from the step after, so when guesses become cheap the
// policy climbs, within the backed-off interval.
TEST(SpeculationPolicyTest, ExplorationsOutlastAnUntimedCatchUpAndNoticeAChange) {
  SpeculationPolicy policy(4, true);
  std::mt19937 rng(11);
  int last_k = 0, since_speculating = 0, changed_at = 2000, climbed_at = -1;
  for (int step = 0; step < 4000; ++step) {
    const int k = policy.choose(16);
    const bool pays = step >= changed_at;
    const double seconds = pays ? 0.010 * (1.0 + 0.05 * k) : 0.010 * (1.0 + 1.5 * k);
    if (k > 0 && last_k == 0) {
      // Catching up (a cheap draft: 1% of a plain step per step it sat out): the acceptance is
      // measured, the time goes to the exploration's cost.
      simulate(policy, 16, k, 0.8, -1.0, rng);
      policy.record_catch_up(16, k, seconds + 0.0001 * since_speculating, 16 * (since_speculating + 1));
    } else {
      simulate(policy, 16, k, 0.8, seconds, rng);
    }
    since_speculating = k > 0 ? 0 : since_speculating + 1;
    last_k = k;
    if (pays && climbed_at < 0 && policy.current(16) == 4) climbed_at = step;
  }
  ASSERT_GE(climbed_at, 0) << "never noticed that speculation pays";
  EXPECT_LE(climbed_at - changed_at, SpeculationPolicy::kMaxExploreEvery + 40);
}

// A draft nearly as costly as the target: each exploration from k = 0 first runs the draft over
// every token since the last one (its catch-up), so exploring less often is no cheaper per step.
// The exploration budget keeps the run within a few percent of plain decoding.
TEST(SpeculationPolicyTest, CatchUpsCostAtMostTheExplorationBudget) {
  SpeculationPolicy policy(4, true);
  std::mt19937 rng(17);
  const double plain = 0.010;
  double total = 0.0;
  int last_k = 0, since_speculating = 0;
  const int steps = 3000;
  for (int step = 0; step < steps; ++step) {
    const int k = policy.choose(16);
    const double seconds = plain * (1.0 + 0.7 * k);
    if (k > 0 && last_k == 0) {
      const double catch_up = seconds + 0.3 * plain * since_speculating;
      simulate(policy, 16, k, 0.5, -1.0, rng);
      policy.record_catch_up(16, k, catch_up, 16 * (since_speculating + 1));
      total += catch_up;
    } else {
      simulate(policy, 16, k, 0.5, seconds, rng);
      total += seconds;
    }
    since_speculating = k > 0 ? 0 : since_speculating + 1;
    last_k = k;
  }
  EXPECT_EQ(policy.current(16), 0);
  // Warm-up (a few steps) plus explorations within the budget.
  EXPECT_LE(total, (1.0 + SpeculationPolicy::kExploreBudget) * plain * steps + 10 * plain);
}

// A short run at batch 64 where a draft's guesses do not pay (the default pair at large batch):
// the warm-up's catch-up, which also runs the prompts, teaches what catching up costs per token,
// so even the first exploration from k = 0 waits for the budget, and the run after the warm-up
// stays within it of plain decoding. (Learning from explorations only, the first one came
// unpriced after kExploreEvery steps: a 20-step catch-up plus its steps cost about 6% of a
// 128-step run.)
TEST(SpeculationPolicyTest, TheWarmUpPricesTheFirstCatchUp) {
  SpeculationPolicy policy(4, true);
  std::mt19937 rng(23);
  const double plain = 0.0035, per_token = 6e-6;
  const int batch = 64, prompt = 10;
  double after_warmup = 0.0;
  int last_k = 0, since_speculating = 0, plain_steps_after = 0;
  bool warm = false;
  for (int step = 0; step < 130; ++step) {  // one round of speculative_bench
    const int k = policy.choose(batch);
    const double seconds = plain * (1.0 + 1.1 * k);
    double took = seconds;
    if (k > 0 && last_k == 0) {
      // The draft runs every token it has not seen: the prompts the first time, then the steps
      // it sat out.
      const int64_t tokens = batch * (since_speculating + 1 + (step < 10 ? prompt : 0));
      took = seconds + per_token * static_cast<double>(tokens);
      simulate(policy, batch, k, 0.5, -1.0, rng);
      policy.record_catch_up(batch, k, took, tokens);
    } else {
      simulate(policy, batch, k, 0.5, seconds, rng);
    }
    if (warm) {
      after_warmup += took;
      ++plain_steps_after;
    }
    warm = warm || step >= 2 * SpeculationPolicy::kWarmupSamples + 1;
    since_speculating = k > 0 ? 0 : since_speculating + 1;
    last_k = k;
  }
  EXPECT_EQ(policy.current(batch), 0);
  EXPECT_LE(after_warmup, (1.0 + SpeculationPolicy::kExploreBudget) * plain * plain_steps_after);
}

// A bucket met later starts at the nearest bucket's arm. At k = 0 it waits for the first
// exploration rather than timing its neighbours at once; at k > 0 it times them at once.
TEST(SpeculationPolicyTest, ALaterBucketStartsWhereTheNearestStands) {
  SpeculationPolicy policy(4, true);
  std::mt19937 rng(13);
  for (int step = 0; step < 200; ++step) {
    const int k = policy.choose(16);
    simulate(policy, 16, k, 0.3, 0.010 * (1.0 + 0.5 * k), rng);
  }
  ASSERT_EQ(policy.current(16), 0);
  int nonzero = 0;
  for (int step = 0; step < SpeculationPolicy::kExploreEvery; ++step) {
    const int k = policy.choose(8);
    nonzero += k > 0;
    simulate(policy, 8, k, 0.3, 0.005 * (1.0 + 0.5 * k), rng);
  }
  EXPECT_EQ(nonzero, 0);

  SpeculationPolicy paying(4, true);
  for (int step = 0; step < 200; ++step) {
    const int k = paying.choose(1);
    simulate(paying, 1, k, 0.9, 0.001 * (1.0 + 0.02 * k), rng);
  }
  ASSERT_EQ(paying.current(1), 4);
  // At batch 64 a guess doubles the step: the inherited K is timed, then its neighbour, and the
  // climb goes down at once.
  int steps_to_zero = -1;
  for (int step = 0; step < 40 && steps_to_zero < 0; ++step) {
    const int k = paying.choose(64);
    simulate(paying, 64, k, 0.9, 0.02 * (1.0 + k), rng);
    if (paying.current(64) == 0) steps_to_zero = step;
  }
  ASSERT_GE(steps_to_zero, 0);
  EXPECT_LE(steps_to_zero, 12);
}

TEST(SpeculationPolicyTest, BatchSizesLearnApart) {
  SpeculationPolicy policy(2, true);
  std::mt19937 rng(5);
  // Batch 1: a guess costs 10% more time; batch 64: it doubles the step.
  for (int step = 0; step < 300; ++step) {
    const int k1 = policy.choose(1);
    simulate(policy, 1, k1, 0.8, 0.001 * (1 + 0.1 * k1), rng);
    const int k64 = policy.choose(64);
    simulate(policy, 64, k64, 0.8, 0.01 * (1 + k64), rng);
  }
  EXPECT_GT(policy.rate(1, 2), policy.rate(1, 0));
  // Batch 64 started at batch 1's arm then, k = 0, and explored only k = 1.
  EXPECT_GT(policy.rate(64, 1), 0.0);
  EXPECT_LT(policy.rate(64, 1), policy.rate(64, 0));
  int k1_count = 0, k64_count = 0;
  for (int i = 0; i < 20; ++i) {
    k1_count += policy.choose(1) == 2;
    k64_count += policy.choose(64) == 0;
  }
  EXPECT_GE(k1_count, 18);
  EXPECT_GE(k64_count, 18);
}

// Near a tie, on a real machine: step times grow as the contexts do (attention reads every
// earlier token) and carry noise that only adds (interrupts, other processes; here a mean of 10%
// of the step). An arm timed during an exploration must not look cheap later only because the
// steps grew dearer since, nor a fresh arm's fastest step against the current arm's mean. Each
// guess costs `cost` of a plain step and stands half the time, so one guess makes 1.5 tokens for
// 1 + cost of the time: at 0.55 speculating is 3% slower, and the run (to the same output) may take
// at most 2% longer than plain decoding would; at 0.35 it is 11% faster, and the run takes at most
// 0.93 of plain's time (0.90 at best).
TEST(SpeculationPolicyTest, GrowingNoisyStepsNearATieDoNotMisleadIt) {
  for (const auto& [cost, bound] : {std::pair{0.55, 1.02}, std::pair{0.35, 0.93}}) {
    for (uint32_t seed : {21u, 22u, 23u, 24u, 25u}) {
      SpeculationPolicy policy(4, true);
      std::mt19937 rng(seed);
      std::exponential_distribution<double> noise(1.0 / 0.10);
      std::bernoulli_distribution stands(0.5);
      double position = 0.0, total = 0.0, plain = 0.0;
      int speculating = 0, steps = 0;
      while (position < 3000.0) {
        const int k = policy.choose(32);
        const double base = 0.010 * (1.0 + position / 1000.0);
        const double seconds = base * (1.0 + cost * k) * (1.0 + noise(rng));
        const double before = position;
        position += 1.0;
        if (k > 0) {
          int64_t accepted = 0, rejected = 0;
          for (int s = 0; s < 32; ++s) {
            int j = 0;
            while (j < k && stands(rng)) ++j;
            accepted += j;
            rejected += j < k;
          }
          policy.record_acceptance(32, 32, accepted, rejected);
          position += static_cast<double>(accepted) / 32.0;
          ++speculating;
        }
        policy.record_time(32, k, seconds);
        total += seconds;
        // What plain decoding spends on the same tokens, its mean noise included.
        plain += 0.010 * 1.10 * ((position - before) + (position * position - before * before) / 2000.0);
        ++steps;
      }
      EXPECT_LE(total, bound * plain) << "cost " << cost << ", seed " << seed << ": speculated in " << speculating
                                      << " of " << steps << " steps";
    }
  }
}

// An n-gram lookup at batch 1 finds a match for half the steps; a step without one is a plain
// step (the engine times it as k = 0), so a speculating arm's steps fall in two modes. Each guess
// costs half a plain step and stands a quarter of the time: speculating never pays, and two
// timed steps of the plain mode would make every k look free. The run stays within 3% of plain.
TEST(SpeculationPolicyTest, StepsWithoutGuessesDoNotMakeAnArmLookCheap) {
  for (uint32_t seed : {31u, 32u, 33u, 34u, 35u}) {
    SpeculationPolicy policy(4, true);
    std::mt19937 rng(seed);
    std::bernoulli_distribution matches(0.5), stands(0.25);
    double total = 0.0, plain = 0.0;
    int speculating = 0;
    const int steps = 2000;
    for (int step = 0; step < steps; ++step) {
      const int k = policy.choose(1);
      double seconds = 0.001;
      int64_t tokens = 1;
      if (k > 0) {
        const bool proposed = matches(rng);
        int64_t accepted = 0;
        while (proposed && accepted < k && stands(rng)) ++accepted;
        policy.record_acceptance(1, proposed ? 1 : 0, accepted, proposed && accepted < k ? 1 : 0);
        if (proposed) seconds *= 1.0 + 0.5 * k;
        tokens += accepted;
        ++speculating;
      }
      policy.record_time(1, seconds > 0.001 ? k : 0, seconds);
      total += seconds;
      plain += 0.001 * static_cast<double>(tokens);
    }
    EXPECT_LE(total, 1.03 * plain) << "seed " << seed << ": speculated in " << speculating << " of " << steps
                                   << " steps";
  }
}

}  // namespace
}  // namespace weft
