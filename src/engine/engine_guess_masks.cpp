// Engine::constrain_guesses: speculation for sequences with a grammar or bans. Each verified row j of a
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
//
// Bans at a sequence's next position (banned phrases) are the same kind of refusal, for row 0
// only (the bans at later positions were dropped when the rollback that made these happened):
// row 0's mask loses them, and a banned guess 0 is cut or kept as above.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/engine.h"

namespace weft {
namespace {

struct Screening {
  absl::Status status;
  int dropped = 0;  // guesses taken out of the proposal by the grammar
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

// Row 0 of a proposal for a sequence with bans at its next position: its mask (the grammar's
// there, if any, filled by screen) loses the banned tokens. A guess 0 that is banned is handled
// as a refused one (see the top); when the bans leave no token the proposal is dropped, and the
// sequence samples that position as plain decoding does (Engine::apply_constraints marks the
// dead end emit backtracks from).
// Returns how many guesses the bans dropped.
size_t apply_bans(const std::vector<int32_t>& bans, Proposal& proposal, int32_t words, std::vector<uint32_t>& mask_rows,
                  std::vector<char>& restricted) {
  const size_t k = proposal.tokens.size();
  if (k == 0) return 0;
  if (restricted.empty()) {  // no grammar: rows 1..k stay unmasked
    mask_rows.assign((k + 1) * static_cast<size_t>(words), 0u);
    restricted.assign(k + 1, 0);
  }
  const std::span<uint32_t> row(mask_rows.data(), words);
  if (!restricted[0]) std::fill(row.begin(), row.end(), ~0u);
  for (int32_t token : bans) row[token >> 5] &= ~(1u << (token & 31));
  restricted[0] = 1;
  const bool dead = std::all_of(row.begin(), row.end(), [](uint32_t w) { return w == 0; });
  const int32_t first = proposal.tokens[0];
  const bool banned = std::find(bans.begin(), bans.end(), first) != bans.end();
  const size_t kept = dead || (banned && proposal.q.empty()) ? 0 : banned ? 1 : k;
  proposal.tokens.resize(kept);
  if (!proposal.q.empty()) proposal.q.resize(kept);
  mask_rows.resize((kept + 1) * static_cast<size_t>(words));
  restricted.resize(kept + 1);
  return k - kept;
}

}  // namespace

absl::Status Engine::constrain_guesses(std::span<const ProposalRequest> requests, std::vector<Proposal>& proposals,
                                       std::map<int64_t, GuessMasks>& masks) {
  std::vector<size_t> screened;  // indices into requests / proposals: a grammar, bans, or both
  std::vector<const std::vector<int32_t>*> bans;  // at each one's next position, or null
  for (size_t r = 0; r < requests.size(); ++r) {
    const Sequence* seq = scheduler_.find(requests[r].seq_id);
    const std::vector<int32_t>* banned = seq != nullptr ? bans_at_next(*seq) : nullptr;
    if (!proposals[r].tokens.empty() && (sequences_.at(requests[r].seq_id).constraint || banned != nullptr)) {
      screened.push_back(r);
      bans.push_back(banned);
    }
  }
  if (screened.empty()) return absl::OkStatus();
  // No mask job may read a constraint while it moves (none is expected: the sequence is in no
  // plan in flight).
  if (mask_prefetcher_) {
    for (size_t r : screened) {
      if (sequences_.at(requests[r].seq_id).constraint) mask_prefetcher_->forget(requests[r].seq_id);
    }
  }
  const int32_t words = mask_words(config_.vocab_size);
  std::vector<GuessMasks> filled(screened.size());
  std::vector<Screening> screenings(screened.size());
  std::vector<size_t> ban_dropped(screened.size(), 0);
  // Distinct sequences' constraints: safe to screen in parallel.
  pool_.parallel_for(static_cast<int64_t>(screened.size()), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const size_t r = screened[c];
      if (TokenConstraint* constraint = sequences_.at(requests[r].seq_id).constraint.get()) {
        screenings[c] = screen(*constraint, proposals[r], words, filled[c].words, filled[c].restricted);
      }
      if (screenings[c].status.ok() && bans[c] != nullptr) {
        ban_dropped[c] = apply_bans(*bans[c], proposals[r], words, filled[c].words, filled[c].restricted);
      }
    }
  });
  for (size_t c = 0; c < screened.size(); ++c) {
    WEFT_RETURN_IF_ERROR(screenings[c].status);
    spec_stats_.num_grammar_dropped_tokens += screenings[c].dropped;
    const size_t r = screened[c];
    if (bans[c] != nullptr) {
      spec_stats_.num_banned_dropped_tokens += static_cast<int64_t>(ban_dropped[c]);
      ++spec_stats_.num_banned_screened;
    }
    if (!proposals[r].tokens.empty()) masks[requests[r].seq_id] = std::move(filled[c]);
  }
  return absl::OkStatus();
}

}  // namespace weft
