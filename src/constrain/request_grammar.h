// The grammar a request body asks for, in any of the spellings clients use:
//   response_format      {"type": "json_object"} | {"type": "json_schema", "json_schema":
//                        {"name", "schema", "strict"}} | {"type": "structural_tag", ...}
//                        ({"type": "text"}: none)                                      (OpenAI)
//   structured_outputs   {"json": schema} | {"regex"} | {"choice"} | {"grammar"} |
//                        {"json_object": true} | {"structural_tag"}, with
//                        "disable_any_whitespace" / "disable_additional_properties"      (vLLM)
//   guided_json / guided_regex / guided_choice / guided_grammar              (vLLM, older)
// At most one of them; a second, an unknown type or a malformed value is InvalidArgument
// starting with the parameter's name. Whitespace in JSON is bounded by default (grammar_spec.h);
// fields that would change it beyond that (guided_whitespace_pattern, structured_outputs.
// whitespace_pattern) are refused by name. Parsing only: GrammarCompiler checks the grammar.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "constrain/grammar_spec.h"
#include "nlohmann/json.hpp"

namespace weft {

absl::StatusOr<std::optional<GrammarSpec>> grammar_spec_from_request(const nlohmann::json& body);

}  // namespace weft
