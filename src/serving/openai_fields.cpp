#include "serving/openai_fields.h"

#include "absl/strings/str_cat.h"
#include "core/json_access.h"
#include "sampling/sampling_params.h"

namespace weft {
namespace {

using nlohmann::json;

std::optional<FieldError> read_bool(const json& body, const char* name, std::optional<bool>& out) {
  const json* v = json_member(body, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return FieldError{name, absl::StrCat(name, ": expected a boolean, got ", v->type_name())};
  out = v->get<bool>();
  return std::nullopt;
}

bool is_false(const json& v) { return v == false; }
bool is_empty_array(const json& v) { return v.is_array() && v.empty(); }
bool is_none_or_auto(const json& v) { return v == "none" || v == "auto"; }

// A field refused unless absent, null or `harmless`.
struct Refused {
  const char* name;
  bool (*harmless)(const json&);  // null: any value is refused
  const char* why;
};

// Common to both APIs.
constexpr Refused kRefused[] = {
    {"functions", is_empty_array, "the legacy function calling is not supported; use tools"},
    {"function_call", is_none_or_auto, "the legacy function calling is not supported; use tool_choice"},
    {"allowed_token_ids", nullptr, "not supported"},
    {"logits_processors", is_empty_array, "not supported"},
    {"use_beam_search", is_false, "beam search is not supported"},
    {"include_stop_str_in_output", is_false, "not supported; the stop string is never included"},
    {"truncate_prompt_tokens", nullptr, "prompt truncation is not supported"},
    {"return_tokens_as_token_ids", is_false, "not supported"},
    {"modalities", [](const json& v) { return v == json::array({"text"}); }, "only [\"text\"] is supported"},
    {"audio", nullptr, "audio output is not supported"},
    {"web_search_options", nullptr, "web search is not supported"},
    {"reasoning_effort", nullptr,
     "not supported; give it in chat_template_kwargs if the model's chat template reads it"},
    {"spaces_between_special_tokens", [](const json& v) { return v == true; }, "only true is supported"},
};

// vLLM's history rule (transformers' templates expect it): an assistant message's
// tool_calls[j].function.arguments arrive as a JSON string in the API and are handed to the
// template as the value they hold; null or "" become {}.
std::optional<FieldError> tool_call_arguments_as_mappings(nlohmann::ordered_json& msg, const std::string& where) {
  auto calls = msg.find("tool_calls");
  if (calls == msg.end() || calls->is_null()) return std::nullopt;
  if (!calls->is_array()) return FieldError{"messages", absl::StrCat(where, ".tool_calls: expected an array")};
  for (size_t j = 0; j < calls->size(); ++j) {
    const std::string at = absl::StrCat(where, ".tool_calls[", j, "]");
    nlohmann::ordered_json& call = (*calls)[j];
    auto fn = call.is_object() ? call.find("function") : call.end();
    if (fn == call.end() || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      return FieldError{"messages", absl::StrCat(at, ": expected {\"id\", \"type\": \"function\", \"function\": "
                                                     "{\"name\", \"arguments\"}}")};
    }
    nlohmann::ordered_json& args = (*fn)["arguments"];
    if (args.is_null() || args == "") {
      args = nlohmann::ordered_json::object();
    } else if (args.is_string()) {
      auto parsed = nlohmann::ordered_json::parse(args.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) {
        return FieldError{"messages", absl::StrCat(at, ".function.arguments: not valid JSON")};
      }
      args = std::move(parsed);
    } else if (!args.is_object()) {
      return FieldError{"messages", absl::StrCat(at, ".function.arguments: expected a JSON string")};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> tool_fields_unsupported(const json& body, const std::string& why) {
  for (const char* name : {"tools", "tool_choice"}) {
    const json* v = json_member(body, name);
    if (v == nullptr) continue;
    if (std::string(name) == "tools" ? is_empty_array(*v) : is_none_or_auto(*v)) continue;
    return FieldError{name, absl::StrCat(name, ": ", why)};
  }
  return std::nullopt;
}

std::optional<FieldError> chat_messages_for_template(const json& messages, nlohmann::ordered_json& out) {
  if (!messages.is_array() || messages.empty()) {
    return FieldError{"messages", "messages: expected a non-empty array of {role, content} objects"};
  }
  out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& msg = messages[i];
    const std::string where = absl::StrCat("messages[", i, "]");
    if (!msg.is_object()) return FieldError{"messages", absl::StrCat(where, ": expected an object")};
    const json* role = json_member(msg, "role");
    if (role == nullptr || !role->is_string()) {
      return FieldError{"messages", absl::StrCat(where, ".role: expected a string")};
    }
    nlohmann::ordered_json rendered = to_ordered_json(msg);
    if (auto err = tool_call_arguments_as_mappings(rendered, where)) return err;
    const json* content = json_member(msg, "content");
    if (content != nullptr && content->is_array()) {
      std::string text;
      for (size_t j = 0; j < content->size(); ++j) {
        const json& part = (*content)[j];
        const json* type = part.is_object() ? json_member(part, "type") : nullptr;
        const json* t = part.is_object() ? json_member(part, "text") : nullptr;
        if (type == nullptr || *type != "text" || t == nullptr || !t->is_string()) {
          return FieldError{"messages", absl::StrCat(where, ".content[", j,
                                                     "]: only {\"type\": \"text\", \"text\": ...} parts are supported")};
        }
        if (j > 0) text += '\n';
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

std::optional<FieldError> chat_options(const json& body, ChatOptions& out) {
  std::optional<bool> add_generation_prompt, continue_final_message, echo;
  if (auto e = read_bool(body, "add_generation_prompt", add_generation_prompt)) return e;
  if (auto e = read_bool(body, "continue_final_message", continue_final_message)) return e;
  if (auto e = read_bool(body, "echo", echo)) return e;
  const bool cont = continue_final_message.value_or(false);
  if (cont && add_generation_prompt.value_or(false)) {
    return FieldError{"continue_final_message",
                      "continue_final_message: cannot be true together with add_generation_prompt true (a "
                      "generation prompt opens a new message, continue_final_message extends the last one)"};
  }
  out.prompt_end = cont ? ChatPromptEnd::kContinueFinalMessage
                        : (add_generation_prompt.value_or(true) ? ChatPromptEnd::kGenerationPrompt : ChatPromptEnd::kNone);
  out.echo = echo.value_or(false);
  return std::nullopt;
}

std::optional<FieldError> chat_template_extra(const json& body, nlohmann::ordered_json& extra) {
  extra = nlohmann::ordered_json::object();
  if (const json* docs = json_member(body, "documents")) {
    if (!docs->is_array()) return FieldError{"documents", "documents: expected an array of objects"};
    for (size_t i = 0; i < docs->size(); ++i) {
      if (!(*docs)[i].is_object()) return FieldError{"documents", absl::StrCat("documents[", i, "]: expected an object")};
    }
    extra["documents"] = to_ordered_json(*docs);
  }
  if (const json* kw = json_member(body, "chat_template_kwargs")) {
    if (!kw->is_object()) return FieldError{"chat_template_kwargs", "chat_template_kwargs: expected an object"};
    const nlohmann::ordered_json kwargs = to_ordered_json(*kw);
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) extra[it.key()] = it.value();
  }
  return std::nullopt;
}

std::string chat_reply_role(const nlohmann::ordered_json& messages, const ChatOptions& options) {
  if (options.prompt_end == ChatPromptEnd::kGenerationPrompt || messages.empty()) return "assistant";
  return messages.back().value("role", std::string("assistant"));
}

std::string chat_echo_text(const nlohmann::ordered_json& messages, const std::string& role) {
  if (messages.empty()) return "";
  const auto& last = messages.back();
  if (last.value("role", std::string()) != role) return "";
  auto it = last.find("content");
  return it != last.end() && it->is_string() ? it->get<std::string>() : "";
}

const char* constraint_field(const json& body) {
  if (!body.is_object()) return nullptr;
  for (const char* name : {"response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
                           "guided_grammar", "guided_whitespace_pattern"}) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) continue;
    if (std::string(name) == "response_format" && it->is_object() && it->value("type", json()) == "text") continue;
    return name;
  }
  return nullptr;
}

std::optional<FieldError> unsupported_field(const json& body, bool chat) {
  for (const Refused& r : kRefused) {
    const json* v = json_member(body, r.name);
    if (v != nullptr && (r.harmless == nullptr || !r.harmless(*v))) {
      return FieldError{r.name, absl::StrCat(r.name, ": ", r.why)};
    }
  }
  if (chat) {
    if (json_member(body, "chat_template") != nullptr) {
      return FieldError{"chat_template",
                        "chat_template: per-request chat templates are not accepted; start the server with "
                        "--chat-template FILE"};
    }
  } else {
    if (json_member(body, "suffix") != nullptr) return FieldError{"suffix", "suffix: not supported"};
    if (auto e = tool_fields_unsupported(body, "tool calling is a chat completions feature")) return e;
  }
  if (const json* so = json_member(body, "stream_options"); so != nullptr && so->is_object()) {
    if (const json* cu = json_member(*so, "continuous_usage_stats"); cu != nullptr && *cu != false) {
      return FieldError{"stream_options", "stream_options.continuous_usage_stats: not supported"};
    }
  }
  if (const json* best_of = json_member(body, "best_of")) {
    const json* n = json_member(body, "n");
    if (*best_of != (n != nullptr ? *n : json(1))) {
      return FieldError{"best_of", "best_of: only best_of == n is supported"};
    }
  }
  return std::nullopt;
}

std::optional<FieldError> bad_words_field(const json& body, std::shared_ptr<const BannedPhraseSet>& out) {
  out.reset();
  const json* v = json_member(body, "bad_words");
  if (v == nullptr || is_empty_array(*v)) return std::nullopt;
  if (!v->is_array()) return FieldError{"bad_words", "bad_words: expected an array of strings"};
  if (v->size() > kMaxBadWords) {
    return FieldError{"bad_words", absl::StrCat("bad_words: ", v->size(), " words, at most ", kMaxBadWords,
                                                " are allowed")};
  }
  std::vector<std::string> words;
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return FieldError{"bad_words", absl::StrCat("bad_words[", i, "]: expected a string, got ", (*v)[i].type_name())};
    }
    words.push_back((*v)[i].get<std::string>());
  }
  BannedPhraseLimits limits;
  limits.max_phrases = kMaxBadWords;
  limits.max_phrase_bytes = kMaxBadWordBytes;
  auto compiled = BannedPhraseSet::compile(words, "bad_words", limits);
  if (!compiled.ok()) return FieldError{"bad_words", std::string(compiled.status().message())};
  out = *std::move(compiled);
  return std::nullopt;
}

std::vector<std::shared_ptr<const BannedPhraseSet>> banned_phrase_lists(std::shared_ptr<const BannedPhraseSet> server,
                                                                        std::shared_ptr<const BannedPhraseSet> request) {
  std::vector<std::shared_ptr<const BannedPhraseSet>> lists;
  for (auto& list : {std::move(server), std::move(request)}) {
    if (list != nullptr) lists.push_back(list);
  }
  return lists;
}

std::optional<FieldError> prompt_logprobs_field(const json& body, std::optional<int>& out) {
  out.reset();
  const json* v = json_member(body, "prompt_logprobs");
  if (v == nullptr) return std::nullopt;
  constexpr int kMax = SamplingParams::kMaxLogprobs;  // vLLM's --max-logprobs default, 20
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > kMax ||
      (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(kMax))) {
    return FieldError{"prompt_logprobs",
                      absl::StrCat("prompt_logprobs: expected an integer in [0, ", kMax, "], got ", v->dump())};
  }
  out = static_cast<int>(v->get<int64_t>());
  return std::nullopt;
}

}  // namespace weft
