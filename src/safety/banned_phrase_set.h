// A compiled list of banned phrases: an Aho-Corasick automaton over the phrases' matching form
// (phrase_normalizer.h: NFKC_Casefold, decomposed), shared read-only by every sequence that
// screens its output against the list (banned_phrase_filter.h).
//
// A state is the longest suffix of the normalized text read so far that is a prefix of some
// phrase; step() reads one more code point. depth(state) is that suffix's length in code points
// (so no match can begin before the last depth() code points), match_length(state) the length of
// the longest phrase that ends exactly here (0: none).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace weft {

// Bounds on a list (a server file or a request's bad_words); exceeding one is InvalidArgument.
struct BannedPhraseLimits {
  size_t max_phrases = 100000;
  size_t max_phrase_bytes = 1024;
  size_t max_total_bytes = size_t{16} << 20;
};

class BannedPhraseSet {
 public:
  static constexpr int32_t kRoot = 0;

  // Compiles `phrases` (UTF-8). Errors start with `param` (the flag or request field the list came
  // from) and name the phrase: invalid UTF-8, a phrase that normalizes to nothing (empty or only
  // default ignorables), a phrase or list past `limits`. Duplicates (after normalization) are kept once.
  static absl::StatusOr<std::shared_ptr<const BannedPhraseSet>> compile(const std::vector<std::string>& phrases,
                                                                        std::string_view param,
                                                                        const BannedPhraseLimits& limits);

  int32_t step(int32_t state, char32_t cp) const;
  int32_t depth(int32_t state) const { return depth_[state]; }
  int32_t match_length(int32_t state) const { return match_length_[state]; }
  // The index (into phrases()) of the phrase match_length() measures; -1 when none.
  int32_t match_phrase(int32_t state) const { return match_phrase_[state]; }

  const std::vector<std::string>& phrases() const { return phrases_; }
  int32_t num_states() const { return static_cast<int32_t>(depth_.size()); }

 private:
  BannedPhraseSet() = default;
  int32_t child(int32_t state, char32_t cp) const;

  std::vector<std::string> phrases_;
  absl::flat_hash_map<uint64_t, int32_t> edges_;  // (state << 21 | cp) -> state
  std::vector<int32_t> fail_;
  std::vector<int32_t> depth_;
  std::vector<int32_t> match_length_;
  std::vector<int32_t> match_phrase_;
};

}  // namespace weft
