// Added tokens (tokenizer.json "added_tokens"): strings matched verbatim in the input before the
// model runs, longest match first at the leftmost position, as Hugging Face tokenizers does.
// Tokens with normalized=false are matched in the raw text; normalized=true tokens are matched
// in each normalized segment. lstrip / rstrip swallow adjacent whitespace; single_word only
// matches between non-word characters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"
#include "tokenizer/normalizers.h"

namespace weft {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
};

// A run of text [start, end) in the searched string: an added token (id >= 0) or plain text
// (id == -1) that still goes through the pipeline.
struct Segment {
  size_t start;
  size_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // Parses the "added_tokens" array at `where`; `normalizer` (may be null) rewrites the content
  // of normalized=true tokens before matching, as tokenizers does.
  static absl::StatusOr<AddedVocabulary> from_json(const nlohmann::json& tokens,
                                                   const JsonPath& where,
                                                   const Normalizer* normalizer);

  // Splits `text` on the non-normalized tokens (normalized_pass=false, raw input) or on the
  // normalized ones (normalized_pass=true, a normalized segment). Segments cover `text` in
  // order except whitespace swallowed by lstrip/rstrip; plain segments are never empty.
  void split(std::string_view text, bool normalized_pass, std::vector<Segment>& out) const;

  const AddedToken* by_id(int32_t id) const;
  std::optional<int32_t> token_to_id(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  // Byte trie over token patterns; edges keyed by (node << 8 | byte).
  struct Trie {
    absl::flat_hash_map<uint64_t, int32_t> edges;
    std::vector<int32_t> terminal{-1};  // token index per node, -1 when none
    std::array<bool, 256> first_byte{};
    void add(std::string_view pattern, int32_t token_index);
    // Longest pattern starting at text[pos]: its token index and length, or -1.
    int32_t longest_at(std::string_view text, size_t pos, size_t& len) const;
  };

  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<int32_t, size_t> by_id_;
  absl::flat_hash_map<std::string, int32_t> by_content_;
  Trie raw_trie_;
  Trie normalized_trie_;
  bool has_raw_ = false;
  bool has_normalized_ = false;
};

}  // namespace weft
