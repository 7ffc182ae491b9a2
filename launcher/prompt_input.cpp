#include "launcher/prompt_input.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "launcher/chat_template_flags.h"

namespace weft {

std::vector<FlagSpec> prompt_flag_specs() {
  return {
      {"prompt", "TEXT", "text prompt (needs the model's tokenizer.json)"},
      {"prompt-ids", "1,2,3", "token ids instead of text"},
      {"chat", "", "wrap the prompt in a chat template (the model's unless --chat-template)"},
      {"system", "TEXT", "with --chat: a system message before the prompt"},
  };
}

namespace {

absl::StatusOr<std::string> render_messages(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                            const nlohmann::ordered_json& messages,
                                            const nlohmann::ordered_json& template_kwargs, ChatPromptEnd end) {
  if (!messages.is_array()) return absl::InvalidArgumentError("messages: expected an array");
  return render_chat(tmpl, messages, end, tokenizer.bos_token().value_or(""),
                           tokenizer.eos_token().value_or(""), template_kwargs);
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> encode_chat_messages(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                                          const nlohmann::ordered_json& messages,
                                                          const nlohmann::ordered_json& template_kwargs,
                                                          ChatPromptEnd end) {
  WEFT_ASSIGN_OR_RETURN(std::string text, render_messages(tokenizer, tmpl, messages, template_kwargs, end));
  return tokenizer.encode(text, /*add_special_tokens=*/false);
}

absl::StatusOr<std::string> render_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user_text, const std::string& system_text) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system_text.empty()) messages.push_back({{"role", "system"}, {"content", system_text}});
  messages.push_back({{"role", "user"}, {"content", user_text}});
  return render_messages(tokenizer, tmpl, messages, nlohmann::ordered_json(), ChatPromptEnd::kGenerationPrompt);
}

absl::StatusOr<PromptInput> prompt_from_flags(const CliArgs& args,
                                              const std::filesystem::path& model_dir) {
  PromptInput input;
  if (chat_template_flags_given(args) && !args.has("chat")) {
    return absl::InvalidArgumentError("--chat-template and --chat-template-name apply only with --chat");
  }
  if (args.has("prompt-ids")) {
    if (args.has("prompt")) return absl::InvalidArgumentError("give --prompt or --prompt-ids, not both");
    if (args.has("chat")) return absl::InvalidArgumentError("--chat needs --prompt TEXT, not --prompt-ids");
    WEFT_ASSIGN_OR_RETURN(input.ids, args.get_int_list("prompt-ids"));
    if (input.ids.empty()) return absl::InvalidArgumentError("--prompt-ids: no ids given");
    return input;
  }
  if (!args.has("prompt")) return absl::InvalidArgumentError("--prompt TEXT or --prompt-ids is required");
  WEFT_ASSIGN_OR_RETURN(input.tokenizer, Tokenizer::load(model_dir));
  const std::string text = *args.get("prompt");
  if (args.has("chat")) {
    auto tmpl = chat_template_from_flags(args, *input.tokenizer, ChatTemplateNeed::kRequired);
    if (!tmpl.ok()) return absl::InvalidArgumentError(absl::StrCat("--chat: ", tmpl.status().message()));
    WEFT_ASSIGN_OR_RETURN(input.text, render_chat_prompt(*input.tokenizer, **tmpl, text, args.get_or("system", "")));
    WEFT_ASSIGN_OR_RETURN(input.ids, input.tokenizer->encode(input.text, /*add_special_tokens=*/false));
  } else {
    input.text = text;
    WEFT_ASSIGN_OR_RETURN(input.ids, input.tokenizer->encode(text, /*add_special_tokens=*/true));
  }
  return input;
}

}  // namespace weft
