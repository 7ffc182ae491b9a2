// Request bodies -> GrammarSpec (constrain/request_grammar.h): each spelling of each constraint,
// the parameter errors name, and one constraint at most.
#include "constrain/request_grammar.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

using json = nlohmann::json;

GrammarSpec spec_of(const json& body) {
  auto spec = grammar_spec_from_request(body);
  EXPECT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec.ok() && spec->has_value()) << body.dump();
  return spec.ok() && spec->has_value() ? **spec : GrammarSpec::any_json();
}

std::string error_of(const json& body) {
  auto spec = grammar_spec_from_request(body);
  EXPECT_FALSE(spec.ok()) << body.dump();
  return spec.ok() ? "" : std::string(spec.status().message());
}

TEST(RequestGrammarTest, EachSpellingGivesItsKindAndParameter) {
  const json schema = {{"type", "object"}};
  GrammarSpec s = spec_of({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}});
  EXPECT_EQ(s.kind(), GrammarKind::kJsonSchema);
  EXPECT_EQ(s.parameter(), "response_format.json_schema.schema");
  EXPECT_EQ(s.text(), schema.dump());
  EXPECT_TRUE(s.json_options().strict);
  s = spec_of({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"schema", schema}, {"strict", false}}}}}});
  EXPECT_FALSE(s.json_options().strict);
  EXPECT_EQ(spec_of({{"response_format", {{"type", "json_object"}}}}).kind(), GrammarKind::kAnyJson);
  EXPECT_EQ(spec_of({{"guided_json", schema.dump()}}).parameter(), "guided_json");
  EXPECT_EQ(spec_of({{"guided_regex", "a+"}}).kind(), GrammarKind::kRegex);
  EXPECT_EQ(spec_of({{"guided_choice", {"a", "b"}}}).choices(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(spec_of({{"guided_grammar", "root ::= \"a\""}}).kind(), GrammarKind::kEbnf);
  EXPECT_EQ(spec_of({{"structured_outputs", {{"regex", "b"}}}}).parameter(), "structured_outputs.regex");
  EXPECT_EQ(spec_of({{"structured_outputs", {{"choice", {"x"}}}}}).kind(), GrammarKind::kChoice);
  EXPECT_EQ(spec_of({{"structured_outputs", {{"json_object", true}}}}).kind(), GrammarKind::kAnyJson);
  const GrammarSpec fixed = spec_of({{"structured_outputs", {{"json", schema}, {"disable_any_whitespace", true}}}});
  EXPECT_EQ(fixed.json_options().whitespace, JsonWhitespace::kFixed);
  EXPECT_EQ(fixed.parameter(), "structured_outputs.json");
  // Bounded whitespace unless asked otherwise.
  EXPECT_EQ(spec_of({{"guided_json", schema}}).json_options().whitespace, JsonWhitespace::kBounded);
}

TEST(RequestGrammarTest, NoConstraintIsNone) {
  for (const json& body : {json::object(), json{{"response_format", {{"type", "text"}}}}, json{{"guided_json", nullptr}}}) {
    auto spec = grammar_spec_from_request(body);
    ASSERT_TRUE(spec.ok());
    EXPECT_FALSE(spec->has_value()) << body.dump();
  }
}

TEST(RequestGrammarTest, ErrorsNameTheParameter) {
  EXPECT_EQ(error_of({{"response_format", {{"type", "yaml"}}}}).rfind("response_format.type:", 0), 0u);
  EXPECT_EQ(error_of({{"response_format", {{"type", "json_schema"}}}}).rfind("response_format.json_schema:", 0), 0u);
  EXPECT_EQ(error_of({{"guided_regex", 5}}).rfind("guided_regex: expected a string", 0), 0u);
  EXPECT_EQ(error_of({{"guided_choice", json::array()}}).rfind("guided_choice:", 0), 0u);
  EXPECT_EQ(error_of({{"guided_choice", {1, 2}}}).rfind("guided_choice: expected strings", 0), 0u);
  EXPECT_EQ(error_of({{"structured_outputs", {{"yaml", "x"}}}}).rfind("structured_outputs.yaml: unknown field", 0), 0u);
  EXPECT_NE(error_of({{"structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}}}).find("only one constraint"),
            std::string::npos);
  EXPECT_NE(error_of({{"guided_regex", "a"}, {"response_format", {{"type", "json_object"}}}}).find("only one constraint"),
            std::string::npos);
  EXPECT_EQ(error_of({{"guided_whitespace_pattern", " "}}).rfind("guided_whitespace_pattern: not supported", 0), 0u);
}

}  // namespace
}  // namespace weft
