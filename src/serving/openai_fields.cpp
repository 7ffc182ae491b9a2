#include "serving/openai_fields.h"

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

using nlohmann::json;

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// A DOM of one flavour as the other (nlohmann has no conversion between them).
nlohmann::ordered_json to_ordered(const json& value) {
  return nlohmann::ordered_json::parse(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

std::optional<FieldError> chat_messages_for_template(const json& messages, nlohmann::ordered_json& out) {
  if (!messages.is_array() || messages.empty()) {
    return FieldError{"messages", "messages: expected a non-empty array of {role, content} objects"};
  }
  out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& msg = messages[i];
    const std::string where = absl::StrCat("messages[", i, "]");
    if (!msg.is_object()) return FieldError{"messages", absl::StrCat(where, ": expected an object")};
    const json* role = field(msg, "role");
    if (role == nullptr || !role->is_string()) {
      return FieldError{"messages", absl::StrCat(where, ".role: expected a string")};
    }
    nlohmann::ordered_json rendered = to_ordered(msg);
    const json* content = field(msg, "content");
    if (content != nullptr && content->is_array()) {
      std::string text;
      for (size_t j = 0; j < content->size(); ++j) {
        const json& part = (*content)[j];
        const json* type = part.is_object() ? field(part, "type") : nullptr;
        const json* t = part.is_object() ? field(part, "text") : nullptr;
        if (type == nullptr || *type != "text" || t == nullptr || !t->is_string()) {
          return FieldError{"messages", absl::StrCat(where, ".content[", j,
                                                     "]: only {\"type\": \"text\", \"text\": ...} parts are supported")};
        }
        text += t->get<std::string>();
      }
      rendered["content"] = text;
    } else if (content != nullptr && !content->is_string()) {
      return FieldError{"messages", absl::StrCat(where, ".content: expected a string or an array of text parts")};
    }
    out.push_back(std::move(rendered));
  }
  return std::nullopt;
}

std::optional<FieldError> unsupported_field(const json& body, bool chat) {
  if (const json* rf = field(body, "response_format")) {
    if (!(rf->is_object() && rf->value("type", json()) == "text")) {
      return FieldError{"response_format",
                        "response_format: structured output is not supported yet; only {\"type\": \"text\"}"};
    }
  }
  if (const json* tools = field(body, "tools"); tools != nullptr && !(tools->is_array() && tools->empty())) {
    return FieldError{"tools", "tools: tool calling is not supported"};
  }
  if (!chat) {
    if (const json* echo = field(body, "echo"); echo != nullptr && *echo != false) {
      return FieldError{"echo", "echo: not supported"};
    }
    if (field(body, "suffix") != nullptr) return FieldError{"suffix", "suffix: not supported"};
  }
  if (const json* best_of = field(body, "best_of")) {
    const json* n = field(body, "n");
    if (*best_of != (n != nullptr ? *n : json(1))) {
      return FieldError{"best_of", "best_of: only best_of == n is supported"};
    }
  }
  return std::nullopt;
}

}  // namespace weft
