// Parser names and the format judged from real templates' text.
#include "tool_calls/tool_call_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace weft {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/" + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolCallFormat, Names) {
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    auto back = tool_call_format_from_name(tool_call_format_name(f));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, f);
  }
  auto bad = tool_call_format_from_name("pythonic");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::string(bad.status().message()).rfind("--tool-call-parser: ", 0), 0u);
}

TEST(ToolCallFormat, JudgedFromRealTemplates) {
  const std::string dir = "tests/unit/serving/data/tool_templates/";
  const std::string qwen = read(dir + "qwen2_5/chat_template.jinja");
  const std::string llama = read(dir + "llama3_1/chat_template.jinja");
  ASSERT_FALSE(qwen.empty());
  ASSERT_FALSE(llama.empty());
  EXPECT_EQ(tool_call_format_of_template(qwen), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_of_template(llama), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format_of_template("{{ bos_token }}[INST] x [/INST][TOOL_CALLS]"), ToolCallFormat::kMistral);
  // The later Mistral templates (v7 / v11+) write the name form,
  // [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}: still the "mistral" parser, but forced calls must
  // take that form.
  const ToolCallFormat named = *tool_call_format_of_template(
      "{%- for tool_call in message.tool_calls %}{{- '[TOOL_CALLS]' + "
      "tool_call.function.name }}{{- '[CALL_ID]' + tool_call.id }}{{- '[ARGS]' + "
      "tool_call['function']['arguments']|tojson }}{%- endfor %}");
  EXPECT_EQ(named, ToolCallFormat::kMistralNamed);
  EXPECT_STREQ(tool_call_format_name(named), "mistral");
  EXPECT_TRUE(is_mistral(named));
  EXPECT_EQ(tool_call_start_marker(named), "[TOOL_CALLS]");
  const std::string plain = read("configs/default-model/tokenizer_config.json");
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(tool_call_format_of_template(plain), std::nullopt);
}

}  // namespace
}  // namespace weft
