#include "serving/openai_request.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace weft {
namespace {

using nlohmann::json;

ServedModel qwen_model() {
  static std::shared_ptr<Tokenizer> tok = [] {
    auto t = Tokenizer::load(std::filesystem::path(WEFT_SOURCE_DIR) / "tests/tokenizer_data/fixtures/qwen3");
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
  }();
  ServedModel m;
  m.name = "m";
  m.max_model_len = 64;
  m.vocab_size = 151936;
  m.tokenizer = tok;
  auto tmpl = ChatTemplate::parse(tok->chat_template());
  EXPECT_TRUE(tmpl.ok());
  m.chat_template = std::make_shared<ChatTemplate>(std::move(*tmpl));
  return m;
}

ApiError error_of(const json& body, ApiKind kind = ApiKind::kCompletion) {
  auto r = parse_generation_request(body, kind, qwen_model());
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

TEST(OpenAiRequestTest, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = parse_json_body(deep);
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_NE(std::get<ApiError>(r).message.find("nested"), std::string::npos);
  // Brackets inside strings do not count.
  EXPECT_TRUE(std::holds_alternative<json>(parse_json_body("{\"a\": \"" + std::string(1000, '[') + "\"}")));
  EXPECT_TRUE(std::holds_alternative<ApiError>(parse_json_body("{\"a\": \"\xff\"}")));
}

TEST(OpenAiRequestTest, ChatLogprobsBecomeTheIntegerCount) {
  auto r = parse_generation_request(
      {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}, {"top_logprobs", 3}},
      ApiKind::kChat, qwen_model());
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  const GenerationRequest& g = std::get<GenerationRequest>(r);
  EXPECT_EQ(g.engine_request.params.logprobs, 3);
  // No max_tokens in chat: the rest of the context.
  EXPECT_EQ(g.engine_request.params.max_tokens + static_cast<int>(g.engine_request.prompt_ids.size()), 64);
}

TEST(OpenAiRequestTest, AbsentSamplingFieldsTakeTheModelDefaults) {
  ServedModel model = qwen_model();
  model.sampling_defaults.temperature = 0.6f;
  model.sampling_defaults.top_k = 20;
  model.sampling_defaults.max_tokens = 7;
  auto r = parse_generation_request({{"prompt", "x"}, {"top_k", 3}}, ApiKind::kCompletion, model);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  const SamplingParams& p = std::get<GenerationRequest>(r).engine_request.params;
  EXPECT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 3);  // the request's own value wins
  EXPECT_EQ(p.max_tokens, 7);
  // Chat without max_tokens still runs to the end of the context.
  auto c = parse_generation_request({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, ApiKind::kChat, model);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(c));
  const GenerationRequest& g = std::get<GenerationRequest>(c);
  EXPECT_EQ(g.engine_request.params.temperature, 0.6f);
  EXPECT_EQ(g.engine_request.params.max_tokens + static_cast<int>(g.engine_request.prompt_ids.size()), 64);
}

TEST(OpenAiRequestTest, ErrorsNameTheParameter) {
  EXPECT_EQ(error_of({{"prompt", "x"}, {"temperature", "hot"}}).param, "temperature");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"max_tokens", 100}}).code, "context_length_exceeded");
  EXPECT_EQ(error_of({{"prompt", {"a", "b"}}}).param, "prompt");
  EXPECT_EQ(error_of({{"model", "other"}, {"prompt", "x"}}).status, 404);
  EXPECT_EQ(error_of({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", {{"type", "json_object"}}}},
                     ApiKind::kChat).param,
            "response_format");
  EXPECT_EQ(error_of({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, ApiKind::kChat).param,
            "messages");
}

}  // namespace
}  // namespace weft
