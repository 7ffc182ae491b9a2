// Tokenizer for Jinja2 template source, configured as Hugging Face configures it
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, default delimiters).
// Comments are dropped, {% raw %} sections become data, and whitespace control (`-`, `+`,
// trim_blocks, lstrip_blocks) is applied here, so the parser only sees data and tag contents.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace weft::jinja {

enum class TokenType : uint8_t {
  kData, kVariableBegin, kVariableEnd, kBlockBegin, kBlockEnd,
  kName, kString, kInteger, kFloat, kOperator, kEof
};

struct Token {
  TokenType type;
  std::string value;  // data text, name, operator, or unescaped string literal
  int64_t int_value = 0;
  double float_value = 0.0;
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in bytes
};

// Tokenizes `source`. Errors (unterminated tag, comment or string, unbalanced brackets, stray
// characters) are InvalidArgument naming the line and column.
absl::StatusOr<std::vector<Token>> tokenize(std::string_view source);

// Human-readable token description for error messages ("end of print statement", "'foo'").
std::string describe_token(const Token& t);

}  // namespace weft::jinja
