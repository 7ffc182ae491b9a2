// Engine::constrain_guesses: speculation for sequences with a grammar. Each verified row j of a
// constrained sequence needs the grammar's mask after the guesses before it; the grammar is
// advanced over the guesses, the masks of those states are filled, and it is rolled back to
// where it was -- before the step runs, since the guesses it refuses are dropped from the
// proposal (cheaper than verifying them) and the step must not carry them.
//
// Exactness (Engine::verify): a point-mass guess the grammar refuses would be verified by
// sampling its row under the mask and comparing -- the draw (mask excludes the guess) always
// differs and is emitted; cutting the proposal before the guess makes that row the bonus row,
// sampled the same way at the same step, so the token is the same one. A guess drawn from a
// distribution q cannot be cut before itself: conditioned on a refused draw, rejection sampling
// emits the residual max(0, p - q) and not p, so the guess stays (the last one) and the verifier
// rejects it (p(d) = 0 under the mask); the row after it is never drawn from and is left unmasked.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/engine.h"

namespace weft {
namespace {

struct Screening {
  absl::Status status;
  int dropped = 0;  // guesses taken out of the proposal
};

// Cuts `proposal` by `constraint` (in the state after the sequence's output; left in it) and
// fills `masks` for the rows that verify what remains.
// (`mask_rows` / `restricted`: Engine::GuessMasks's words and restricted.)
Screening screen(TokenConstraint& constraint, Proposal& proposal, int32_t words, std::vector<uint32_t>& mask_rows,
                 std::vector<char>& restricted) {
  Screening s;
  const size_t k = proposal.tokens.size();
  size_t allowed = 0;
  while (allowed < k && constraint.accept(proposal.tokens[allowed])) ++allowed;
  s.status = constraint.rollback(static_cast<int>(allowed));
  if (!s.status.ok()) return s;
  const size_t kept = allowed == k || proposal.q.empty() ? allowed : allowed + 1;
  s.dropped = static_cast<int>(k - kept);
  proposal.tokens.resize(kept);
  if (!proposal.q.empty()) proposal.q.resize(kept);
  if (kept == 0) return s;
  mask_rows.assign((kept + 1) * static_cast<size_t>(words), 0u);
  restricted.assign(kept + 1, 0);
  size_t advanced = 0;  // guesses the constraint took in this pass
  for (size_t j = 0; j <= allowed; ++j) {
    auto filled = constraint.fill_next_allowed(std::span<uint32_t>(mask_rows.data() + j * words, words));
    if (!filled.ok()) {
      s.status = filled.status();
      break;
    }
    restricted[j] = *filled;
    if (j == allowed) break;
    if (!constraint.accept(proposal.tokens[j])) {
      s.status = absl::InternalError(absl::StrCat("grammar: guess ", j, " (token ", proposal.tokens[j],
                                                  ") was accepted once and then refused"));
      break;
    }
    ++advanced;
  }
  // Back to the sequence's own state whatever happened above.
  const absl::Status back = constraint.rollback(static_cast<int>(advanced));
  if (s.status.ok()) s.status = back;
  return s;
}

}  // namespace

absl::Status Engine::constrain_guesses(std::span<const ProposalRequest> requests, std::vector<Proposal>& proposals,
                                       std::map<int64_t, GuessMasks>& masks) {
  std::vector<size_t> constrained;  // indices into requests / proposals
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!proposals[r].tokens.empty() && sequences_.at(requests[r].seq_id).constraint) constrained.push_back(r);
  }
  if (constrained.empty()) return absl::OkStatus();
  // No mask job may read a constraint while it moves (none is expected: the sequence is in no
  // plan in flight).
  if (mask_prefetcher_) {
    for (size_t r : constrained) mask_prefetcher_->forget(requests[r].seq_id);
  }
  const int32_t words = mask_words(config_.vocab_size);
  std::vector<GuessMasks> filled(constrained.size());
  std::vector<Screening> screenings(constrained.size());
  // Distinct sequences' constraints: safe to screen in parallel.
  pool_.parallel_for(static_cast<int64_t>(constrained.size()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t r = constrained[c];
      TokenConstraint& constraint = *sequences_.at(requests[r].seq_id).constraint;
      screenings[c] = screen(constraint, proposals[r], words, filled[c].words, filled[c].restricted);
    }
  });
  for (size_t c = 0; c < constrained.size(); ++c) {
    WEFT_RETURN_IF_ERROR(screenings[c].status);
    spec_stats_.num_grammar_dropped_tokens += screenings[c].dropped;
    const size_t r = constrained[c];
    if (!proposals[r].tokens.empty()) masks[requests[r].seq_id] = std::move(filled[c]);
  }
  return absl::OkStatus();
}

}  // namespace weft
