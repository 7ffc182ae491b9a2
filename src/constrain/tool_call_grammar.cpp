#include "constrain/tool_call_grammar.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

using ojson = nlohmann::ordered_json;

struct CallLayout {
  const char* before_name;   // up to the function name (its opening quote, where it has one)
  const char* after_name;    // from the name (its closing quote) to the arguments
  const char* after_args;    // after the arguments object
  const char* separator;
  const char* list_open;     // around all calls ("" for none)
  const char* list_close;
};

CallLayout layout_of(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return {"<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>", "\n", "", ""};
    case ToolCallFormat::kLlama3Json:
      return {"{\"name\": \"", "\", \"parameters\": ", "}", "; ", "", ""};
    case ToolCallFormat::kMistral:
      return {"{\"name\": \"", "\", \"arguments\": ", "}", ", ", "[TOOL_CALLS][", "]"};
    case ToolCallFormat::kMistralNamed:
      return {"[TOOL_CALLS]", "[ARGS]", "", "", "", ""};
  }
  return {"", "", "", "", "", ""};
}

// Whitespace per place JSON allows it inside arguments: models write calls on one line, so a
// looser bound (JsonOptions' 16, meant for pretty-printed documents) only lets a weak model
// spend its tokens on whitespace.
constexpr int kArgumentsMaxWhitespace = 4;

ojson call_tags(const CallLayout& layout, const ToolRequest& tools) {
  ojson tags = ojson::array();
  for (const ToolFunction* f : tools.callable()) {
    // Names are [A-Za-z0-9_-] (tool_request.h): no JSON escaping needed inside the quotes.
    tags.push_back({{"type", "tag"},
                    {"begin", absl::StrCat(layout.before_name, f->name, layout.after_name)},
                    {"content",
                     {{"type", "json_schema"},
                      {"json_schema", f->parameters},
                      {"max_whitespace_cnt", kArgumentsMaxWhitespace}}},
                    {"end", layout.after_args}});
  }
  return tags;
}

// Only calls: the whole reply.
ojson forced_calls(const CallLayout& layout, const ToolRequest& tools) {
  ojson calls = {{"type", "tags_with_separator"},
                 {"tags", call_tags(layout, tools)},
                 {"separator", layout.separator},
                 {"at_least_one", true},
                 {"stop_after_first", !tools.parallel || tools.choice == ToolChoiceMode::kNamed}};
  if (*layout.list_open == '\0') return calls;
  return {{"type", "sequence"},
          {"elements",
           {{{"type", "const_string"}, {"value", layout.list_open}},
            std::move(calls),
            {{"type", "const_string"}, {"value", layout.list_close}}}}};
}

// Free text, then calls from the marker on.
ojson triggered_calls(ToolCallFormat format, const CallLayout& layout, const ToolRequest& tools) {
  const std::string marker(tool_call_start_marker(format));
  ojson tags;
  if (*layout.list_open == '\0') {
    tags = call_tags(layout, tools);  // each call opens with the marker
  } else {
    // One list after the marker, holding the calls.
    ojson inner = {{"type", "tags_with_separator"},
                   {"tags", call_tags(layout, tools)},
                   {"separator", layout.separator},
                   {"at_least_one", true},
                   {"stop_after_first", !tools.parallel}};
    tags = ojson::array({{{"type", "tag"}, {"begin", layout.list_open}, {"content", std::move(inner)},
                          {"end", layout.list_close}}});
  }
  return {{"type", "triggered_tags"},
          {"triggers", {marker}},
          {"tags", std::move(tags)},
          {"at_least_one", false},
          {"stop_after_first", !tools.parallel}};
}

}  // namespace

absl::StatusOr<std::optional<GrammarSpec>> tool_call_grammar(ToolCallFormat format, const ToolRequest& tools) {
  const CallLayout layout = layout_of(format);
  ojson grammar;
  if (tools.forces_calls()) {
    grammar = forced_calls(layout, tools);
  } else if (tools.parses_calls()) {
    size_t strict = tools.functions.size();
    for (size_t i = 0; i < tools.functions.size() && strict == tools.functions.size(); ++i) {
      if (tools.functions[i].strict) strict = i;
    }
    if (strict == tools.functions.size()) return std::optional<GrammarSpec>();
    if (format == ToolCallFormat::kLlama3Json) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tools[", strict, "].function.strict: strict arguments with tool_choice \"auto\" need a tool-call marker, "
          "which the llama3_json format does not have; use tool_choice \"required\" or a named function"));
    }
    grammar = triggered_calls(format, layout, tools);
  } else {
    return std::optional<GrammarSpec>();
  }
  const ojson tag = {{"type", "structural_tag"}, {"format", std::move(grammar)}};
  GrammarSpec spec = GrammarSpec::structural_tag(tag.dump(-1, ' ', false, ojson::error_handler_t::replace));
  spec.set_parameter("tool_choice");
  return std::optional<GrammarSpec>(std::move(spec));
}

GrammarSpec tool_parameters_grammar(const ToolFunction& function, size_t index) {
  GrammarSpec spec = GrammarSpec::json_schema(function.parameters.dump(-1, ' ', false, ojson::error_handler_t::replace));
  spec.set_parameter(absl::StrCat("tools[", index, "].function.parameters"));
  return spec;
}

}  // namespace weft
