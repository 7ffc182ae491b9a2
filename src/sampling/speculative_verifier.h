// Speculative decoding's verification step (Leviathan et al., ICML 2023; Chen et al., 2023): a
// proposer guessed k tokens d_1..d_k after a sequence, the target model scored all k + 1
// positions in one pass, and this decides which guesses stand so that the tokens emitted follow
// the target's distribution exactly, whatever the proposer did.
//
// For j = 1..k, with p_j the target's distribution at the position of d_j (Sampler::
// distributions over row j - 1, given d_1..d_{j-1}) and q_j the distribution d_j was drawn from:
//   accept d_j with probability min(1, p_j(d_j) / q_j(d_j));
//   on the first rejection, emit one token drawn from the residual max(0, p_j - q_j),
//   normalised, and stop;
// when all k are accepted, emit a bonus token drawn from p_{k+1} (the last row). A proposer that
// guesses deterministically (n-gram lookup, a greedy draft) has point masses q_j = [d_j]; under a
// greedy target (p_j a point mass at the argmax) this is "accept while d_j is the argmax, then
// emit the argmax": token for token what plain greedy decoding gives.
//
// The engine uses this rule for guesses drawn from a distribution (a draft model sampling). It
// verifies point-mass guesses by sampling each row as plain decoding would and keeping guesses
// while they equal those draws: the same law (d stands with probability p(d), a miss is a draw
// from p without d), with the plain sampler's own randomness, so the tokens emitted are exactly
// the non-speculative ones (Engine::verify).
//
// Randomness is counter-based (rng.h), keyed like the sampler's by (seed, sequence index, step),
// the step being the number of tokens generated before the position: the acceptance test draws
// uniform(1), the residual draw uniform(2), the bonus draw uniform(0) (as the plain sampler
// does); a draft model draws its proposals with uniform(3). So a seeded request reproduces.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"

namespace weft {

struct SpeculativeDraw {
  std::span<const TokenDistribution> target;    // p_1..p_{k+1}: k + 1 distributions
  std::span<const int32_t> proposed;            // d_1..d_k
  std::span<const TokenDistribution> proposer;  // q_1..q_k, or empty: every d_j a point mass
  uint64_t seed = 0;
  uint32_t seq_index = 0;
  uint64_t first_step = 0;  // tokens the sequence had generated before d_1
};

struct SpeculativeOutcome {
  std::vector<int32_t> tokens;  // the accepted proposals, then the residual or bonus token
  int num_accepted = 0;         // proposals kept: tokens.size() - 1
};

// Preconditions: target.size() == proposed.size() + 1; proposer empty or proposed.size() long.
SpeculativeOutcome verify_speculation(const SpeculativeDraw& draw);

// Inverse-CDF draw of one token from `d` with a uniform u in [0, 1) (ids ascending).
int32_t draw_token(const TokenDistribution& d, double u);

}  // namespace weft
