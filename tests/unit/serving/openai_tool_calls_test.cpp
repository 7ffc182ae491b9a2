// Tool calls in chat responses (ResponseBuilder with set_tool_calls) and the request side
// (parse_generation_request with tools): message.tool_calls / content null / finish_reason
// "tool_calls", the streamed deltas reassembled as the openai client does, parallel_tool_calls
// false, and the 400s.
#include <gtest/gtest.h>

#include <filesystem>

#include "serving/openai_response.h"
#include "tests/unit/serving/serving_test_util.h"

namespace weft {
namespace {

using nlohmann::json;

using testing::qwen_tokenizer;

// The reply `text` as engine events: one per piece, the last one finished with `reason`.
std::vector<StreamEvent> events_of(const std::vector<std::string>& pieces, FinishReason reason = FinishReason::kStop) {
  std::vector<StreamEvent> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    StreamEvent e;
    e.output.text = pieces[i];
    e.output.token_ids = {1};
    e.output.finished = i + 1 == pieces.size();
    if (e.output.finished) e.output.finish_reason = reason;
    out.push_back(std::move(e));
  }
  return out;
}

ResponseBuilder builder(bool parallel = true, ToolCallFormat format = ToolCallFormat::kHermes) {
  ResponseBuilder b(ApiKind::kChat, "m", {""}, false, qwen_tokenizer(), 3);
  b.set_tool_calls(format, parallel);
  return b;
}

// What the openai client's stream accumulation makes of SSE frames: content and tool calls.
json assemble(const std::string& sse, std::string& finish_reason) {
  json message = {{"content", ""}, {"tool_calls", json::array()}};
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find("\n\n", pos);
    const std::string data = sse.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    for (const json& choice : chunk["choices"]) {
      const json& delta = choice["delta"];
      if (delta.contains("content")) message["content"] = message["content"].get<std::string>() + delta["content"].get<std::string>();
      if (delta.contains("tool_calls")) {
        for (const json& tc : delta["tool_calls"]) {
          const size_t i = tc["index"].get<size_t>();
          json& calls = message["tool_calls"];
          if (i == calls.size()) {
            EXPECT_TRUE(tc.contains("id") && tc.contains("type")) << tc;  // the first entry of a call
            calls.push_back({{"id", tc["id"]}, {"type", tc["type"]}, {"function", {{"name", tc["function"]["name"]}, {"arguments", ""}}}});
          }
          if (i >= calls.size()) {
            ADD_FAILURE() << tc;
            return message;
          }
          if (tc["function"].contains("arguments")) {
            calls[i]["function"]["arguments"] =
                calls[i]["function"]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
          }
        }
      }
      if (!choice["finish_reason"].is_null()) finish_reason = choice["finish_reason"];
    }
  }
  return message;
}

const std::vector<std::string> kTwoCalls = {
    "Let me ", "look.\n<tool", "_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Os", "lo\"}}\n</tool_call>\n",
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"};

TEST(OpenAiToolCalls, NonStreamedMessage) {
  ResponseBuilder b = builder();
  b.add_events(events_of(kTwoCalls));
  const json body = json::parse(b.full_response());
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me look.");
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["type"], "function");
  EXPECT_EQ(calls[0]["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_NE(calls[0]["id"], calls[1]["id"]);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(calls[0]["function"]["arguments"].get<std::string>()), json({{"city", "Oslo"}}));
  EXPECT_EQ(calls[1]["function"]["name"], "get_time");
  EXPECT_EQ(calls[1]["function"]["arguments"], "{}");
}

TEST(OpenAiToolCalls, StreamedDeltasAssembleToTheSameMessage) {
  ResponseBuilder b = builder();
  std::string sse;
  for (const StreamEvent& e : events_of(kTwoCalls)) sse += b.stream_events({e}, false);
  sse += b.stream_end(false);
  std::string finish;
  const json message = assemble(sse, finish);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(message["content"], "Let me look.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Oslo\"}");
  EXPECT_EQ(message["tool_calls"][1]["function"]["arguments"], "{}");
  // No frame carries a piece of the marker as content.
  EXPECT_EQ(sse.find("<tool"), std::string::npos) << sse;
}

// Mistral's name form (v7 / v11+ templates), one [TOOL_CALLS] per call, a call id on the first:
// the same message streamed and not.
TEST(OpenAiToolCalls, MistralNameFormStreamedAndNot) {
  const std::vector<std::string> pieces = {"Let me look.[TOOL_", "CALLS]get_weather[CALL_ID]abc12",
                                           "3456[AR", "GS]{\"city\": \"Os",
                                           "lo\"}[TOOL_CALLS]get_time[ARGS]{}"};
  ResponseBuilder whole = builder(/*parallel=*/true, ToolCallFormat::kMistral);
  whole.add_events(events_of(pieces));
  const json choice = json::parse(whole.full_response())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me look.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 2u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Oslo\"}");
  EXPECT_EQ(choice["message"]["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_EQ(choice["message"]["tool_calls"][1]["function"]["arguments"], "{}");
  ResponseBuilder streamed = builder(/*parallel=*/true, ToolCallFormat::kMistral);
  std::string sse;
  for (const StreamEvent& e : events_of(pieces)) sse += streamed.stream_events({e}, false);
  sse += streamed.stream_end(false);
  std::string finish;
  const json message = assemble(sse, finish);
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(message["content"], "Let me look.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], "{\"city\": \"Oslo\"}");
  EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_EQ(sse.find("[ARGS]"), std::string::npos) << sse;
}

TEST(OpenAiToolCalls, ParallelFalseKeepsTheFirstCall) {
  ResponseBuilder whole = builder(/*parallel=*/false);
  whole.add_events(events_of(kTwoCalls));
  EXPECT_EQ(json::parse(whole.full_response())["choices"][0]["message"]["tool_calls"].size(), 1u);
  ResponseBuilder streamed = builder(/*parallel=*/false);
  std::string finish;
  const json message = assemble(streamed.stream_events(events_of(kTwoCalls), false), finish);
  ASSERT_EQ(message["tool_calls"].size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
}

TEST(OpenAiToolCalls, NoCallsIsPlainContent) {
  ResponseBuilder b = builder();
  b.add_events(events_of({"In the beginning <tool", "box> was"}, FinishReason::kLength));
  const json choice = json::parse(b.full_response())["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["message"]["content"], "In the beginning <toolbox> was");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
}

ServedModel served(std::optional<ToolCallFormat> format) {
  ServedModel m;
  m.name = "m";
  m.max_model_len = 4096;
  m.vocab_size = 151936;
  m.tokenizer = qwen_tokenizer();
  auto tmpl = ChatTemplate::parse(qwen_tokenizer()->chat_template());
  EXPECT_TRUE(tmpl.ok());
  m.chat_template = std::make_shared<ChatTemplate>(std::move(*tmpl));
  m.tool_call_format = format;
  return m;
}

json tool_body(json extra = json::object()) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
               {"tools",
                {{{"type", "function"},
                  {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}}}}}}}}};
  body.update(extra);
  return body;
}

TEST(OpenAiToolCalls, RequestsChooseTheParser) {
  auto parsed = parse_generation_request(tool_body(), ApiKind::kChat, served(ToolCallFormat::kHermes));
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(parsed)) << std::get<ApiError>(parsed).message;
  const GenerationRequest& g = std::get<GenerationRequest>(parsed);
  EXPECT_EQ(g.tool_calls, ToolCallFormat::kHermes);
  EXPECT_TRUE(g.parallel_tool_calls);
  EXPECT_EQ(g.prompts[0].engine_request.constraint, nullptr);  // auto: the model is free
  // tool_choice none: no parsing, and no parser needed.
  auto none = parse_generation_request(tool_body({{"tool_choice", "none"}}), ApiKind::kChat, served(std::nullopt));
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(none));
  EXPECT_FALSE(std::get<GenerationRequest>(none).tool_calls.has_value());
}

TEST(OpenAiToolCalls, RequestErrorsNameTheField) {
  auto error_of = [](const json& body, const ServedModel& m) {
    auto r = parse_generation_request(body, ApiKind::kChat, m);
    EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  };
  // No parser known for the model.
  ApiError e = error_of(tool_body(), served(std::nullopt));
  EXPECT_EQ(e.param, "tools");
  EXPECT_NE(e.message.find("--tool-call-parser"), std::string::npos);
  // required needs the grammar compiler, which this ServedModel lacks.
  EXPECT_EQ(error_of(tool_body({{"tool_choice", "required"}}), served(ToolCallFormat::kHermes)).param, "tool_choice");
  e = error_of(tool_body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}),
               served(ToolCallFormat::kHermes));
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "tool_choice");
  json dup = tool_body();
  dup["tools"].push_back(dup["tools"][0]);
  e = error_of(dup, served(ToolCallFormat::kHermes));
  EXPECT_EQ(e.param, "tools");
  EXPECT_EQ(e.message.rfind("tools[1].function.name: duplicate", 0), 0u) << e.message;
  // Completions take no tools.
  auto c = parse_generation_request({{"prompt", "x"}, {"tools", tool_body()["tools"]}}, ApiKind::kCompletion,
                                    served(ToolCallFormat::kHermes));
  ASSERT_TRUE(std::holds_alternative<ApiError>(c));
  EXPECT_EQ(std::get<ApiError>(c).param, "tools");
}

}  // namespace
}  // namespace weft
