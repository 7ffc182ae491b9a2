#include "tokenizer/chat_template/chat_template.h"

#include "absl/status/status.h"
#include "tokenizer/chat_template/parser.h"

namespace weft {

absl::StatusOr<ChatTemplate> ChatTemplate::parse(std::string_view source, int max_nesting_depth) {
  auto body = jinja::parse_template(source, max_nesting_depth);
  if (!body.ok()) return body.status();
  ChatTemplate t;
  t.source_ = std::make_shared<const std::string>(source);
  t.body_ = std::make_shared<const jinja::StmtList>(std::move(*body));
  return t;
}

absl::StatusOr<std::string> ChatTemplate::render(const nlohmann::ordered_json& context,
                                                 const ChatTemplateLimits& limits) const {
  if (!context.is_object() && !context.is_null()) {
    return absl::InvalidArgumentError("chat template context must be a JSON object");
  }
  jinja::Interpreter interp(limits);
  return interp.render(*body_, jinja::Value::from_json(context));
}

absl::StatusOr<std::string> ChatTemplate::render(const nlohmann::json& context, const ChatTemplateLimits& limits) const {
  if (!context.is_object() && !context.is_null()) {
    return absl::InvalidArgumentError("chat template context must be a JSON object");
  }
  jinja::Interpreter interp(limits);
  return interp.render(*body_, jinja::Value::from_json(context));
}

absl::StatusOr<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                        bool add_generation_prompt, std::string_view bos_token,
                                        std::string_view eos_token, const nlohmann::ordered_json& extra,
                                        const ChatTemplateLimits& limits) {
  if (!messages.is_array()) return absl::InvalidArgumentError("render_chat: messages must be a JSON array");
  if (!extra.is_null() && !extra.is_object()) return absl::InvalidArgumentError("render_chat: extra must be a JSON object");
  static constexpr const char* kReasoningFields[] = {"reasoning_content", "thinking", "reasoning"};
  nlohmann::ordered_json msgs = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object()) {
      return absl::InvalidArgumentError("render_chat: messages[" + std::to_string(i) + "] must be a JSON object");
    }
    // transformers' _normalize_chat_messages: drop keys whose value is None.
    nlohmann::ordered_json kept = nlohmann::ordered_json::object();
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it.value().is_null()) kept[it.key()] = it.value();
    }
    // transformers' _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r}.
    const nlohmann::ordered_json* reasoning = nullptr;
    for (const char* f : kReasoningFields) {
      if (kept.contains(f) && !kept[f].is_null()) {
        reasoning = &kept[f];
        break;
      }
    }
    if (reasoning) {
      nlohmann::ordered_json aliased = nlohmann::ordered_json::object();
      nlohmann::ordered_json r = *reasoning;
      aliased["thinking"] = r;
      for (auto it = kept.begin(); it != kept.end(); ++it) aliased[it.key()] = it.value();
      aliased["reasoning_content"] = r;
      kept = std::move(aliased);
    }
    msgs.push_back(std::move(kept));
  }
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = std::move(msgs);
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = add_generation_prompt;
  ctx["bos_token"] = std::string(bos_token);
  ctx["eos_token"] = std::string(eos_token);
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) ctx[it.key()] = it.value();
  }
  return tmpl.render(ctx, limits);
}

}  // namespace weft
