#include "safety/banned_phrase_filter.h"

#include <algorithm>

namespace weft {

BannedPhraseFilter::BannedPhraseFilter(std::vector<std::shared_ptr<const BannedPhraseSet>> lists)
    : lists_(std::move(lists)) {
  state_.states.assign(lists_.size(), BannedPhraseSet::kRoot);
}

int64_t BannedPhraseFilter::scan(const std::vector<NormalizedCodePoint>& cps) {
  int64_t earliest = -1;
  for (const NormalizedCodePoint& c : cps) {
    if (c.cp == NormalizedCodePoint::kRunEnd) {
      // No combining mark follows: the candidate is a match.
      if (state_.candidate >= 0 && (earliest < 0 || state_.candidate < earliest)) {
        earliest = state_.candidate;
        match_list_ = state_.candidate_list;
        match_phrase_ = state_.candidate_phrase;
      }
      state_.candidate = -1;
      continue;
    }
    state_.candidate = -1;  // a mark after the candidate's last code point changes that character
    cp_sources_.push_back(c.source);
    ++state_.num_cps;
    for (size_t l = 0; l < lists_.size(); ++l) {
      int32_t& s = state_.states[l];
      s = lists_[l]->step(s, c.cp);
      const int32_t length = lists_[l]->match_length(s);
      if (length == 0) continue;
      // Reordered marks may carry later sources than the code points after them.
      const int64_t start = *std::min_element(cp_sources_.end() - length, cp_sources_.end());
      if (state_.candidate < 0 || start < state_.candidate) {
        state_.candidate = start;
        state_.candidate_list = l;
        state_.candidate_phrase = lists_[l]->match_phrase(s);
      }
    }
  }
  return earliest;
}

int64_t BannedPhraseFilter::token_of(int64_t source) const {
  int64_t token = std::upper_bound(token_ends_.begin(), token_ends_.end(), source) - token_ends_.begin();
  // Tokens that added no text right before it may hold the first bytes of its first character.
  auto start_of = [&](int64_t t) { return t == 0 ? 0 : token_ends_[t - 1]; };
  while (token > committed_ && token_ends_[token - 1] == start_of(token - 1)) --token;
  return std::max(token, committed_);
}

std::optional<BannedPhraseFilter::Match> BannedPhraseFilter::match_at(int64_t source) {
  Match m;
  m.token = token_of(source);
  m.list = match_list_;
  m.phrase = match_phrase_;
  return m;
}

void BannedPhraseFilter::update_committed() {
  int64_t hold = state_.raw_end;
  if (const int64_t pending = state_.normalizer.pending_source(); pending >= 0) hold = std::min(hold, pending);
  for (size_t l = 0; l < lists_.size(); ++l) {
    const int32_t depth = lists_[l]->depth(state_.states[l]);
    if (depth > 0) hold = std::min(hold, *std::min_element(cp_sources_.end() - depth, cp_sources_.end()));
  }
  const int64_t committed = token_of(hold);
  before_.erase(before_.begin(), before_.begin() + (committed - committed_));
  committed_ = committed;
}

std::optional<BannedPhraseFilter::Match> BannedPhraseFilter::append(std::string_view text) {
  before_.push_back(state_);
  const int64_t offset = state_.raw_end;
  token_ends_.push_back(offset + static_cast<int64_t>(text.size()));
  std::vector<NormalizedCodePoint> cps;
  state_.normalizer.feed(text, offset, cps);
  state_.raw_end += static_cast<int64_t>(text.size());
  if (const int64_t source = scan(cps); source >= 0) return match_at(source);
  update_committed();
  return std::nullopt;
}

std::optional<BannedPhraseFilter::Match> BannedPhraseFilter::finish(std::string_view trailing) {
  std::vector<NormalizedCodePoint> cps;
  if (!trailing.empty() && !token_ends_.empty()) {
    state_.normalizer.feed(trailing, state_.raw_end, cps);
    state_.raw_end += static_cast<int64_t>(trailing.size());
    token_ends_.back() = state_.raw_end;
  }
  state_.normalizer.finish(cps);
  if (const int64_t source = scan(cps); source >= 0) return match_at(source);
  committed_ = num_tokens();
  before_.clear();
  return std::nullopt;
}

void BannedPhraseFilter::rollback(int64_t token) {
  token = std::clamp(token, committed_, num_tokens());
  if (token == num_tokens()) return;
  state_ = before_[token - committed_];
  before_.resize(token - committed_);
  token_ends_.resize(token);
  cp_sources_.resize(state_.num_cps);
}

}  // namespace weft
