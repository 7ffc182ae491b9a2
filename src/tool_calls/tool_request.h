// The tool-calling fields of a chat completion body, validated (OpenAI's meaning, as vLLM reads
// them):
//   tools               array (at most kMaxTools) of {"type": "function", "function": {"name",
//                       "description", "parameters", "strict"}}; name: 1..64 of [A-Za-z0-9_-],
//                       unique; description: a string; parameters: a JSON schema object
//                       (absent: a function without parameters, {"type": "object",
//                       "properties": {}}); strict: a boolean.
//   tool_choice         "none" | "auto" | "required" | {"type": "function", "function": {"name"}}
//                       naming one of `tools`; default "auto" with tools, "none" without.
//                       "required" or a named function without tools is refused.
//   parallel_tool_calls boolean, default true; false: at most one call per reply.
// Errors are InvalidArgument starting with the field's path ("tools[1].function.name: ...").
// Whether a parameters schema compiles is not checked here (the grammar compiler does that).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft {

struct ToolFunction {
  std::string name;
  nlohmann::ordered_json parameters;  // the JSON schema of the arguments object
  bool strict = false;
};

enum class ToolChoiceMode { kNone, kAuto, kRequired, kNamed };

struct ToolRequest {
  // The functions, in the request's order; empty: the request has no tools.
  std::vector<ToolFunction> functions;
  // The tools as the request gave them (each {"type": "function", "function": {...}}): the chat
  // template's `tools` variable, as transformers' apply_chat_template receives them from vLLM
  // (an empty list stays an empty list); null when the body has no tools.
  nlohmann::ordered_json template_tools;
  ToolChoiceMode choice = ToolChoiceMode::kNone;
  std::string named;  // kNamed: the function's name
  bool parallel = true;

  // The model's text is parsed for tool calls (tools given and tool_choice other than "none").
  bool parses_calls() const { return !functions.empty() && choice != ToolChoiceMode::kNone; }
  // The output must be tool calls (required or a named function), enforced by a grammar.
  bool forces_calls() const { return choice == ToolChoiceMode::kRequired || choice == ToolChoiceMode::kNamed; }
  // The functions a reply may call: the named one for kNamed, else all of them.
  std::vector<const ToolFunction*> callable() const;
};

inline constexpr int kMaxTools = 128;

// `tools_in_order`: the body's "tools" member with its keys in the order the client sent them
// (transformers renders `tool | tojson` in that order, and the grammar generates a schema's
// properties in it); null: `body`'s own (sorted) order. It must hold the same value as
// body["tools"].
absl::StatusOr<ToolRequest> tool_request_from_body(const nlohmann::json& body,
                                                   const nlohmann::ordered_json* tools_in_order = nullptr);

}  // namespace weft
