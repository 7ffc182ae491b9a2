// The text formats in which model families write tool calls, as vLLM's --tool-call-parser names
// them:
//   hermes       Hermes 2 Pro / Qwen 2.5 / Qwen 3: <tool_call>{"name": ..., "arguments": {...}}</tool_call>,
//                one block per call, anywhere in the output.
//   llama3_json  Llama 3.1 / 3.2 / 3.3 JSON calls: {"name": ..., "parameters": {...}} at the start of
//                the output (optionally after <|python_tag|>), several separated by ";".
//   mistral      Mistral, in either form, told apart by what follows [TOOL_CALLS]: the JSON list
//                of the v3 tokenizers, [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...], or
//                the name form of the later ones (v7 / v11+ templates: Mistral Small 3.1+,
//                Devstral, Magistral), [TOOL_CALLS]name[ARGS]{...} or
//                [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}, one marker per call
//                (`[TOOL_CALLS]a[ARGS]{...}[TOOL_CALLS]b[ARGS]{...}`). [ARGS] and [CALL_ID] are
//                special tokens too; they stay in the text as [TOOL_CALLS] does (the server keeps
//                all special tokens when the marker is one).
// Either key, "arguments" or "parameters", is accepted by every parser.
//
// Mistral has two values: kMistral (the v3 JSON list) and kMistralNamed (the name form). Both
// are vLLM's "mistral" parser and both parsers read either form; they differ only in the form
// the tool_choice grammar makes the model write (tool_call_grammar.h), which must be the one its
// chat template shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace weft {

enum class ToolCallFormat { kHermes, kLlama3Json, kMistral, kMistralNamed };

// "hermes", "llama3_json", "mistral" (both Mistral values).
const char* tool_call_format_name(ToolCallFormat format);

// A --tool-call-parser value -> its format ("mistral": kMistral); InvalidArgument naming the
// flag and the known names.
absl::StatusOr<ToolCallFormat> tool_call_format_from_name(std::string_view name);

// The format a chat template writes tool calls in, judged from its source: "[TOOL_CALLS]" ->
// mistral (kMistralNamed when the template also writes "[ARGS]"), "<tool_call>" -> hermes, "<|python_tag|>" or Llama 3's "<|start_header_id|>" together
// with a "parameters" key -> llama3_json; nullopt when none of them appears.
std::optional<ToolCallFormat> tool_call_format_of_template(std::string_view template_source);

// The text that opens a format's tool-call region ("<tool_call>", "<|python_tag|>",
// "[TOOL_CALLS]"): a tokenizer may hold it as one special token, which detokenization must keep.
std::string_view tool_call_start_marker(ToolCallFormat format);

// kMistral or kMistralNamed.
inline bool is_mistral(ToolCallFormat format) {
  return format == ToolCallFormat::kMistral || format == ToolCallFormat::kMistralNamed;
}

}  // namespace weft
