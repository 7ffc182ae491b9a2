#include "tool_calls/tool_request.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "core/json_access.h"

namespace weft {
namespace {

using nlohmann::json;

absl::Status bad(const std::string& where, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
}

// OpenAI's rule for function names.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<ToolFunction> one_tool(const json& tool, const nlohmann::ordered_json* in_order, const std::string& where) {
  if (!tool.is_object()) return bad(where, absl::StrCat("expected an object, got ", tool.type_name()));
  const json* type = json_member(tool, "type");
  if (type == nullptr) return bad(where + ".type", "required (\"function\")");
  if (*type != "function") {
    return bad(where + ".type", absl::StrCat("unknown tool type ", type->dump(), "; only \"function\" is supported"));
  }
  const json* fn = json_member(tool, "function");
  if (fn == nullptr || !fn->is_object()) return bad(where + ".function", "expected an object with a \"name\"");
  ToolFunction out;
  const json* name = json_member(*fn, "name");
  if (name == nullptr) return bad(where + ".function.name", "required");
  if (!name->is_string() || !valid_name(name->get<std::string>())) {
    return bad(where + ".function.name",
               absl::StrCat("expected 1 to 64 letters, digits, underscores or dashes, got ", name->dump()));
  }
  out.name = name->get<std::string>();
  if (const json* d = json_member(*fn, "description"); d != nullptr && !d->is_string()) {
    return bad(where + ".function.description", absl::StrCat("expected a string, got ", d->type_name()));
  }
  if (const json* p = json_member(*fn, "parameters")) {
    if (!p->is_object()) {
      return bad(where + ".function.parameters", absl::StrCat("expected a JSON schema object, got ", p->type_name()));
    }
    if (const json* t = json_member(*p, "type"); t != nullptr && *t != "object") {
      return bad(where + ".function.parameters", absl::StrCat("the arguments must be an object; \"type\" is ", t->dump()));
    }
    out.parameters = in_order != nullptr ? (*in_order)["function"]["parameters"] : to_ordered_json(*p);
  } else {
    out.parameters = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  }
  if (const json* s = json_member(*fn, "strict")) {
    if (!s->is_boolean()) return bad(where + ".function.strict", "expected a boolean");
    out.strict = s->get<bool>();
  }
  return out;
}

}  // namespace

std::vector<const ToolFunction*> ToolRequest::callable() const {
  std::vector<const ToolFunction*> out;
  for (const ToolFunction& f : functions) {
    if (choice != ToolChoiceMode::kNamed || f.name == named) out.push_back(&f);
  }
  return out;
}

absl::StatusOr<ToolRequest> tool_request_from_body(const json& body, const nlohmann::ordered_json* tools_in_order) {
  ToolRequest out;
  if (const json* tools = json_member(body, "tools")) {
    if (!tools->is_array()) return bad("tools", absl::StrCat("expected an array of tools, got ", tools->type_name()));
    out.template_tools = nlohmann::ordered_json::array();
    if (tools->size() > static_cast<size_t>(kMaxTools)) {
      return bad("tools", absl::StrCat("at most ", kMaxTools, " tools, got ", tools->size()));
    }
    if (tools_in_order != nullptr && (!tools_in_order->is_array() || tools_in_order->size() != tools->size())) {
      tools_in_order = nullptr;  // not the same value: fall back to the sorted one
    }
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string where = absl::StrCat("tools[", i, "]");
      const nlohmann::ordered_json* in_order = tools_in_order != nullptr ? &(*tools_in_order)[i] : nullptr;
      auto fn = one_tool((*tools)[i], in_order, where);
      if (!fn.ok()) return fn.status();
      if (!names.insert(fn->name).second) {
        return bad(where + ".function.name", absl::StrCat("duplicate function name \"", fn->name, "\""));
      }
      out.functions.push_back(*std::move(fn));
      out.template_tools.push_back(in_order != nullptr ? *in_order : to_ordered_json((*tools)[i]));
    }
  }
  const bool have_tools = !out.functions.empty();
  out.choice = have_tools ? ToolChoiceMode::kAuto : ToolChoiceMode::kNone;
  if (const json* choice = json_member(body, "tool_choice")) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c == "none") {
        out.choice = ToolChoiceMode::kNone;
      } else if (c == "auto") {
        out.choice = have_tools ? ToolChoiceMode::kAuto : ToolChoiceMode::kNone;
      } else if (c == "required") {
        out.choice = ToolChoiceMode::kRequired;
      } else {
        return bad("tool_choice", absl::StrCat("unknown value \"", c,
                                               "\"; expected \"none\", \"auto\", \"required\" or a named function"));
      }
    } else if (choice->is_object()) {
      const json* type = json_member(*choice, "type");
      const json* fn = json_member(*choice, "function");
      const json* name = fn != nullptr && fn->is_object() ? json_member(*fn, "name") : nullptr;
      if (type == nullptr || *type != "function" || name == nullptr || !name->is_string()) {
        return bad("tool_choice", "expected {\"type\": \"function\", \"function\": {\"name\": ...}}");
      }
      out.choice = ToolChoiceMode::kNamed;
      out.named = name->get<std::string>();
      bool known = false;
      for (const ToolFunction& f : out.functions) known = known || f.name == out.named;
      if (!known) {
        return bad("tool_choice", absl::StrCat("function \"", out.named, "\" is not among the request's tools"));
      }
    } else {
      return bad("tool_choice", absl::StrCat("expected a string or an object, got ", choice->type_name()));
    }
    if (out.forces_calls() && !have_tools) {
      return bad("tool_choice", "\"required\" or a named function needs a non-empty tools list");
    }
  }
  if (const json* p = json_member(body, "parallel_tool_calls")) {
    if (!p->is_boolean()) return bad("parallel_tool_calls", absl::StrCat("expected a boolean, got ", p->type_name()));
    out.parallel = p->get<bool>();
  }
  return out;
}

}  // namespace weft
