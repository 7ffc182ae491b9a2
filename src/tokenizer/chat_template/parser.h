// Recursive-descent parser for the Jinja2 subset chat templates use, mirroring jinja2's
// grammar and operator precedence (jinja2/parser.py).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "tokenizer/chat_template/ast.h"

namespace weft::jinja {

// Parses template source into statements. `max_depth` bounds the nesting of blocks and
// expressions (untrusted templates). Errors are InvalidArgument:
// "chat template syntax error at line L, column C: <what was found>, expected <what>".
absl::StatusOr<StmtList> parse_template(std::string_view source, int max_depth);

}  // namespace weft::jinja
