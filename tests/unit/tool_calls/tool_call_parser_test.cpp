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

TEST(MistralParser, NameFormOneCall) {
  expect_all_ways(
      kMistral,
      "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Z\\u00fcrich\", \"days\": [1, {\"n\": 2}]}",
      {"", {{"get_weather", "{\"city\": \"Z\\u00fcrich\", \"days\": [1, {\"n\": 2}]}"}}});
  // Strings that look like structure or markers, empty arguments.
  expect_all_ways(kMistral, "[TOOL_CALLS]f-1[ARGS]{\"s\": \"}[TOOL_CALLS]x[ARGS]{\\\"\"}",
                  {"", {{"f-1", "{\"s\": \"}[TOOL_CALLS]x[ARGS]{\\\"\"}"}}});
  expect_all_ways(kMistral, "[TOOL_CALLS]noargs[ARGS]{}", {"", {{"noargs", "{}"}}});
  // Whitespace after the markers and after the call is dropped.
  expect_all_ways(kMistral, "[TOOL_CALLS] f[ARGS] {\"a\": 1}\n", {"", {{"f", "{\"a\": 1}"}}});
}

TEST(MistralParser, NameFormSeveralCalls) {
  expect_all_ways(kMistral, "[TOOL_CALLS]a[ARGS]{\"x\": 1}[TOOL_CALLS]b[ARGS]{}",
                  {"", {{"a", "{\"x\": 1}"}, {"b", "{}"}}});
  expect_all_ways(
      kMistral,
      "[TOOL_CALLS]a[ARGS]{}\n[TOOL_CALLS]b[ARGS]{\"y\": [true]}\n[TOOL_CALLS]c_2[ARGS]{}",
      {"", {{"a", "{}"}, {"b", "{\"y\": [true]}"}, {"c_2", "{}"}}});
}

TEST(MistralParser, NameFormWithCallId) {
  expect_all_ways(kMistral, "[TOOL_CALLS]get_weather[CALL_ID]abc123456[ARGS]{\"city\": \"Oslo\"}",
                  {"", {{"get_weather", "{\"city\": \"Oslo\"}"}}});
  expect_all_ways(
      kMistral,
      "[TOOL_CALLS]a[CALL_ID]A1b2C3d4E[ARGS]{\"x\": 1}[TOOL_CALLS]b[CALL_ID]zzzzzzzzz[ARGS]{}",
      {"", {{"a", "{\"x\": 1}"}, {"b", "{}"}}});
  // One call with an id, the next without.
  expect_all_ways(kMistral, "[TOOL_CALLS]a[CALL_ID]123456789[ARGS]{}[TOOL_CALLS]b[ARGS]{}",
                  {"", {{"a", "{}"}, {"b", "{}"}}});
}

// The ids after [CALL_ID] come out with their calls, whole and streamed; a call without one has "".
TEST(MistralParser, CallIdsComeOutWithTheirCalls) {
  const std::string text =
      "Sure.[TOOL_CALLS]a[CALL_ID]A1b2C3d4E[ARGS]{\"x\": 1}[TOOL_CALLS]b[ARGS]{}"
      "[TOOL_CALLS]c[CALL_ID]zzzzzzzzz[ARGS]{}";
  const std::vector<std::string> want = {"A1b2C3d4E", "", "zzzzzzzzz"};
  ParsedToolCalls whole = parse_tool_calls(kMistral, text);
  ASSERT_EQ(whole.calls.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(whole.calls[i].id, want[i]);
  for (const std::vector<std::string>& pieces : {bytes_of(text), random_pieces(text, 5)}) {
    ToolCallStreamParser parser(kMistral, /*whole=*/false);
    std::vector<ToolCallDelta> deltas;
    for (const std::string& p : pieces) parser.push(p, deltas);
    parser.finish(deltas);
    std::vector<std::string> ids;
    for (const ToolCallDelta& d : deltas) {
      if (d.kind == Kind::kCallStart) ids.push_back(d.id);
    }
    EXPECT_EQ(ids, want);
  }
  // Other formats have no ids of their own.
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>")
                .calls.at(0).id,
            "");
}

TEST(MistralParser, NameFormAfterAndBetweenText) {
  expect_all_ways(kMistral,
                  "Let me check [the weather].\n[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}",
                  {"Let me check [the weather].", {{"get_weather", "{\"city\": \"Oslo\"}"}}});
  expect_all_ways(kMistral, "A [TOOL_CALLS]a[ARGS]{} B\n[TOOL_CALLS]b[ARGS]{\"x\": 1} C",
                  {"A B C", {{"a", "{}"}, {"b", "{\"x\": 1}"}}});
  // Text that only looks like the markers.
  expect_all_ways(kMistral, "[TOOL_CALL] x[ARGS]{} [ARGS] [CALL_ID] [TOOL_CALLS",
                  {"[TOOL_CALL] x[ARGS]{} [ARGS] [CALL_ID] [TOOL_CALLS", {}});
}

TEST(MistralParser, BothFormsInOneReply) {
  expect_all_ways(kMistral,
                  "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}][TOOL_CALLS]b[ARGS]{\"n\": 2}",
                  {"", {{"a", "{}"}, {"b", "{\"n\": 2}"}}});
  expect_all_ways(
      kMistral, "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS] [{\"name\": \"b\", \"arguments\": {\"n\": 2}}]",
      {"", {{"a", "{}"}, {"b", "{\"n\": 2}"}}});
}

// Every split of the text into two pieces, and byte by byte, gives what the whole text gives
// (well-formed calls, and calls malformed before their kCallStart).
TEST(MistralParser, NameFormSplitAtEveryByte) {
  for (const std::string text :
       {"Sure.\n[TOOL_CALLS]get_weather[CALL_ID]abc123456[ARGS]{\"city\": \"Oslo\", \"d\": [1]}\n"
        "[TOOL_CALLS]b[ARGS]{\"s\": \"[ARGS]}\"}",
        "x [TOOL_CALLS]f[ARG]{}", "x [TOOL_CALLS]f[CALL_ID][ARGS]{}", "x [TOOL_CALLS]f[ARGS]7 y"}) {
    const ParsedToolCalls whole = parse_tool_calls(kMistral, text);
    const bool well_formed = text.rfind("Sure.", 0) == 0;
    const Expected want = well_formed
                              ? Expected{"Sure.",
                                         {{"get_weather", "{\"city\": \"Oslo\", \"d\": [1]}"},
                                          {"b", "{\"s\": \"[ARGS]}\"}"}}}
                              : Expected{text, {}};
    expect_all_ways(kMistral, text, want);
    for (size_t cut = 1; cut < text.size(); ++cut) {
      const ParsedToolCalls got = streamed(kMistral, {text.substr(0, cut), text.substr(cut)});
      EXPECT_EQ(got.content, whole.content) << text << " cut at " << cut;
      ASSERT_EQ(got.calls.size(), whole.calls.size()) << text << " cut at " << cut;
      for (size_t i = 0; i < got.calls.size(); ++i) {
        EXPECT_EQ(got.calls[i].name, whole.calls[i].name);
        EXPECT_EQ(got.calls[i].arguments, whole.calls[i].arguments) << text << " cut at " << cut;
      }
    }
  }
}

TEST(MistralParser, NameFormMalformedCallsAreContent) {
  for (const std::string text : {
           "Sure. [TOOL_CALLS]f{\"a\": 1}",             // no [ARGS]
           "Sure. [TOOL_CALLS]f",                       // cut after the name
           "Sure. [TOOL_CALLS]f[AR",                    // cut inside [ARGS]
           "Sure. [TOOL_CALLS]f[ARGS]",                 // cut after [ARGS]
           "Sure. [TOOL_CALLS]get weather[ARGS]{}",     // a space in the name
           "Sure. [TOOL_CALLS]get.weather[ARGS]{}",     // a dot in the name
           "Sure. [TOOL_CALLS]\"f\"[ARGS]{}",           // a quoted name
           "Sure. [TOOL_CALLS][ARGS]{}",                // no name
           "Sure. [TOOL_CALLS]f[ARGS][1, 2]",           // arguments not an object
           "Sure. [TOOL_CALLS]f[ARGS]\"{}\"",           // arguments a string
           "Sure. [TOOL_CALLS]f[ARGS]null",             //
           "Sure. [TOOL_CALLS]f[CALL_ID]abc{}",         // [CALL_ID] without [ARGS]
           "Sure. [TOOL_CALLS]f[CALL_ID][ARGS]{}",      // an empty call id
           "Sure. [TOOL_CALLS]f[CALL_ID]ab_c[ARGS]{}",  // a call id with '_'
           "Sure. [TOOL_CALLS]f[CALL_ID]abc123456",     // cut inside the call id
       }) {
    expect_all_ways(kMistral, text, {text, {}});
  }
  // A name or a call id past its bound.
  const std::string long_name = "[TOOL_CALLS]" + std::string(65, 'n') + "[ARGS]{}";
  expect_all_ways(kMistral, long_name, {long_name, {}});
  expect_all_ways(kMistral, "[TOOL_CALLS]" + std::string(64, 'n') + "[ARGS]{}",
                  {"", {{std::string(64, 'n'), "{}"}}});
  const std::string long_id = "[TOOL_CALLS]f[CALL_ID]" + std::string(65, '1') + "[ARGS]{}";
  expect_all_ways(kMistral, long_id, {long_id, {}});
  // After a malformed call the rest of the reply is content, a later well-formed call included.
  const std::string then_call = "[TOOL_CALLS]f[ARGS]7 [TOOL_CALLS]g[ARGS]{}";
  expect_all_ways(kMistral, then_call, {then_call, {}});
  // A well-formed call before a malformed one stands.
  expect_all_ways(kMistral, "[TOOL_CALLS]f[ARGS]{}[TOOL_CALLS]g h",
                  {"[TOOL_CALLS]g h", {{"f", "{}"}}});
}

TEST(MistralParser, NameFormArgumentsMalformedAfterTheCallStarted) {
  for (const std::string text :
       {"Sure. [TOOL_CALLS]f[ARGS]{\"a\": 1,} tail", "Sure. [TOOL_CALLS]f[ARGS]{\"a\": [1"}) {
    // Whole: the call is withdrawn and all of the text is content.
    expect_whole(kMistral, text, {text, {}});
    // Streamed: the call went out with the arguments read so far; the rest is content.
    ParsedToolCalls got = streamed(kMistral, bytes_of(text));
    ASSERT_EQ(got.calls.size(), 1u);
    EXPECT_EQ(got.calls[0].name, "f");
    const bool cut = text.back() == '1';
    EXPECT_EQ(got.calls[0].arguments, cut ? "{\"a\": [1" : "{\"a\": 1,}");
    EXPECT_EQ(got.content, cut ? "Sure." : "Sure. tail");
  }
}

TEST(MistralParser, NameFormStreamsTheCallAsItComes) {
  ToolCallStreamParser parser(kMistral, /*whole=*/false);
  std::vector<ToolCallDelta> out;
  parser.push("Hi [TOOL_", out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "Hi");
  out.clear();
  parser.push("CALLS]get_", out);
  EXPECT_TRUE(out.empty());
  parser.push("weather[CALL_ID]abc[AR", out);
  EXPECT_TRUE(out.empty());
  parser.push("GS]", out);
  EXPECT_TRUE(out.empty());  // the arguments may still not be an object
  parser.push("{\"city\"", out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, Kind::kCallStart);
  EXPECT_EQ(out[0].call, 0);
  EXPECT_EQ(out[0].text, "get_weather");
  EXPECT_EQ(out[1].kind, Kind::kArguments);
  EXPECT_EQ(out[1].text, "{\"city\"");
  out.clear();
  parser.push(": {\"n\": 1}}[TOOL_CALLS]b[ARGS]{}", out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kind, Kind::kArguments);
  EXPECT_EQ(out[0].text, ": {\"n\": 1}}");
  EXPECT_EQ(out[1].kind, Kind::kCallStart);
  EXPECT_EQ(out[1].call, 1);
  EXPECT_EQ(out[1].text, "b");
  EXPECT_EQ(out[2].text, "{}");
  out.clear();
  parser.finish(out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(parser.num_calls(), 2);
}

}  // namespace
}  // namespace weft
