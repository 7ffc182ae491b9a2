#include "safety/banned_phrase_set.h"

#include <deque>

#include "absl/strings/str_cat.h"
#include "safety/phrase_normalizer.h"
#include "tokenizer/utf8.h"

namespace weft {
namespace {

uint64_t edge_key(int32_t state, char32_t cp) { return (static_cast<uint64_t>(state) << 21) | (cp & 0x1FFFFF); }

}  // namespace

int32_t BannedPhraseSet::child(int32_t state, char32_t cp) const {
  auto it = edges_.find(edge_key(state, cp));
  return it == edges_.end() ? -1 : it->second;
}

int32_t BannedPhraseSet::step(int32_t state, char32_t cp) const {
  while (true) {
    if (const int32_t next = child(state, cp); next >= 0) return next;
    if (state == kRoot) return kRoot;
    state = fail_[state];
  }
}

absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> BannedPhraseSet::compile(const std::vector<std::string>& phrases,
                                                                                std::string_view param_view,
                                                                                const BannedPhraseLimits& limits) {
  const std::string param(param_view);
  if (phrases.size() > limits.max_phrases) {
    return absl::InvalidArgumentError(absl::StrCat(param, ": ", phrases.size(), " phrases, at most ",
                                                   limits.max_phrases, " are allowed"));
  }
  std::shared_ptr<BannedPhraseSet> set(new BannedPhraseSet());
  set->fail_.push_back(kRoot);
  set->depth_.push_back(0);
  set->match_length_.push_back(0);
  set->match_phrase_.push_back(-1);
  size_t total = 0;
  for (size_t i = 0; i < phrases.size(); ++i) {
    const std::string& phrase = phrases[i];
    const std::string where = absl::StrCat(param, "[", i, "]");
    if (phrase.size() > limits.max_phrase_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", phrase.size(), " bytes, at most ",
                                                     limits.max_phrase_bytes, " are allowed"));
    }
    total += phrase.size();
    if (total > limits.max_total_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(param, ": the phrases exceed ", limits.max_total_bytes, " bytes"));
    }
    if (!utf8::is_valid(phrase)) return absl::InvalidArgumentError(absl::StrCat(where, ": not valid UTF-8"));
    const std::u32string normalized = normalize_phrase(phrase);
    if (normalized.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": empty (or only default-ignorable characters)"));
    }
    int32_t state = kRoot;
    for (char32_t cp : normalized) {
      int32_t next = set->child(state, cp);
      if (next < 0) {
        next = set->num_states();
        set->edges_.emplace(edge_key(state, cp), next);
        set->fail_.push_back(kRoot);
        set->depth_.push_back(set->depth_[state] + 1);
        set->match_length_.push_back(0);
        set->match_phrase_.push_back(-1);
      }
      state = next;
    }
    if (set->match_phrase_[state] < 0) {
      set->match_phrase_[state] = static_cast<int32_t>(set->phrases_.size());
      set->match_length_[state] = set->depth_[state];
      set->phrases_.push_back(phrase);
    }
  }
  // Failure links breadth first: a state's fail is the longest proper suffix that is a state.
  std::vector<std::vector<std::pair<char32_t, int32_t>>> children(set->depth_.size());
  for (const auto& [key, to] : set->edges_) {
    children[static_cast<size_t>(key >> 21)].emplace_back(static_cast<char32_t>(key & 0x1FFFFF), to);
  }
  std::deque<int32_t> queue;
  for (const auto& [cp, to] : children[kRoot]) queue.push_back(to);
  while (!queue.empty()) {
    const int32_t state = queue.front();
    queue.pop_front();
    // Its own phrase, else the longest phrase that is a suffix (through the failure link).
    if (set->match_phrase_[state] < 0) {
      set->match_phrase_[state] = set->match_phrase_[set->fail_[state]];
      set->match_length_[state] = set->match_length_[set->fail_[state]];
    }
    for (const auto& [cp, to] : children[state]) {
      set->fail_[to] = set->step(set->fail_[state], cp);
      queue.push_back(to);
    }
  }
  return std::shared_ptr<const BannedPhraseSet>(std::move(set));
}

}  // namespace weft
