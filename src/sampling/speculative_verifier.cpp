#include "sampling/speculative_verifier.h"

#include <algorithm>

#include "sampling/rng.h"

namespace weft {

int32_t draw_token(const TokenDistribution& d, double u) {
  double total = 0.0;
  for (float p : d.probs) total += p;
  const double target = u * total;
  double acc = 0.0;
  int32_t last = d.ids.empty() ? 0 : d.ids.front();
  for (size_t i = 0; i < d.ids.size(); ++i) {
    if (d.probs[i] <= 0.0f) continue;
    acc += d.probs[i];
    last = d.ids[i];
    if (acc > target) return last;
  }
  return last;  // rounding left the target just above the sum
}

namespace {

// max(0, p - q) over p's support (outside it p is 0), unnormalised; p itself when that is empty
// (p == q up to rounding: a rejection then has probability ~0, and p is the right law).
TokenDistribution residual(const TokenDistribution& p, const TokenDistribution* q, int32_t rejected) {
  TokenDistribution r;
  r.ids.reserve(p.ids.size());
  r.probs.reserve(p.ids.size());
  double mass = 0.0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    const float qx = q != nullptr ? q->prob_of(p.ids[i]) : (p.ids[i] == rejected ? 1.0f : 0.0f);
    const float left = p.probs[i] - qx;
    if (left > 0.0f) {
      r.ids.push_back(p.ids[i]);
      r.probs.push_back(left);
      mass += left;
    }
  }
  if (mass <= 0.0) return p;
  return r;
}

}  // namespace

SpeculativeOutcome verify_speculation(const SpeculativeDraw& draw) {
  SpeculativeOutcome out;
  const size_t k = draw.proposed.size();
  for (size_t j = 0; j < k; ++j) {
    const TokenDistribution& p = draw.target[j];
    const TokenDistribution* q = draw.proposer.empty() ? nullptr : &draw.proposer[j];
    const int32_t d = draw.proposed[j];
    const SamplingRng rng(draw.seed, draw.seq_index, draw.first_step + j);
    const double pd = p.prob_of(d);
    const double qd = q != nullptr ? q->prob_of(d) : 1.0;
    // u < p/q, written without the division; a token the proposer could not have drawn (q = 0)
    // is rejected.
    if (qd > 0.0 && rng.uniform(1) * qd < pd) {
      out.tokens.push_back(d);
      ++out.num_accepted;
      continue;
    }
    out.tokens.push_back(draw_token(residual(p, q, d), rng.uniform(2)));
    return out;
  }
  const SamplingRng rng(draw.seed, draw.seq_index, draw.first_step + k);
  out.tokens.push_back(draw_token(draw.target[k], rng.uniform(0)));
  return out;
}

}  // namespace weft
