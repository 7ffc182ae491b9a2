// Prompt logprobs in OpenAI responses (serving/openai_response.h, openai_logprobs.h): completions
// echo + logprobs put them before the generated tokens' logprobs, vLLM's prompt_logprobs is a list
// per completion choice and beside the choices for chat.
#include <filesystem>

#include "gtest/gtest.h"
#include "serving/openai_logprobs.h"
#include "serving/openai_response.h"
#include "tests/unit/serving/serving_test_util.h"

namespace weft {
namespace {

using nlohmann::json;

using testing::qwen_tokenizer;

std::string text_of(int32_t id) { return qwen_tokenizer()->decode(std::vector<int32_t>{id}, false); }

// A three-token prompt: position 0 empty, then two scored tokens with two alternatives each.
std::shared_ptr<const PromptLogprobs> three_tokens() {
  auto p = std::make_shared<PromptLogprobs>(3);
  (*p)[0].token = 9707;
  (*p)[0].logprob = std::numeric_limits<float>::quiet_NaN();
  (*p)[1] = {11, -1.5f, 3, {{100, -0.5f}, {200, -1.0f}}};
  (*p)[2] = {100, -0.25f, 1, {{100, -0.25f}, {300, -2.0f}}};
  return p;
}

StreamEvent event(int index, std::vector<int32_t> tokens, bool finished, std::shared_ptr<const PromptLogprobs> prompt) {
  StreamEvent e;
  e.output.index = index;
  e.output.token_ids = tokens;
  for (int32_t t : tokens) e.output.samples.push_back({t, -0.125f, {{t, -0.125f}}});
  for (int32_t t : tokens) e.output.text += text_of(t);
  e.output.finished = finished;
  e.output.finish_reason = finished ? FinishReason::kLength : FinishReason::kNone;
  e.output.prompt_logprobs = std::move(prompt);
  return e;
}

TEST(OpenAiPromptLogprobsTest, CompletionsEchoPutsThePromptFirst) {
  const auto prompt = three_tokens();
  const std::string echo = text_of(9707) + text_of(11) + text_of(100);
  ResponseBuilder b(ApiKind::kCompletion, "m", {echo}, /*logprobs=*/true, qwen_tokenizer(), 3);
  b.set_prompt_logprobs(/*echo_logprobs=*/true, /*top=*/1, std::nullopt);
  b.add_events({event(0, {}, false, prompt), event(0, {42}, true, nullptr)});
  const json body = json::parse(b.full_response());
  const json& lp = body["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u);
  EXPECT_EQ(lp["tokens"][0], text_of(9707));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), -1.5);
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][2].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][3].get<double>(), -0.125);
  // top 1 of the two alternatives.
  EXPECT_EQ(lp["top_logprobs"][1].size(), 1u);
  EXPECT_DOUBLE_EQ(lp["top_logprobs"][1][text_of(100)].get<double>(), -0.5);
  // Offsets add each token string's length, and the generated tokens continue after them.
  const int64_t a = utf8_code_points(text_of(9707)), c = utf8_code_points(text_of(11));
  EXPECT_EQ(lp["text_offset"], json({0, a, a + c, a + c + utf8_code_points(text_of(100))}));
  EXPECT_EQ(body["choices"][0]["text"], echo + text_of(42));
  EXPECT_FALSE(body["choices"][0].contains("prompt_logprobs"));
}

TEST(OpenAiPromptLogprobsTest, PrefillOnlyAndStreamed) {
  const auto prompt = three_tokens();
  ResponseBuilder b(ApiKind::kCompletion, "m", {"e"}, true, qwen_tokenizer(), 3);
  b.set_prompt_logprobs(true, 2, std::nullopt);
  const std::string sse = b.stream_events({event(0, {}, true, prompt)}, false);
  const std::string prefix = "data: ";
  ASSERT_EQ(sse.rfind(prefix, 0), 0u);
  const json chunk = json::parse(sse.substr(prefix.size(), sse.find("\n\n") - prefix.size()));
  const json& choice = chunk["choices"][0];
  EXPECT_EQ(choice["text"], "e");
  EXPECT_EQ(choice["finish_reason"], "length");
  EXPECT_EQ(choice["logprobs"]["tokens"].size(), 3u);
  EXPECT_EQ(choice["logprobs"]["top_logprobs"][2].size(), 2u);
  EXPECT_EQ(b.completion_tokens(), 0);
}

TEST(OpenAiPromptLogprobsTest, VllmListPerCompletionChoiceAndBesideChatChoices) {
  const auto prompt = three_tokens();
  ResponseBuilder b(ApiKind::kCompletion, "m", {"", ""}, false, qwen_tokenizer(), 3);
  b.set_prompt_logprobs(false, 0, 1);
  b.add_events({event(0, {42}, true, prompt), event(1, {43}, true, prompt)});
  const json body = json::parse(b.full_response());
  for (int i = 0; i < 2; ++i) {
    const json& list = body["choices"][i]["prompt_logprobs"];
    ASSERT_EQ(list.size(), 3u);
    EXPECT_TRUE(list[0].is_null());
    // The prompt token with its rank, then its one best alternative.
    EXPECT_EQ(list[1].size(), 2u);
    EXPECT_DOUBLE_EQ(list[1]["11"]["logprob"].get<double>(), -1.5);
    EXPECT_EQ(list[1]["11"]["rank"], 3);
    EXPECT_EQ(list[1]["11"]["decoded_token"], text_of(11));
    EXPECT_EQ(list[1]["100"]["rank"], 1);
    // The prompt token is the best one: listed once.
    EXPECT_EQ(list[2].size(), 1u);
    EXPECT_EQ(list[2]["100"]["rank"], 1);
    EXPECT_TRUE(body["choices"][i]["logprobs"].is_null());
  }
  ResponseBuilder chat(ApiKind::kChat, "m", {""}, false, qwen_tokenizer(), 3);
  chat.set_prompt_logprobs(false, 0, 0);
  chat.add_events({event(0, {42}, true, prompt)});
  const json reply = json::parse(chat.full_response());
  ASSERT_EQ(reply["prompt_logprobs"].size(), 3u);
  EXPECT_EQ(reply["prompt_logprobs"][1].size(), 1u);
  EXPECT_FALSE(reply["choices"][0].contains("prompt_logprobs"));
}

TEST(OpenAiPromptLogprobsTest, MinusInfinityIsClampedAsVllmDoes) {
  PromptLogprobs p(2);
  p[1] = {5, -std::numeric_limits<float>::infinity(), 7, {}};
  const json list = vllm_prompt_logprobs(p, 0, text_of);
  EXPECT_DOUBLE_EQ(list[1]["5"]["logprob"].get<double>(), -9999.0);
  const json lp = openai_prompt_logprobs(p, 0, text_of, nullptr);
  EXPECT_DOUBLE_EQ(lp["token_logprobs"][1].get<double>(), -9999.0);
}

}  // namespace
}  // namespace weft
