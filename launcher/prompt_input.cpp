#include "launcher/prompt_input.h"

#include "core/status_macros.h"
#include "tokenizer/chat_template/chat_template.h"

namespace weft {

std::set<std::string> prompt_value_flags() { return {"prompt", "prompt-ids", "system"}; }
std::set<std::string> prompt_bool_flags() { return {"chat"}; }

const char* prompt_flags_help() {
  return "  --prompt TEXT                   text prompt (needs the model's tokenizer.json)\n"
         "  --chat [--system TEXT]          wrap the prompt in the model's chat template\n"
         "  --prompt-ids 1,2,3              token ids instead of text\n";
}

absl::StatusOr<std::vector<int32_t>> encode_chat_messages(const Tokenizer& tokenizer,
                                                          const nlohmann::ordered_json& messages,
                                                          const nlohmann::ordered_json& template_kwargs) {
  if (tokenizer.chat_template().empty()) {
    return absl::InvalidArgumentError("the model's tokenizer_config.json has no chat_template");
  }
  if (!messages.is_array()) return absl::InvalidArgumentError("messages: expected an array");
  WEFT_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::parse(tokenizer.chat_template()));
  WEFT_ASSIGN_OR_RETURN(std::string text,
                        render_chat(tmpl, messages, /*add_generation_prompt=*/true,
                                    tokenizer.bos_token().value_or(""),
                                    tokenizer.eos_token().value_or(""), template_kwargs));
  return tokenizer.encode(text, /*add_special_tokens=*/false);
}

absl::StatusOr<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer,
                                                 const std::string& user_text,
                                                 const std::string& system_text) {
  if (tokenizer.chat_template().empty()) {
    return absl::InvalidArgumentError("--chat: the model's tokenizer_config.json has no chat_template");
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system_text.empty()) messages.push_back({{"role", "system"}, {"content", system_text}});
  messages.push_back({{"role", "user"}, {"content", user_text}});
  return encode_chat_messages(tokenizer, messages);
}

absl::StatusOr<PromptInput> prompt_from_flags(const CliArgs& args,
                                              const std::filesystem::path& model_dir) {
  PromptInput input;
  if (args.has("prompt-ids")) {
    if (args.has("prompt")) return absl::InvalidArgumentError("give --prompt or --prompt-ids, not both");
    WEFT_ASSIGN_OR_RETURN(input.ids, args.get_int_list("prompt-ids"));
    if (input.ids.empty()) return absl::InvalidArgumentError("--prompt-ids: no ids given");
    return input;
  }
  if (!args.has("prompt")) return absl::InvalidArgumentError("--prompt TEXT or --prompt-ids is required");
  WEFT_ASSIGN_OR_RETURN(input.tokenizer, Tokenizer::load(model_dir));
  const std::string text = *args.get("prompt");
  if (args.has("chat")) {
    WEFT_ASSIGN_OR_RETURN(input.ids, encode_chat(*input.tokenizer, text, args.get_or("system", "")));
  } else {
    WEFT_ASSIGN_OR_RETURN(input.ids, input.tokenizer->encode(text, /*add_special_tokens=*/true));
  }
  return input;
}

}  // namespace weft
