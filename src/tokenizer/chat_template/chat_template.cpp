#include "tokenizer/chat_template/chat_template.h"

#include "absl/status/status.h"
#include "tokenizer/chat_template/parser.h"
#include "tokenizer/chat_template/unicode_text.h"

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

namespace {

// transformers' _normalize_chat_messages and _alias_reasoning_fields, over a copy.
absl::StatusOr<nlohmann::ordered_json> normalized_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) return absl::InvalidArgumentError("render_chat: messages must be a JSON array");
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
  return msgs;
}

absl::StatusOr<std::string> render_normalized(const ChatTemplate& tmpl, nlohmann::ordered_json msgs,
                                              bool add_generation_prompt, std::string_view bos_token,
                                              std::string_view eos_token, const nlohmann::ordered_json& extra,
                                              const ChatTemplateLimits& limits) {
  if (!extra.is_null() && !extra.is_object()) return absl::InvalidArgumentError("render_chat: extra must be a JSON object");
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

// transformers' continue_final_message_tag (render_jinja_template).
constexpr std::string_view kContinueTag = "CONTINUE_FINAL_MESSAGE_TAG ";

absl::StatusOr<std::string> render_continuing_final(const ChatTemplate& tmpl, nlohmann::ordered_json msgs,
                                                    std::string_view bos_token, std::string_view eos_token,
                                                    const nlohmann::ordered_json& extra,
                                                    const ChatTemplateLimits& limits) {
  if (msgs.empty()) return absl::InvalidArgumentError("continue_final_message is set but the conversation is empty!");
  nlohmann::ordered_json& last = msgs.back();
  if (!last.contains("content")) {
    return absl::InvalidArgumentError(
        "continue_final_message is set but the final message has no \"content\" to continue!");
  }
  if (tmpl.source().find("content") == std::string::npos) {
    return absl::InvalidArgumentError(
        "continue_final_message is set to \"content\" but this is not an accepted field in the chat_template");
  }
  const std::string not_text = "continue_final_message is set but the final message's content is not text";
  std::string final_message;
  nlohmann::ordered_json& content = last["content"];
  if (content.is_array()) {
    // The last part with a "text" key (Python's `"text" in block`, which for a string part is a
    // substring test; its `block["text"]` then fails).
    bool found = false;
    for (auto it = content.rbegin(); it != content.rend() && !found; ++it) {
      if (it->is_object() && it->contains("text")) {
        nlohmann::ordered_json& text = (*it)["text"];
        if (!text.is_string()) return absl::InvalidArgumentError(not_text);
        final_message = text.get<std::string>();
        text = final_message + std::string(kContinueTag);
        found = true;
      } else if (it->is_string() && it->get_ref<const std::string&>().find("text") != std::string::npos) {
        return absl::InvalidArgumentError(not_text);
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          "continue_final_message is set but we could not find any text to continue in the final message!");
    }
  } else if (content.is_string()) {
    final_message = content.get<std::string>();
    content = final_message + std::string(kContinueTag);
  } else {
    return absl::InvalidArgumentError(not_text);
  }
  auto rendered = render_normalized(tmpl, std::move(msgs), /*add_generation_prompt=*/false, bos_token, eos_token,
                                    extra, limits);
  if (!rendered.ok()) return rendered.status();
  std::string& out = *rendered;
  const std::string stripped = jinja::py_strip(final_message, nullptr, true, true);
  const std::string_view marker = kContinueTag.substr(0, kContinueTag.size() - 1);
  const size_t tag = out.rfind(marker);
  if (out.find(stripped) == std::string::npos || tag == std::string::npos) {
    return absl::InvalidArgumentError(
        "continue_final_message is set but the final message does not appear in the chat after applying the chat "
        "template! This can happen if the chat template deletes portions of the final message. Please verify the "
        "chat template and final message in your chat to ensure they are compatible.");
  }
  if (out.compare(tag, kContinueTag.size(), kContinueTag) == 0) {
    // The template keeps the content as given, trailing space included.
    out.resize(tag);
  } else {
    // The template trimmed the content (and the marker's space): trim what precedes it too.
    out = jinja::py_strip(std::string_view(out).substr(0, tag), nullptr, false, true);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                        bool add_generation_prompt, std::string_view bos_token,
                                        std::string_view eos_token, const nlohmann::ordered_json& extra,
                                        const ChatTemplateLimits& limits) {
  return render_chat(tmpl, messages,
                     add_generation_prompt ? ChatPromptEnd::kGenerationPrompt : ChatPromptEnd::kNone, bos_token,
                     eos_token, extra, limits);
}

absl::StatusOr<std::string> render_chat(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                        ChatPromptEnd end, std::string_view bos_token, std::string_view eos_token,
                                        const nlohmann::ordered_json& extra, const ChatTemplateLimits& limits) {
  auto msgs = normalized_messages(messages);
  if (!msgs.ok()) return msgs.status();
  if (!extra.is_null() && !extra.is_object()) return absl::InvalidArgumentError("render_chat: extra must be a JSON object");
  if (end == ChatPromptEnd::kContinueFinalMessage) {
    return render_continuing_final(tmpl, std::move(*msgs), bos_token, eos_token, extra, limits);
  }
  return render_normalized(tmpl, std::move(*msgs), end == ChatPromptEnd::kGenerationPrompt, bos_token, eos_token,
                           extra, limits);
}

}  // namespace weft
