// Speculative decoding's proposers: cheap guesses of a sequence's next tokens that the target
// model then verifies in one pass (sampling/speculative_verifier.h). The engine asks once per
// step, for the decoding sequences of the plan it just made (Engine::add_proposals).
//
// The seam: a proposer sees only token ids (and, to draw as the request samples, its sampling
// parameters and RNG key), so an n-gram lookup and a separate draft model fit it today. Heads
// that live inside the target (EAGLE, Medusa, multi-token prediction) would also need the
// target's last hidden states per sequence; they would get them through an extra field of
// ProposalRequest filled from the previous step's output, without changing the verifier or the
// scheduler.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace weft {

struct ProposalRequest {
  int64_t seq_id = 0;
  std::span<const int32_t> prompt_ids;
  std::span<const int32_t> output_ids;  // the last one is not yet in the target's KV cache
  const SamplingParams* params = nullptr;
  uint64_t seed = 0;
  uint32_t seq_index = 0;
  int max_tokens = 0;  // propose at most this many (>= 1)
  // The prompt length the target's RoPE counts for the sequence (Sequence::rope_prompt_len; 0:
  // prompt_ids.size()). A model proposer runs its own passes with it, and computes its cache of
  // the sequence afresh when it changes (a LongRoPE recompute), so a self-draft keeps agreeing.
  int64_t rope_prompt_len = 0;
};

struct Proposal {
  std::vector<int32_t> tokens;  // d_1..d_k, k <= max_tokens (empty: nothing to propose)
  // The distribution each d_j was drawn from; empty when every d_j was chosen deterministically
  // (a point mass: n-gram lookup, a greedy draft).
  std::vector<TokenDistribution> q;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string_view name() const = 0;
  // One proposal per request, in order.
  virtual absl::StatusOr<std::vector<Proposal>> propose(std::span<const ProposalRequest> requests) = 0;
  // The sequence ended (finished, aborted): drop what is kept for it.
  virtual void forget(int64_t seq_id) {}
  // Whether proposing costs a model run (the engine then weighs that cost against the gain).
  virtual bool runs_a_model() const = 0;
  // A model proposer: the tokens its last propose() ran to catch up (those of the requests it had
  // not computed yet: prompts, the target's accepted tokens, every token of the steps it sat out).
  virtual int64_t caught_up_tokens() const { return 0; }
};

}  // namespace weft
