// Chat bodies with tools rendered the way weft serve renders them (render_chat_request: tools
// into the template, tool_calls arguments parsed into mappings, text parts joined) against
// transformers + jinja2 given what vLLM hands them, for Qwen 2.5's and Llama 3.1's real
// templates (data/tool_templates/generate_reference.py writes the reference).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "serving/openai_request.h"
#include "tests/unit/serving/serving_test_util.h"

namespace weft {
namespace {

using nlohmann::json;

const std::filesystem::path kData = std::filesystem::path(WEFT_SOURCE_DIR) / "tests/unit/serving/data/tool_templates";

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ServedModel model_with_template(const std::string& name) {
  ServedModel m;
  m.tokenizer = testing::qwen_tokenizer();
  auto tmpl = ChatTemplate::parse(read(kData / name / "chat_template.jinja"));
  EXPECT_TRUE(tmpl.ok()) << tmpl.status();
  m.chat_template = std::make_shared<ChatTemplate>(std::move(*tmpl));
  return m;
}

TEST(OpenAiToolTemplate, RenderingMatchesTransformers) {
  const json ref = json::parse(read(kData / "reference.json"));
  // The same file with its keys in order, as the server keeps the tools (tools_in_order).
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(read(kData / "reference.json"));
  int checked = 0;
  for (const json& c : ref["cases"]) {
    const std::string label = c["template"].get<std::string>() + " / " + c["body"].get<std::string>();
    const ServedModel m = model_with_template(c["template"]);
    const json& body = ref["bodies"][c["body"].get<std::string>()];
    const auto& body_in_order = ordered["bodies"][c["body"].get<std::string>()];
    const nlohmann::ordered_json* tools_in_order = body_in_order.contains("tools") ? &body_in_order["tools"] : nullptr;
    auto tools = tool_request_from_body(body, tools_in_order);
    ASSERT_TRUE(tools.ok()) << label << ": " << tools.status();
    auto got = render_chat_request(body, m, ChatOptions{}, *tools);
    if (c.contains("output")) {
      ASSERT_TRUE(std::holds_alternative<std::string>(got)) << label << ": " << std::get<ApiError>(got).message;
      EXPECT_EQ(std::get<std::string>(got), c["output"].get<std::string>()) << label;
    } else {
      ASSERT_TRUE(std::holds_alternative<ApiError>(got)) << label;
      EXPECT_EQ(std::get<ApiError>(got).message, "messages: " + c["error"].get<std::string>()) << label;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 12);
}

TEST(OpenAiToolTemplate, ServerKeepsTheToolsKeyOrder) {
  const std::string raw = R"({"messages": [], "tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "string"}}}}}]})";
  const auto tools = tools_in_order(raw);
  ASSERT_TRUE(tools.has_value());
  EXPECT_EQ((*tools)[0].dump(), R"({"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}}}}})");
  auto request = tool_request_from_body(json::parse(raw), &*tools);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->functions[0].parameters["properties"].begin().key(), "zeta");
  EXPECT_FALSE(tools_in_order(R"({"messages": []})").has_value());
}

TEST(OpenAiToolTemplate, ArgumentsThatAreNotJsonAreRefused) {
  const ServedModel m = model_with_template("qwen2_5");
  const json body = {{"messages",
                      {{{"role", "user"}, {"content", "x"}},
                       {{"role", "assistant"},
                        {"tool_calls", {{{"id", "c"}, {"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{oops"}}}}}}}}}};
  auto got = render_chat_request(body, m, ChatOptions{}, ToolRequest{});
  ASSERT_TRUE(std::holds_alternative<ApiError>(got));
  EXPECT_EQ(std::get<ApiError>(got).param, "messages");
  EXPECT_EQ(std::get<ApiError>(got).message, "messages[1].tool_calls[0].function.arguments: not valid JSON");
}

}  // namespace
}  // namespace weft
