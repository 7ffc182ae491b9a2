// Screens one sequence's output text, token by token, against banned-phrase lists
// (banned_phrase_set.h), and says how much of it is safe to release.
//
// The engine appends each generated token's text (its detokenized delta, possibly empty). The
// filter normalizes the stream (phrase_normalizer.h) and runs every list's automaton over it:
//   - a match: append() returns the index of the token where the phrase begins (the token whose
//     text holds the phrase's first byte, or an earlier one when the tokens just before it added
//     no text yet: their bytes may be the start of that character). The caller rolls the sequence
//     back to that token and calls rollback(token); the filter is then as it was before that
//     token was appended.
//   - otherwise committed() tokens can no longer take part in any match: text before them is
//     neither a prefix of a phrase still open nor in the unnormalized tail. Only their text may
//     reach a client; committed() never decreases and rollback never goes below it.
// finish() ends the text (the sequence stops): the tail is normalized, a match may still be
// found; without one every token is committed.
//
// Matching is a substring match in the normalized text (no word boundaries), so a phrase is
// found whatever tokens spell it, across any number of tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "safety/banned_phrase_set.h"
#include "safety/phrase_normalizer.h"

namespace weft {

class BannedPhraseFilter {
 public:
  struct Match {
    int64_t token = 0;     // where the phrase begins (a token index, >= committed())
    size_t list = 0;       // which list (index into the constructor's `lists`)
    int32_t phrase = 0;    // index into that list's phrases()
  };

  explicit BannedPhraseFilter(std::vector<std::shared_ptr<const BannedPhraseSet>> lists);

  // Appends token num_tokens()'s text.
  std::optional<Match> append(std::string_view text);
  // The text ends after the last token, with `trailing` (text the detokenizer held back, e.g. an
  // incomplete character) belonging to it.
  std::optional<Match> finish(std::string_view trailing = {});
  // Forgets tokens [token, num_tokens()): the state right before `token` was appended. Requires
  // committed() <= token <= num_tokens().
  void rollback(int64_t token);

  int64_t num_tokens() const { return static_cast<int64_t>(token_ends_.size()); }
  int64_t committed() const { return committed_; }

 private:
  // Everything that changes as text is read; one snapshot per uncommitted token boundary.
  struct State {
    PhraseNormalizer normalizer;
    std::vector<int32_t> states;  // per list
    int64_t raw_end = 0;          // raw bytes read
    int64_t num_cps = 0;          // normalized code points read
    // A phrase ending at the last code point, confirmed once its run ends: its raw start (-1:
    // none), list and phrase.
    int64_t candidate = -1;
    size_t candidate_list = 0;
    int32_t candidate_phrase = 0;
  };
  // Runs the automata over newly normalized code points; the earliest confirmed match's start (a
  // raw offset) or -1.
  int64_t scan(const std::vector<NormalizedCodePoint>& cps);
  // The token holding raw offset `source` (see the header comment on earlier empty tokens).
  int64_t token_of(int64_t source) const;
  std::optional<Match> match_at(int64_t source);
  void update_committed();

  std::vector<std::shared_ptr<const BannedPhraseSet>> lists_;
  State state_;
  std::deque<State> before_;         // before_[i]: the state before token committed_ + i
  std::vector<int64_t> token_ends_;  // raw end offset of each token's text
  std::vector<int64_t> cp_sources_;  // raw source of each normalized code point read
  int64_t committed_ = 0;
  // The list and phrase of the match scan() last returned.
  size_t match_list_ = 0;
  int32_t match_phrase_ = 0;
};

}  // namespace weft
