// PCRE2-backed regular expressions and the String/Regex patterns tokenizer.json uses (Split
// pre-tokenizer, Replace normalizer and decoder). Patterns are compiled once with UTF and UCP
// (\p{L}, \s, \w follow Unicode, as Oniguruma does for Hugging Face) and JIT-compiled when the
// PCRE2 build supports it. Matching is thread-safe: match state lives in thread_local storage.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tokenizer/json_path.h"

namespace weft {

class Regex {
 public:
  // Compiles `pattern`; on error names `where` and PCRE2's message with the offending offset.
  static absl::StatusOr<std::shared_ptr<const Regex>> compile(std::string_view pattern,
                                                              const JsonPath& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [start, end) byte ranges of all non-overlapping, non-empty matches in `text`
  // (valid UTF-8), left to right.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // Replaces every match in `text` with `content` (the Replace normalizer and decoder).
  void replace_all(std::string& text, std::string_view content) const;

 private:
  explicit Regex(void* code, bool jit) : code_(code), jit_(jit) {}
  void* code_;  // pcre2_code_8*
  bool jit_;
};

// A tokenizer.json pattern: {"String": "literal"} or {"Regex": "..."}.
class Pattern {
 public:
  static absl::StatusOr<Pattern> from_json(const nlohmann::json& j, const JsonPath& where);
  static Pattern literal(std::string s);

  // Non-overlapping matches, left to right, as byte ranges.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // Replaces every match in `text` with `content` (the Replace normalizer and decoder).
  void replace_all(std::string& text, std::string_view content) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

}  // namespace weft
