// The tool-call parsers on whole replies and streamed: every reply split into single bytes and
// into random pieces must give the same content and calls as the whole reply (when its calls
// are well-formed or malformed before they start), and text that may start a marker is held
// back until it is known.
#include "tool_calls/tool_call_parser.h"

#include <gtest/gtest.h>

#include <random>

#include "nlohmann/json.hpp"

namespace weft {
namespace {

using Kind = ToolCallDelta::Kind;

struct Expected {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments text
};

void expect_whole(ToolCallFormat format, const std::string& text, const Expected& want) {
  ParsedToolCalls got = parse_tool_calls(format, text);
  EXPECT_EQ(got.content, want.content) << text;
  ASSERT_EQ(got.calls.size(), want.calls.size()) << text;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, want.calls[i].first) << text;
    EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << text;
  }
}

// Streams `text` in the given pieces; returns content and calls assembled from the deltas, and
// checks the deltas' order (a call's start before its arguments, indices in order).
ParsedToolCalls streamed(ToolCallFormat format, const std::vector<std::string>& pieces) {
  ToolCallStreamParser parser(format, /*whole=*/false);
  std::vector<ToolCallDelta> deltas;
  for (const std::string& p : pieces) parser.push(p, deltas);
  parser.finish(deltas);
  ParsedToolCalls out;
  for (const ToolCallDelta& d : deltas) {
    switch (d.kind) {
      case Kind::kContent:
        out.content += d.text;
        break;
      case Kind::kCallStart:
        EXPECT_EQ(d.call, static_cast<int>(out.calls.size()));
        out.calls.push_back({d.text, ""});
        break;
      case Kind::kArguments:
        EXPECT_EQ(d.call + 1, static_cast<int>(out.calls.size()));
        out.calls.back().arguments += d.text;
        break;
      case Kind::kCallWithdrawn:
        ADD_FAILURE() << "a stream never withdraws";
        break;
    }
  }
  EXPECT_EQ(parser.num_calls(), static_cast<int>(out.calls.size()));
  return out;
}

std::vector<std::string> bytes_of(const std::string& text) {
  std::vector<std::string> out;
  for (char c : text) out.emplace_back(1, c);
  return out;
}

std::vector<std::string> random_pieces(const std::string& text, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min<size_t>(text.size() - i, 1 + rng() % 7);
    out.push_back(text.substr(i, n));
    i += n;
  }
  return out;
}

// Whole, streamed byte by byte and in random pieces: all three agree with `want`.
void expect_all_ways(ToolCallFormat format, const std::string& text, const Expected& want) {
  expect_whole(format, text, want);
  std::vector<std::vector<std::string>> splits = {{text}, bytes_of(text)};
  for (uint32_t seed = 0; seed < 8; ++seed) splits.push_back(random_pieces(text, seed));
  for (const auto& pieces : splits) {
    ParsedToolCalls got = streamed(format, pieces);
    EXPECT_EQ(got.content, want.content) << text << " in " << pieces.size() << " pieces";
    ASSERT_EQ(got.calls.size(), want.calls.size()) << text << " in " << pieces.size() << " pieces";
    for (size_t i = 0; i < got.calls.size(); ++i) {
      EXPECT_EQ(got.calls[i].name, want.calls[i].first);
      EXPECT_EQ(got.calls[i].arguments, want.calls[i].second) << text << " in " << pieces.size() << " pieces";
      // Pieces concatenate to the arguments as JSON.
      EXPECT_TRUE(nlohmann::json::accept(got.calls[i].arguments)) << got.calls[i].arguments;
    }
  }
}

constexpr ToolCallFormat kHermes = ToolCallFormat::kHermes;
constexpr ToolCallFormat kLlama = ToolCallFormat::kLlama3Json;
constexpr ToolCallFormat kMistral = ToolCallFormat::kMistral;

TEST(HermesParser, TextWithoutCallsIsContent) {
  expect_all_ways(kHermes, "Hello, world.\n  Bye <tool now>", {"Hello, world.\n  Bye <tool now>", {}});
  expect_all_ways(kHermes, "ends with a partial marker <tool_ca", {"ends with a partial marker <tool_ca", {}});
  expect_all_ways(kHermes, "  spaces kept  ", {"  spaces kept  ", {}});
}

TEST(HermesParser, OneCallAfterText) {
  expect_all_ways(kHermes,
                  "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Z\\u00fcrich\", "
                  "\"days\": [1, 2]}}\n</tool_call>",
                  {"Let me check.", {{"get_weather", "{\"city\": \"Z\\u00fcrich\", \"days\": [1, 2]}"}}});
}

TEST(HermesParser, ParallelCallsAndStringsThatLookLikeStructure) {
  expect_all_ways(kHermes,
                  "<tool_call>{\"name\":\"a\",\"arguments\":{\"s\":\"}\\\"{</tool_call>\"}}</tool_call>\n"
                  "<tool_call>\n{\"name\": \"b\", \"parameters\": {}}\n</tool_call>\n",
                  {"", {{"a", "{\"s\":\"}\\\"{</tool_call>\"}"}, {"b", "{}"}}});
}

TEST(HermesParser, TextBetweenAndAfterCallsIsContent) {
  expect_all_ways(kHermes,
                  "A <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> B\n<tool_call>{\"name\": \"b\", "
                  "\"arguments\": {\"x\": 1}}</tool_call> C",
                  {"A B C", {{"a", "{}"}, {"b", "{\"x\": 1}"}}});
}

TEST(HermesParser, NameAfterArgumentsIsReadWhole) {
  expect_all_ways(kHermes, "<tool_call>{\"arguments\": {\"b\": 2, \"a\": 1}, \"name\": \"f\"}</tool_call>",
                  {"", {{"f", "{\"b\":2,\"a\":1}"}}});
  expect_all_ways(kHermes, "<tool_call>{\"name\": \"noargs\"}</tool_call>", {"", {{"noargs", "{}"}}});
}

TEST(HermesParser, MissingClosingTagStillCalls) {
  expect_all_ways(kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}", {"", {{"f", "{\"a\": 1}"}}});
  // Cut inside the closing tag (max_tokens): the call stands, the partial tag goes.
  expect_all_ways(kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}\n</tool", {"", {{"f", "{}"}}});
}

TEST(HermesParser, MalformedCallsAreContent) {
  for (const std::string text :
       {"Sure. <tool_call>not json</tool_call>", "Sure. <tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",
        "Sure. <tool_call>{\"arguments\": [1], \"name\": \"f\"}</tool_call> tail",
        "Sure. <tool_call>{\"name\": \"f\", \"arguments\": \"{}\"}</tool_call>", "Sure. <tool_call>",
        "Sure. <tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\""}) {
    expect_all_ways(kHermes, text, {text, {}});
  }
}

TEST(HermesParser, ArgumentsMalformedAfterTheCallStarted) {
  const std::string text = "Sure. <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1,}}</tool_call>";
  // Whole: the call is withdrawn and all of the text is content.
  expect_whole(kHermes, text, {text, {}});
  // Streamed: the call went out with the arguments read so far; the rest is content.
  ParsedToolCalls got = streamed(kHermes, bytes_of(text));
  ASSERT_EQ(got.calls.size(), 1u);
  EXPECT_EQ(got.calls[0].name, "f");
  EXPECT_EQ(got.calls[0].arguments, "{\"a\": 1,}");
  EXPECT_EQ(got.content, "Sure.}</tool_call>");
}

TEST(HermesParser, HoldsBackWhatMayStartAMarker) {
  ToolCallStreamParser parser(kHermes, /*whole=*/false);
  std::vector<ToolCallDelta> out;
  parser.push("Hello <tool", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "Hello");  // the space is held too: it goes if a call follows
  out.clear();
  parser.push("box> and", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, " <toolbox> and");
  out.clear();
  parser.push(" <tool_call>{\"name\": \"f\", \"argu", out);
  EXPECT_TRUE(out.empty());
  parser.push("ments\": {\"x\"", out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, Kind::kCallStart);
  EXPECT_EQ(out[0].text, "f");
  EXPECT_EQ(out[1].kind, Kind::kArguments);
  EXPECT_EQ(out[1].text, "{\"x\"");
  out.clear();
  parser.push(": 1}}</tool_call>", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, ": 1}");
  out.clear();
  parser.finish(out);
  EXPECT_TRUE(out.empty());
}

TEST(Llama3JsonParser, CallsAtTheStart) {
  expect_all_ways(kLlama, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
                  {"", {{"get_weather", "{\"city\": \"Oslo\"}"}}});
  expect_all_ways(kLlama,
                  " <|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"n\": 2}}",
                  {"", {{"a", "{}"}, {"b", "{\"n\": 2}"}}});
}

TEST(Llama3JsonParser, JsonThatIsNoCallAndLaterBracesAreContent) {
  for (const std::string text : {"{\"foo\": 1}", "The set {\"name\": \"a\", \"parameters\": {}}", "{not json",
                                 "  plain", "<|python", "{\"name\": \"a\", \"parameters\": {}} and more"}) {
    const bool call_then_text = text.find("and more") != std::string::npos;
    if (call_then_text) {
      expect_all_ways(kLlama, text, {"and more", {{"a", "{}"}}});
    } else {
      expect_all_ways(kLlama, text, {text, {}});
    }
  }
}

TEST(MistralParser, CallList) {
  expect_all_ways(kMistral,
                  "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": \"]\"}}, {\"name\": \"b\", \"arguments\": "
                  "{}}]",
                  {"", {{"a", "{\"x\": \"]\"}"}, {"b", "{}"}}});
  expect_all_ways(kMistral, "Checking.[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"k\": [1, {\"z\": null}]}}]",
                  {"Checking.", {{"a", "{\"k\": [1, {\"z\": null}]}"}}});
}

TEST(MistralParser, MalformedListIsContent) {
  for (const std::string text : {"[TOOL_CALLS] {\"name\": \"a\"}", "[TOOL_CALLS][\"a\"]", "x [TOOL_CALLS][{\"name\""}) {
    expect_all_ways(kMistral, text, {text, {}});
  }
}

}  // namespace
}  // namespace weft
