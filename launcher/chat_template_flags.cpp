#include "launcher/chat_template_flags.h"

#include "absl/strings/str_cat.h"

namespace weft {

std::vector<FlagSpec> chat_template_flag_specs() {
  return {
      {"chat-template", "FILE", "render with this Jinja chat template instead of the model's"},
      {"chat-template-name", "NAME",
       "which of the model's named chat templates (default \"default\")"},
  };
}

bool chat_template_flags_given(const CliArgs& args) {
  return args.has("chat-template") || args.has("chat-template-name");
}

absl::StatusOr<std::shared_ptr<const ChatTemplate>> chat_template_from_flags(
    const CliArgs& args, const Tokenizer& tokenizer, ChatTemplateNeed need) {
  absl::StatusOr<ChatTemplateSource> chosen;
  if (const auto file = args.get("chat-template")) {
    if (args.has("chat-template-name")) {
      return absl::InvalidArgumentError(
          "--chat-template-name picks one of the model's templates; it does not apply with "
          "--chat-template FILE");
    }
    auto sources = ChatTemplateSources::from_file(*file);
    if (!sources.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("--chat-template: ", sources.status().message()));
    chosen = sources->select(ChatTemplateSources::kDefaultName);
  } else {
    const ChatTemplateSources& sources = tokenizer.chat_templates();
    if (sources.empty() && need == ChatTemplateNeed::kOptional && !args.has("chat-template-name")) {
      return std::shared_ptr<const ChatTemplate>();
    }
    const std::string name =
        args.get_or("chat-template-name", std::string(ChatTemplateSources::kDefaultName));
    chosen = sources.select(name);
    if (!chosen.ok()) {
      const std::string message(chosen.status().message());
      switch (chosen.status().code()) {
        case absl::StatusCode::kFailedPrecondition:  // conflicting sources
          return absl::InvalidArgumentError(
              absl::StrCat(message, " (--chat-template FILE picks one)"));
        case absl::StatusCode::kNotFound:  // no template at all
          return absl::InvalidArgumentError(
              absl::StrCat(message, "; give one with --chat-template FILE"));
        default:  // an unknown name
          if (!args.has("chat-template-name")) {
            return absl::InvalidArgumentError(
                absl::StrCat(message, "; pick one with --chat-template-name NAME"));
          }
          return absl::InvalidArgumentError(
              absl::StrCat("--chat-template-name ", name, ": ", message));
      }
    }
  }
  if (!chosen.ok()) return chosen.status();
  auto parsed = ChatTemplate::parse(chosen->text);
  if (!parsed.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(chosen->origin, ": ", parsed.status().message()));
  return std::make_shared<const ChatTemplate>(*std::move(parsed));
}

FlagSpec tool_call_parser_flag_spec() {
  return {"tool-call-parser", "NAME",
          "how the model writes tool calls: hermes, llama3_json or mistral (default: judged from the "
          "chat template; none found: requests with tools need tool_choice \"none\")"};
}

absl::StatusOr<std::optional<ToolCallFormat>> tool_call_format_from_flags(const CliArgs& args,
                                                                          const ChatTemplate* chat_template) {
  if (args.has("tool-call-parser")) {
    auto format = tool_call_format_from_name(args.get_or("tool-call-parser", ""));
    if (!format.ok()) return format.status();
    // "mistral" covers both Mistral forms: the template says which one forced calls take.
    if (*format == ToolCallFormat::kMistral && chat_template != nullptr &&
        tool_call_format_of_template(chat_template->source()) == ToolCallFormat::kMistralNamed) {
      return std::optional<ToolCallFormat>(ToolCallFormat::kMistralNamed);
    }
    return std::optional<ToolCallFormat>(*format);
  }
  if (chat_template == nullptr) return std::optional<ToolCallFormat>();
  return tool_call_format_of_template(chat_template->source());
}

}  // namespace weft
