// UTF-8 helpers shared by the tokenizer pipeline: code point iteration, encoding, validation and
// the lossy conversion Rust's String::from_utf8_lossy performs (which Hugging Face decoders use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace weft::utf8 {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length in bytes of the UTF-8 sequence starting with lead byte `c` (1 for invalid leads, so
// callers always make progress). Input strings inside the pipeline are valid UTF-8.
inline size_t char_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

// Decodes the code point at s[pos] (s must be valid UTF-8) and advances pos past it.
char32_t next_code_point(std::string_view s, size_t& pos);

// Appends the UTF-8 encoding of `cp` to `out`.
void append_code_point(std::string& out, char32_t cp);

// Length of the longest prefix of `s` that is valid UTF-8 (Unicode's well-formedness table).
size_t valid_prefix_len(std::string_view s);

// True when `s` is entirely valid UTF-8.
inline bool is_valid(std::string_view s) { return valid_prefix_len(s) == s.size(); }

// Rust's String::from_utf8_lossy: every maximal invalid subpart becomes one U+FFFD.
std::string from_bytes_lossy(std::string_view bytes);

// Rust's char::is_whitespace (Unicode White_Space property).
bool is_whitespace(char32_t cp);

}  // namespace weft::utf8
