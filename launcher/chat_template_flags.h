// --chat-template FILE and --chat-template-name NAME: which chat template a command renders with
// (generate --chat, batch, serve, chat-template).
//   --chat-template FILE       a Jinja file used instead of the model's templates
//   --chat-template-name NAME  one of the model's named templates (default "default")
// Without either, the model's "default" template is used; where the model keeps it and how
// conflicting copies are refused is tokenizer/chat_template_source.h.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/cli_args.h"
#include "launcher/flag_table.h"
#include "tokenizer/chat_template/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tool_calls/tool_call_format.h"

namespace weft {

std::vector<FlagSpec> chat_template_flag_specs();

// True when --chat-template or --chat-template-name was given.
bool chat_template_flags_given(const CliArgs& args);

enum class ChatTemplateNeed {
  kRequired,  // rendering is the command's job: no template is an error
  kOptional,  // chat is one feature among others: no template at all (and no flag) gives null
};

// The parsed template the flags pick for `tokenizer`'s model. Errors (InvalidArgument) name the
// flag or the file: both flags given; --chat-template FILE unreadable; an unknown
// --chat-template-name (listing the names the model has); conflicting sources (ending with how
// to choose one); a template syntax error (prefixed with the template's file). A model with
// templates but an unusable selection is an error even with kOptional: a server that silently
// lost its chat endpoint would be worse.
absl::StatusOr<std::shared_ptr<const ChatTemplate>> chat_template_from_flags(
    const CliArgs& args, const Tokenizer& tokenizer, ChatTemplateNeed need);

// --tool-call-parser NAME (serve, batch): how the model writes tool calls.
FlagSpec tool_call_parser_flag_spec();
// The flag's format, else the one `chat_template` shows (null template or none recognised:
// nullopt, and requests with tools then need tool_choice "none"). "mistral" with a template of
// the name form ("[ARGS]") is kMistralNamed. Errors name the flag.
absl::StatusOr<std::optional<ToolCallFormat>> tool_call_format_from_flags(const CliArgs& args,
                                                                          const ChatTemplate* chat_template);

}  // namespace weft
