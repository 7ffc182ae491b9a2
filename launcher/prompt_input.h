// How the CLI turns flags into prompt token ids: --prompt-ids as given, --prompt TEXT through the
// model's tokenizer, or --chat / --system through a chat template first (the model's, or the one
// --chat-template / --chat-template-name pick: launcher/chat_template_flags.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"
#include "nlohmann/json.hpp"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace weft {

// prompt, prompt-ids, chat, system.
std::vector<FlagSpec> prompt_flag_specs();

struct PromptInput {
  std::vector<int32_t> ids;
  std::shared_ptr<const Tokenizer> tokenizer;  // null in --prompt-ids mode
  std::string text;  // the text the ids encode (after the chat template); empty with --prompt-ids
};

// Errors name the flag: neither or both of --prompt / --prompt-ids, --chat-template(-name)
// without --chat, the chat template errors of chat_template_from_flags.
absl::StatusOr<PromptInput> prompt_from_flags(const CliArgs& args,
                                              const std::filesystem::path& model_dir);

// Renders [{system}, {user: text}] with `tmpl` (add_generation_prompt): the text that is then
// encoded without adding special tokens again (as transformers' apply_chat_template does).
absl::StatusOr<std::string> render_chat_prompt(const Tokenizer& tokenizer, const ChatTemplate& tmpl,
                                        const std::string& user_text, const std::string& system_text);

// Renders an OpenAI messages array ([{"role", "content"}, ...]) with `tmpl` (ending as `end`
// says: a generation prompt by default; `template_kwargs`' members as extra template variables)
// and encodes it the same way. InvalidArgument when `messages` is not an array or the template
// fails (its message says where).
absl::StatusOr<std::vector<int32_t>> encode_chat_messages(
    const Tokenizer& tokenizer, const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
    const nlohmann::ordered_json& template_kwargs = nlohmann::ordered_json(),
    ChatPromptEnd end = ChatPromptEnd::kGenerationPrompt);

}  // namespace weft
