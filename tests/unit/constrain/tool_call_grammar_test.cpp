// The tool_choice grammars (tool_call_grammar.h) on real vocabularies: greedy walks over random
// logits always end in replies the format's parser reads as calls of the allowed functions,
// with arguments valid for their schemas (checked here for the schema's own rules).
#include "constrain/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "constrain/grammar_compiler.h"
#include "tests/unit/constrain/constrain_test_util.h"
#include "tool_calls/tool_call_parser.h"

namespace weft {
namespace {

using nlohmann::json;

json tools_json() {
  return json::array(
      {{{"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"parameters",
           {{"type", "object"},
            {"properties",
             {{"city", {{"type", "string"}, {"minLength", 1}, {"maxLength", 12}}},
              {"unit", {{"type", "string"}, {"enum", {"celsius", "fahrenheit"}}}}}},
            {"required", {"city"}}}}}}},
       {{"type", "function"}, {"function", {{"name", "get_time"}}}}});
}

ToolRequest request(json extra) {
  json body = {{"tools", tools_json()}};
  body.update(extra);
  auto r = tool_request_from_body(body);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

// The call's arguments hold to the test schemas.
void expect_valid_call(const ParsedToolCall& call, const std::string& text) {
  const json args = json::parse(call.arguments, nullptr, false);
  ASSERT_TRUE(args.is_object()) << text;
  if (call.name == "get_weather") {
    ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << text;
    const size_t len = args["city"].get<std::string>().size();
    EXPECT_GE(len, 1u);
    EXPECT_LE(len, 12u * 4) << text;  // at most 12 code points
    for (const auto& [k, v] : args.items()) {
      EXPECT_TRUE(k == "city" || k == "unit") << text;
      if (k == "unit") {
        EXPECT_TRUE(v == "celsius" || v == "fahrenheit") << text;
      }
    }
  } else {
    EXPECT_EQ(call.name, "get_time") << text;
    EXPECT_TRUE(args.empty()) << text;
  }
}

struct Case {
  std::string tokenizer;
  ToolCallFormat format;
};

class ToolCallGrammarWalks : public ::testing::TestWithParam<Case> {};

TEST_P(ToolCallGrammarWalks, RequiredAndNamedAlwaysParse) {
  const Case& c = GetParam();
  GrammarCompiler compiler(testing::load_vocabulary(c.tokenizer));
  struct Choice {
    json fields;
    size_t min_calls, max_calls;
    std::string only;  // the one function allowed ("" for any)
  };
  const std::vector<Choice> choices = {
      {{{"tool_choice", "required"}}, 1, 100, ""},
      {{{"tool_choice", "required"}, {"parallel_tool_calls", false}}, 1, 1, ""},
      {{{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}, 1, 1, "get_weather"},
  };
  for (const Choice& choice : choices) {
    auto spec = tool_call_grammar(c.format, request(choice.fields));
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_TRUE(spec->has_value());
    EXPECT_EQ((*spec)->parameter(), "tool_choice");
    auto grammar = compiler.compile(**spec);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    std::set<std::string> names;
    for (uint64_t seed = 0; seed < 6; ++seed) {
      const testing::Walk walk = testing::greedy_walk(*grammar, seed, 600, /*stop_bias=*/0.5f);
      ASSERT_TRUE(walk.terminated) << choice.fields << " seed " << seed << ": " << walk.bytes;
      const ParsedToolCalls parsed = parse_tool_calls(c.format, walk.bytes);
      EXPECT_EQ(parsed.content, "") << walk.bytes;
      EXPECT_GE(parsed.calls.size(), choice.min_calls) << walk.bytes;
      EXPECT_LE(parsed.calls.size(), choice.max_calls) << walk.bytes;
      for (const ParsedToolCall& call : parsed.calls) {
        if (!choice.only.empty()) {
          EXPECT_EQ(call.name, choice.only);
        }
        expect_valid_call(call, walk.bytes);
        names.insert(call.name);
      }
    }
    (void)names;
  }
}

// Written calls of each function: accepted when the choice allows them (and nothing after a
// single call when only one may be made), refused otherwise.
TEST_P(ToolCallGrammarWalks, AcceptsTheFormatsOwnCalls) {
  const Case& c = GetParam();
  const std::map<ToolCallFormat, std::vector<std::string>> calls = {
      {ToolCallFormat::kHermes,
       {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", "\n"}},
      {ToolCallFormat::kLlama3Json,
       {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
        "{\"name\": \"get_time\", \"parameters\": {}}", "; "}},
      {ToolCallFormat::kMistral,
       {"[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
        "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]", ", "}},
      {ToolCallFormat::kMistralNamed,
       {"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}", "[TOOL_CALLS]get_time[ARGS]{}", ""}},
  };
  const std::vector<std::string>& texts = calls.at(c.format);
  std::string both = texts[0] + texts[2] + texts[1];
  if (c.format == ToolCallFormat::kMistral) {
    both = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}, {\"name\": \"get_time\", "
           "\"arguments\": {}}]";
  }
  const auto tokenizer = testing::load_tokenizer(c.tokenizer);
  GrammarCompiler compiler(testing::load_vocabulary(c.tokenizer));
  auto accepts = [&](const json& fields, const std::string& text) {
    auto spec = tool_call_grammar(c.format, request(fields));
    EXPECT_TRUE(spec.ok() && spec->has_value());
    auto grammar = compiler.compile(**spec);
    EXPECT_TRUE(grammar.ok()) << grammar.status();
    GrammarMatcher matcher(*grammar);
    const std::vector<int32_t> ids = testing::encode(*tokenizer, text);
    return matcher.accept_tokens(ids) == ids.size() && matcher.is_completed();
  };
  const json required = {{"tool_choice", "required"}};
  const json single = {{"tool_choice", "required"}, {"parallel_tool_calls", false}};
  const json named = {{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}};
  EXPECT_TRUE(accepts(required, texts[0]));
  EXPECT_TRUE(accepts(required, texts[1]));
  EXPECT_TRUE(accepts(required, both));
  EXPECT_TRUE(accepts(single, texts[0]));
  EXPECT_FALSE(accepts(single, both));
  EXPECT_TRUE(accepts(named, texts[1]));
  EXPECT_FALSE(accepts(named, texts[0]));
  EXPECT_FALSE(accepts(required, "Sure. " + texts[0]));
  EXPECT_FALSE(accepts(required, ""));
}

TEST_P(ToolCallGrammarWalks, StrictAutoConstrainsCallsOnly) {
  const Case& c = GetParam();
  json strict_tools = tools_json();
  strict_tools[0]["function"]["strict"] = true;
  auto tools = tool_request_from_body({{"tools", strict_tools}});
  ASSERT_TRUE(tools.ok());
  auto spec = tool_call_grammar(c.format, *tools);
  if (c.format == ToolCallFormat::kLlama3Json) {
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(std::string(spec.status().message()).rfind("tools[0].function.strict: ", 0), 0u) << spec.status();
    return;
  }
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_TRUE(spec->has_value());
  GrammarCompiler compiler(testing::load_vocabulary(c.tokenizer));
  auto grammar = compiler.compile(**spec);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const testing::Walk walk = testing::greedy_walk(*grammar, seed, 60, /*stop_bias=*/0.2f);
    for (const ParsedToolCall& call : parse_tool_calls(c.format, walk.bytes).calls) expect_valid_call(call, walk.bytes);
  }
  // Text and calls are free until the marker; from the marker on the call follows the schema.
  const std::string open = c.format == ToolCallFormat::kHermes ? "<tool_call>\n" : "[TOOL_CALLS][";
  const std::string close = c.format == ToolCallFormat::kHermes ? "}\n</tool_call>" : "}]";
  std::string good = open + "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}" + close;
  std::string bad = open + "{\"name\": \"get_weather\", \"arguments\": {\"city\": 5}" + close;
  if (c.format == ToolCallFormat::kMistralNamed) {
    good = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}";
    bad = "[TOOL_CALLS]get_weather[ARGS]{\"city\": 5}";
  }
  const auto tokenizer = testing::load_tokenizer(c.tokenizer);
  auto accepts = [&](const std::string& text) {
    GrammarMatcher matcher(*grammar);
    const std::vector<int32_t> ids = testing::encode(*tokenizer, text);
    return matcher.accept_tokens(ids) == ids.size() && matcher.is_completed();
  };
  EXPECT_TRUE(accepts("And it was so."));
  EXPECT_TRUE(accepts("Sure. " + good));
  EXPECT_FALSE(accepts("Sure. " + bad));
  // Without strict functions "auto" has no grammar.
  auto free = tool_call_grammar(c.format, request(json::object()));
  ASSERT_TRUE(free.ok());
  EXPECT_FALSE(free->has_value());
}

INSTANTIATE_TEST_SUITE_P(Formats, ToolCallGrammarWalks,
                         ::testing::Values(Case{"default-model", ToolCallFormat::kHermes},
                                           Case{"default-model", ToolCallFormat::kLlama3Json},
                                           Case{"default-model", ToolCallFormat::kMistral},
                                           Case{"default-model", ToolCallFormat::kMistralNamed},
                                           Case{"qwen3", ToolCallFormat::kHermes}),
                         [](const auto& info) {
                           return std::string(info.param.tokenizer == "qwen3" ? "qwen3_" : "default_") +
                                  tool_call_format_name(info.param.format) +
                                  (info.param.format == ToolCallFormat::kMistralNamed ? "_named" : "");
                         });

}  // namespace
}  // namespace weft
