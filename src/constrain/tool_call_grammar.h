// The grammar behind tool_choice "required" and a named function: the reply is nothing but tool
// calls in the model's own format (tool_call_format.h), each naming a callable function with
// arguments valid for that function's parameters schema, then the end of the reply. So the
// format's parser (tool_call_parser.h) always finds the calls, and the model writes the format
// it was trained on.
//   required: one or more calls of any of the tools (exactly one when parallel_tool_calls is
//             false), separated as the format separates them;
//   named:    exactly one call of that function.
// Layout of one call (JSON whitespace inside the arguments: at most 4 characters in each place):
//   hermes       <tool_call>\n{"name": "F", "arguments": ARGS}\n</tool_call>   (separator "\n")
//   llama3_json  {"name": "F", "parameters": ARGS}                              (separator "; ")
//   mistral      [TOOL_CALLS][{"name": "F", "arguments": ARGS}, ...]           (separator ", ")
//   mistral, name form (kMistralNamed)  [TOOL_CALLS]F[ARGS]ARGS                 (no separator)
// tool_choice "auto" with a function marked "strict": true leaves the reply free until the
// format's marker, and from the marker on the calls follow the layout above (xgrammar's
// triggered_tags; every function's arguments are then held to its schema, strict or not). The
// llama3_json format has no marker (its calls are bare JSON at the reply's start), so strict
// functions with "auto" are refused there. Without strict functions "auto" has no grammar.
// Built as an xgrammar structural tag (tags_with_separator of one tag per function); the spec's
// parameter is "tool_choice". Markers are written as text: where the tokenizer has them as
// special tokens (Mistral's [TOOL_CALLS]), the grammar spells them with ordinary tokens, which
// detokenize to the same text.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "constrain/grammar_spec.h"
#include "tool_calls/tool_call_format.h"
#include "tool_calls/tool_request.h"

namespace weft {

// The grammar `tools` ask for, or nullopt when the reply is left free (tool_choice "none", or
// "auto" without strict functions). InvalidArgument naming tools[i].function.strict when
// strict cannot be enforced.
absl::StatusOr<std::optional<GrammarSpec>> tool_call_grammar(ToolCallFormat format, const ToolRequest& tools);

// The spec that checks one function's parameters schema compiles (parameter
// "tools[i].function.parameters").
GrammarSpec tool_parameters_grammar(const ToolFunction& function, size_t index);

}  // namespace weft
