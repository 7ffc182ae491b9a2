// The bounded JSON reader: the same DOM as nlohmann's parser on ordinary documents, every limit
// enforced while parsing (a document past a limit is refused without being built), and repeated
// keys refused or kept-last as asked.
#include "core/bounded_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace weft {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
using nlohmann::ordered_json;

std::string error_of(std::string_view text, const JsonLimits& limits = {}) {
  auto parsed = parse_json_bounded<json>(text, "doc.json", limits);
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(BoundedJsonTest, BuildsTheSameDomAsNlohmann) {
  const std::string text =
      R"({"a": [1, -2, 3.5, 18446744073709551615, true, false, null, "s\u00e9"], "b": {"c": {}, "d": []},)"
      R"( "e": "x", "0": [[[]]], "big": 1e300})";
  auto parsed = parse_json_bounded<json>(text, "doc.json", {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, json::parse(text));
  auto ordered = parse_json_bounded<ordered_json>(text, "doc.json", {});
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  EXPECT_EQ(*ordered, ordered_json::parse(text));
  EXPECT_EQ(ordered->dump(), ordered_json::parse(text).dump());  // key order kept
  auto scalar = parse_json_bounded<json>("  42 ", "doc.json", {});
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, 42);
}

TEST(BoundedJsonTest, MalformedTextNamesTheSource) {
  EXPECT_THAT(error_of("{oops"), HasSubstr("doc.json: not valid JSON"));
  EXPECT_THAT(error_of(""), HasSubstr("doc.json: not valid JSON"));
  EXPECT_THAT(error_of("[1,]"), HasSubstr("doc.json: not valid JSON"));
  EXPECT_THAT(error_of("1e999"), HasSubstr("doc.json: not valid JSON"));
  EXPECT_THAT(error_of("\"\xff\""), HasSubstr("doc.json: not valid JSON"));
  EXPECT_THAT(error_of("{} {}"), HasSubstr("doc.json: not valid JSON"));
}

TEST(BoundedJsonTest, DepthIsLimitedWhileParsing) {
  JsonLimits limits;
  limits.max_depth = 5;
  EXPECT_EQ(error_of(nested(5), limits), "");
  EXPECT_THAT(error_of(nested(6), limits), HasSubstr("nested deeper than 5 levels"));
  EXPECT_THAT(error_of(R"({"a":{"b":{"c":{"d":{"e":{}}}}}})", limits), HasSubstr("nested deeper than 5"));
  // Far deeper than any recursive copy survives: refused at depth 65, never built.
  EXPECT_THAT(error_of(nested(1'000'000), request_json_limits()), HasSubstr("nested deeper than 64"));
  // A truncated deep document is refused for its depth before its end is seen.
  EXPECT_THAT(error_of(std::string(100'000, '['), request_json_limits()), HasSubstr("nested deeper than 64"));
}

TEST(BoundedJsonTest, ContainerSizeAndValueCountAreLimited) {
  JsonLimits limits;
  limits.max_container_size = 3;
  EXPECT_EQ(error_of("[1,2,3]", limits), "");
  EXPECT_THAT(error_of("[1,2,3,4]", limits), HasSubstr("an array has more than 3 elements"));
  EXPECT_THAT(error_of(R"({"a":1,"b":2,"c":3,"d":4})", limits), HasSubstr("an object has more than 3 members"));
  limits = {};
  limits.max_values = 5;
  EXPECT_EQ(error_of("[1,[2],3]", limits), "");  // 5 values: outer, 1, inner, 2, 3
  limits.max_values = 4;
  EXPECT_THAT(error_of("[1,[2],3]", limits), HasSubstr("more than 4 values"));
}

TEST(BoundedJsonTest, RepeatedKeysAreRefusedWithTheirPathOrKeptLast) {
  EXPECT_THAT(error_of(R"({"a": {"b": 1, "b": 2}})"), HasSubstr("doc.json: duplicate key 'a.b'"));
  EXPECT_THAT(error_of(R"({"x": 1, "x": 1})"), HasSubstr("duplicate key 'x'"));
  EXPECT_EQ(error_of(R"([{"x": 1}, {"x": 1}])"), "");  // the same key in sibling objects
  auto ordered = parse_json_bounded<ordered_json>(R"({"k": 1, "j": 0, "k": 2})", "doc.json", {});
  EXPECT_THAT(std::string(ordered.status().message()), HasSubstr("duplicate key 'k'"));
  JsonLimits last_wins;
  last_wins.reject_duplicate_keys = false;
  auto kept = parse_json_bounded<json>(R"({"k": 1, "k": [2]})", "doc.json", last_wins);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, json::parse(R"({"k": [2]})"));
  auto kept_ordered = parse_json_bounded<ordered_json>(R"({"k": 1, "j": 0, "k": 2})", "doc.json", last_wins);
  ASSERT_TRUE(kept_ordered.ok());
  EXPECT_EQ(kept_ordered->dump(), R"({"k":2,"j":0})");
}

// 2^18 members whose values are objects: nlohmann's callback parser rescans the parent after each
// child (quadratic: minutes at this size); this reader builds it in linear time (the ctest
// timeout, not a timed assert, is what catches a regression).
TEST(BoundedJsonTest, ManyContainerMembersParseInLinearTime) {
  constexpr int kMembers = 1 << 18;
  std::string text = "{";
  for (int i = 0; i < kMembers; ++i) {
    if (i) text += ',';
    text += "\"t" + std::to_string(i) + "\":{\"shape\":[0],\"data_offsets\":[0,0]}";
  }
  text += "}";
  auto parsed = parse_json_bounded<json>(text, "doc.json", {});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->size(), static_cast<size_t>(kMembers));
  auto ordered = parse_json_bounded<ordered_json>(text, "doc.json", {});
  ASSERT_TRUE(ordered.ok()) << ordered.status();
  EXPECT_EQ(ordered->size(), static_cast<size_t>(kMembers));
}

}  // namespace
}  // namespace weft
