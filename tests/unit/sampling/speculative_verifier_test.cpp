// The rejection-sampling rule of speculative decoding (sampling/speculative_verifier.h):
// deterministic cases under greedy targets, and chi-square tests that the first emitted token,
// whatever the proposer's distribution, follows the target's distribution exactly.
#include "sampling/speculative_verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "chi_square.h"
#include "sampling/rng.h"

namespace weft {
namespace {

using testing::chi_square;
using testing::chi_square_critical;

TokenDistribution point(int32_t id) { return {{id}, {1.0f}}; }

TokenDistribution dense(const std::vector<float>& probs) {
  TokenDistribution d;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] > 0.0f) {
      d.ids.push_back(static_cast<int32_t>(i));
      d.probs.push_back(probs[i]);
    }
  }
  return d;
}

TEST(SpeculativeVerifierTest, GreedyTargetKeepsGuessesWhileTheyAreTheArgmax) {
  const std::vector<TokenDistribution> target = {point(5), point(7), point(9), point(11)};
  const std::vector<int32_t> all_right = {5, 7, 9};
  SpeculativeDraw draw;
  draw.target = target;
  draw.proposed = all_right;
  SpeculativeOutcome out = verify_speculation(draw);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{5, 7, 9, 11}));  // all kept, then the bonus
  EXPECT_EQ(out.num_accepted, 3);

  const std::vector<int32_t> second_wrong = {5, 8, 9};
  draw.proposed = second_wrong;
  out = verify_speculation(draw);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{5, 7}));  // the argmax replaces the first miss
  EXPECT_EQ(out.num_accepted, 1);

  const std::vector<int32_t> first_wrong = {4, 7, 9};
  draw.proposed = first_wrong;
  out = verify_speculation(draw);
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{5}));
  EXPECT_EQ(out.num_accepted, 0);
}

TEST(SpeculativeVerifierTest, AGuessTheProposerCouldNotDrawIsRejected) {
  const std::vector<TokenDistribution> target = {dense({0.5f, 0.5f}), dense({0.5f, 0.5f})};
  const std::vector<TokenDistribution> proposer = {dense({1.0f, 0.0f})};
  const std::vector<int32_t> guess = {1};  // q(1) = 0
  SpeculativeDraw draw;
  draw.target = target;
  draw.proposed = guess;
  draw.proposer = proposer;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    draw.seed = seed;
    const SpeculativeOutcome out = verify_speculation(draw);
    EXPECT_EQ(out.num_accepted, 0);
    EXPECT_EQ(out.tokens, (std::vector<int32_t>{1}));  // residual max(0, p - q) is all on 1
  }
}

TEST(SpeculativeVerifierTest, DrawTokenIsTheInverseCdf) {
  const TokenDistribution d = dense({0.25f, 0.0f, 0.5f, 0.25f});
  EXPECT_EQ(draw_token(d, 0.0), 0);
  EXPECT_EQ(draw_token(d, 0.2499), 0);
  EXPECT_EQ(draw_token(d, 0.2501), 2);
  EXPECT_EQ(draw_token(d, 0.7501), 3);
  EXPECT_EQ(draw_token(d, 0.99999), 3);
}

// Runs the verifier over many seeds with the guess drawn from q (as a draft model does), and
// checks the first emitted token against p with Pearson's chi-square at alpha = 1e-3.
void expect_first_token_follows_target(const std::vector<float>& p, const std::vector<float>& q,
                                       bool point_mass_proposer) {
  const int trials = 40000;
  const TokenDistribution target = dense(p);
  const TokenDistribution proposer = dense(q);
  std::vector<double> observed(p.size(), 0.0);
  std::vector<double> accepted(1, 0.0);
  for (int t = 0; t < trials; ++t) {
    const uint64_t seed = 0x9e3779b97f4a7c15ULL * (t + 1);
    // The guess: from q with the draft's stream (uniform(3)), or always q's most likely token.
    int32_t guess = point_mass_proposer ? proposer.ids[std::max_element(proposer.probs.begin(), proposer.probs.end()) -
                                                        proposer.probs.begin()]
                                        : draw_token(proposer, SamplingRng(seed, 0, 0).uniform(3));
    const std::vector<TokenDistribution> targets = {target, target};
    const std::vector<TokenDistribution> proposers = {proposer};
    const std::vector<int32_t> guesses = {guess};
    SpeculativeDraw draw;
    draw.target = targets;
    draw.proposed = guesses;
    if (!point_mass_proposer) draw.proposer = proposers;
    draw.seed = seed;
    const SpeculativeOutcome out = verify_speculation(draw);
    observed[out.tokens.front()] += 1.0;
    accepted[0] += out.num_accepted;
  }
  std::vector<double> expected;
  for (float x : p) expected.push_back(x * trials);
  const auto chi = chi_square(observed, expected);
  EXPECT_LT(chi.statistic, chi_square_critical(chi.df, 1e-3)) << "df " << chi.df;
  // Acceptance is sum_x min(p, q) for a sampled guess, p(argmax q) for a point mass.
  double expected_acceptance = 0.0;
  if (point_mass_proposer) {
    expected_acceptance = p[std::max_element(q.begin(), q.end()) - q.begin()];
  } else {
    for (size_t i = 0; i < p.size(); ++i) expected_acceptance += std::min(p[i], q[i]);
  }
  EXPECT_NEAR(accepted[0] / trials, expected_acceptance, 0.015);
}

TEST(SpeculativeVerifierTest, SampledGuessesGiveTheTargetDistribution) {
  expect_first_token_follows_target({0.4f, 0.3f, 0.2f, 0.1f, 0.0f}, {0.1f, 0.1f, 0.3f, 0.3f, 0.2f}, false);
  expect_first_token_follows_target({0.05f, 0.05f, 0.9f}, {0.9f, 0.05f, 0.05f}, false);
  expect_first_token_follows_target({0.25f, 0.25f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.25f, 0.25f}, false);
}

TEST(SpeculativeVerifierTest, DeterministicGuessesGiveTheTargetDistribution) {
  expect_first_token_follows_target({0.4f, 0.3f, 0.2f, 0.1f}, {0.0f, 0.0f, 1.0f, 0.0f}, true);
  expect_first_token_follows_target({0.7f, 0.2f, 0.1f}, {1.0f, 0.0f, 0.0f}, true);
}

// A wrong acceptance rule must be caught: accepting every guess gives q, not p.
TEST(SpeculativeVerifierTest, TheChiSquareCheckRejectsTheProposersDistribution) {
  const std::vector<float> p = {0.4f, 0.3f, 0.2f, 0.1f};
  const std::vector<float> q = {0.1f, 0.2f, 0.3f, 0.4f};
  const int trials = 40000;
  std::vector<double> observed(p.size(), 0.0);
  for (int t = 0; t < trials; ++t) {
    observed[draw_token(dense(q), SamplingRng(t, 0, 0).uniform(3))] += 1.0;
  }
  std::vector<double> expected;
  for (float x : p) expected.push_back(x * trials);
  const auto chi = chi_square(observed, expected);
  EXPECT_GT(chi.statistic, chi_square_critical(chi.df, 1e-3));
}

}  // namespace
}  // namespace weft
