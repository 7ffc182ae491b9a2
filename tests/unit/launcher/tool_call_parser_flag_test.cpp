// --tool-call-parser and the chat template together (launcher/chat_template_flags.h): which
// tool-call format serve and batch use, Mistral's two forms included.
#include <gtest/gtest.h>

#include "launcher/chat_template_flags.h"
#include "launcher/cli_args.h"
#include "tokenizer/chat_template/chat_template.h"

namespace weft {
namespace {

constexpr const char* kNamedTemplate =
    "{%- for m in messages %}{%- for c in m.tool_calls or [] %}{{- '[TOOL_CALLS]' + c.function.name }}"
    "{{- '[ARGS]' + c.function.arguments|tojson }}{%- endfor %}{%- endfor %}";
constexpr const char* kListTemplate =
    "{%- for m in messages %}{%- if m.tool_calls %}{{- '[TOOL_CALLS]' + m.tool_calls|tojson }}"
    "{%- endif %}{%- endfor %}";

std::optional<ToolCallFormat> format_of(std::vector<std::string> args, const char* source) {
  auto cli = CliArgs::parse(args, {"tool-call-parser"}, {});
  EXPECT_TRUE(cli.ok()) << cli.status();
  std::optional<ChatTemplate> chat_template;
  if (source != nullptr) {
    auto parsed = ChatTemplate::parse(source);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    chat_template.emplace(*std::move(parsed));
  }
  auto format = tool_call_format_from_flags(*cli, chat_template ? &*chat_template : nullptr);
  EXPECT_TRUE(format.ok()) << format.status();
  return format.ok() ? *format : std::nullopt;
}

TEST(ToolCallParserFlag, MistralTakesTheFormTheTemplateWrites) {
  EXPECT_EQ(format_of({}, kNamedTemplate), ToolCallFormat::kMistralNamed);
  EXPECT_EQ(format_of({}, kListTemplate), ToolCallFormat::kMistral);
  EXPECT_EQ(format_of({"--tool-call-parser", "mistral"}, kNamedTemplate), ToolCallFormat::kMistralNamed);
  EXPECT_EQ(format_of({"--tool-call-parser", "mistral"}, kListTemplate), ToolCallFormat::kMistral);
  EXPECT_EQ(format_of({"--tool-call-parser", "mistral"}, nullptr), ToolCallFormat::kMistral);
  // The flag wins over the template for other formats.
  EXPECT_EQ(format_of({"--tool-call-parser", "hermes"}, kNamedTemplate), ToolCallFormat::kHermes);
  EXPECT_EQ(format_of({}, nullptr), std::nullopt);
}

}  // namespace
}  // namespace weft
