#include "tool_calls/tool_call_format.h"

#include "absl/strings/str_cat.h"

namespace weft {

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralNamed:
      return "mistral";
  }
  return "unknown";
}

absl::StatusOr<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    if (name == tool_call_format_name(f)) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--tool-call-parser: unknown parser \"", std::string(name), "\"; expected hermes, llama3_json or mistral"));
}

std::optional<ToolCallFormat> tool_call_format_of_template(std::string_view source) {
  auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("[TOOL_CALLS]")) return has("[ARGS]") ? ToolCallFormat::kMistralNamed : ToolCallFormat::kMistral;
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("\"parameters\""))) {
    return ToolCallFormat::kLlama3Json;
  }
  return std::nullopt;
}

std::string_view tool_call_start_marker(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "<tool_call>";
    case ToolCallFormat::kLlama3Json:
      return "<|python_tag|>";
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kMistralNamed:
      return "[TOOL_CALLS]";
  }
  return "";
}

}  // namespace weft
