// How the CLI turns flags into prompt token ids: --prompt-ids as given, --prompt TEXT through the
// model's tokenizer, or --chat / --system through its chat template first.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace weft {

std::set<std::string> prompt_value_flags();  // prompt, prompt-ids, system
std::set<std::string> prompt_bool_flags();    // chat
const char* prompt_flags_help();

struct PromptInput {
  std::vector<int32_t> ids;
  std::shared_ptr<const Tokenizer> tokenizer;  // null in --prompt-ids mode
};

absl::StatusOr<PromptInput> prompt_from_flags(const CliArgs& args,
                                              const std::filesystem::path& model_dir);

// Renders [{system}, {user: text}] with the model's chat template (add_generation_prompt) and
// encodes it without adding special tokens again (as transformers' apply_chat_template does).
absl::StatusOr<std::vector<int32_t>> encode_chat(const Tokenizer& tokenizer,
                                                 const std::string& user_text,
                                                 const std::string& system_text);

// Renders an OpenAI messages array ([{"role", "content"}, ...]) with the model's chat template
// (add_generation_prompt; `template_kwargs`' members as extra template variables) and encodes it
// the same way. InvalidArgument when the tokenizer has no chat template, `messages` is not an
// array, or the template fails (its message says where).
absl::StatusOr<std::vector<int32_t>> encode_chat_messages(
    const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
    const nlohmann::ordered_json& template_kwargs = nlohmann::ordered_json());

}  // namespace weft
