// Prompt lookup ("n-gram") speculation: when the last n tokens of a sequence occurred earlier in
// its own prompt or output, guess that what followed them then follows now. No second model;
// pays off where the output copies its input (editing, summarising with quotes, code, RAG).
//
// For n from max_n down to min_n, the most recent earlier occurrence of the last n tokens is
// looked up; the first n that matches proposes the (up to max_tokens) tokens that followed it.
// Proposals are point masses (deterministic), so the verifier accepts d with the target's own
// probability p(d) (the argmax rule under greedy).
#pragma once

#include "engine/speculative/proposer.h"

namespace weft {

class NgramProposer : public Proposer {
 public:
  // 1 <= min_n <= max_n.
  NgramProposer(int min_n, int max_n) : min_n_(min_n), max_n_(max_n) {}

  std::string_view name() const override { return "ngram"; }
  absl::StatusOr<std::vector<Proposal>> propose(std::span<const ProposalRequest> requests) override;
  bool runs_a_model() const override { return false; }

  // The lookup on one token sequence.
  static std::vector<int32_t> lookup(std::span<const int32_t> tokens, int min_n, int max_n, int max_tokens);

 private:
  int min_n_;
  int max_n_;
};

}  // namespace weft
