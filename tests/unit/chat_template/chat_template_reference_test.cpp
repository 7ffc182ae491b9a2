// Renders every template x conversation x add_generation_prompt case and every feature snippet
// recorded by data/generate_reference.py (Hugging Face transformers + jinja2) and requires
// byte-identical output, or a failure where Python failed (with raise_exception's exact message).
#include <gtest/gtest.h>

#include <map>

#include "tokenizer/chat_template/chat_template.h"
#include "tests/unit/chat_template/test_util.h"

namespace weft {
namespace {

using ojson = nlohmann::ordered_json;

const ojson& reference() {
  static const ojson ref = ojson::parse(testing::read_file(testing::data_path("reference.json")));
  return ref;
}

ChatTemplateLimits fixed_clock_limits() {
  ChatTemplateLimits limits;
  limits.now = testing::fixed_now;
  return limits;
}

std::string template_source(const ojson& info) {
  std::string file = info["file"].get<std::string>();
  std::string text = testing::read_file(testing::data_path(file));
  if (file.size() > 5 && file.substr(file.size() - 5) == ".json") {
    return ojson::parse(text)["chat_template"].get<std::string>();
  }
  return text;
}

// Checks a render result against a reference entry ({"output"} or {"error_type", "error"}).
void expect_matches(const absl::StatusOr<std::string>& got, const ojson& want, const std::string& label) {
  if (want.contains("output")) {
    ASSERT_TRUE(got.ok()) << label << ": " << got.status();
    EXPECT_EQ(*got, want["output"].get<std::string>()) << label;
    return;
  }
  ASSERT_FALSE(got.ok()) << label << ": expected " << want["error_type"] << " (" << want["error"]
                         << "), got output:\n"
                         << *got;
  if (want["error_type"] == "TemplateError") {
    EXPECT_EQ(got.status().message(), want["error"].get<std::string>()) << label;
    EXPECT_TRUE(got.status().GetPayload(jinja::kRaiseExceptionPayload).has_value()) << label;
  }
}

TEST(ChatTemplateReference, AllTemplatesParse) {
  for (const auto& [name, info] : reference()["templates"].items()) {
    auto t = ChatTemplate::parse(template_source(info));
    EXPECT_TRUE(t.ok()) << name << ": " << t.status();
  }
}

TEST(ChatTemplateReference, ConversationsMatchTransformers) {
  const ojson& ref = reference();
  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, info] : ref["templates"].items()) {
    auto t = ChatTemplate::parse(template_source(info));
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    templates.emplace(name, std::move(*t));
  }
  int checked = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["template"].get<std::string>();
    const std::string conv = c["conversation"].get<std::string>();
    const bool agp = c["add_generation_prompt"].get<bool>();
    const ojson& info = ref["templates"][name];
    const ojson& conversation = ref["conversations"][conv];
    auto got = render_chat(templates.at(name), conversation["messages"], agp, info["bos_token"].get<std::string>(),
                           info["eos_token"].get<std::string>(), conversation["extra"], fixed_clock_limits());
    expect_matches(got, c, name + " / " + conv + " / add_generation_prompt=" + (agp ? "true" : "false"));
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

// apply_chat_template(continue_final_message=True): the prompt ends inside the final message.
TEST(ChatTemplateReference, ContinueFinalMessageMatchesTransformers) {
  const ojson& ref = reference();
  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, info] : ref["templates"].items()) {
    auto t = ChatTemplate::parse(template_source(info));
    ASSERT_TRUE(t.ok()) << name << ": " << t.status();
    templates.emplace(name, std::move(*t));
  }
  int checked = 0, continued = 0;
  for (const auto& c : ref["continue_final_message_cases"]) {
    const std::string name = c["template"].get<std::string>();
    const std::string conv = c["conversation"].get<std::string>();
    const ojson& info = ref["templates"][name];
    const ojson& conversation = ref["conversations"][conv];
    auto got = render_chat(templates.at(name), conversation["messages"], ChatPromptEnd::kContinueFinalMessage,
                           info["bos_token"].get<std::string>(), info["eos_token"].get<std::string>(),
                           conversation["extra"], fixed_clock_limits());
    expect_matches(got, c, name + " / " + conv + " / continue_final_message");
    if (c.contains("output")) ++continued;
    ++checked;
  }
  EXPECT_GE(checked, 100);
  EXPECT_GE(continued, 80);
}

TEST(ChatTemplateReference, SnippetsMatchJinja2) {
  const ojson& ref = reference();
  const ojson& ctx = ref["snippet_context"];
  for (const auto& s : ref["snippets"]) {
    const std::string src = s["template"].get<std::string>();
    auto t = ChatTemplate::parse(src);
    absl::StatusOr<std::string> got = t.ok() ? t->render(ctx, fixed_clock_limits()) : t.status();
    expect_matches(got, s, "snippet: " + src);
  }
}

TEST(ChatTemplateReference, PlainJsonContextSortsKeys) {
  // nlohmann::json (std::map) objects iterate in sorted key order; ordered_json keeps insertion order.
  auto t = ChatTemplate::parse("{{ d | tojson }}");
  ASSERT_TRUE(t.ok());
  nlohmann::json plain = {{"d", {{"b", 1}, {"a", 2}}}};
  auto got = t->render(plain);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, R"({"a": 2, "b": 1})");
  ojson ordered = ojson::parse(R"({"d": {"b": 1, "a": 2}})");
  got = t->render(ordered);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, R"({"b": 1, "a": 2})");
}

}  // namespace
}  // namespace weft
