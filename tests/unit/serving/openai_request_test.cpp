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
  EXPECT_EQ(g.prompts.at(0).engine_request.params.logprobs, 3);
  // No max_tokens in chat: the rest of the context.
  EXPECT_EQ(g.prompts.at(0).engine_request.params.max_tokens + static_cast<int>(g.prompts.at(0).engine_request.prompt_ids.size()), 64);
}

TEST(OpenAiRequestTest, AbsentSamplingFieldsTakeTheModelDefaults) {
  ServedModel model = qwen_model();
  model.sampling_defaults.temperature = 0.6f;
  model.sampling_defaults.top_k = 20;
  model.sampling_defaults.max_tokens = 7;
  auto r = parse_generation_request({{"prompt", "x"}, {"top_k", 3}}, ApiKind::kCompletion, model);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  const SamplingParams& p = std::get<GenerationRequest>(r).prompts.at(0).engine_request.params;
  EXPECT_EQ(p.temperature, 0.6f);
  EXPECT_EQ(p.top_k, 3);  // the request's own value wins
  EXPECT_EQ(p.max_tokens, 7);
  // Chat without max_tokens still runs to the end of the context.
  auto c = parse_generation_request({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}, ApiKind::kChat, model);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(c));
  const GenerationRequest& g = std::get<GenerationRequest>(c);
  EXPECT_EQ(g.prompts.at(0).engine_request.params.temperature, 0.6f);
  EXPECT_EQ(g.prompts.at(0).engine_request.params.max_tokens + static_cast<int>(g.prompts.at(0).engine_request.prompt_ids.size()), 64);
}

TEST(OpenAiRequestTest, ErrorsNameTheParameter) {
  EXPECT_EQ(error_of({{"prompt", "x"}, {"temperature", "hot"}}).param, "temperature");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"max_tokens", 100}}).code, "context_length_exceeded");
  EXPECT_EQ(error_of({{"prompt", {"a", {1, 2}, 3}}}).param, "prompt");
  EXPECT_EQ(error_of({{"model", "other"}, {"prompt", "x"}}).status, 404);
  EXPECT_EQ(error_of({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"response_format", {{"type", "json_object"}}}},
                     ApiKind::kChat).param,
            "response_format");
  EXPECT_EQ(error_of({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, ApiKind::kChat).param,
            "messages");
}

GenerationRequest parsed(const json& body, ApiKind kind = ApiKind::kCompletion,
                         const ServedModel& model = qwen_model()) {
  auto r = parse_generation_request(body, kind, model);
  if (auto* e = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << body << ": " << e->message;
    return {};
  }
  return std::get<GenerationRequest>(std::move(r));
}

std::vector<int32_t> encode(const std::string& text, bool add_special = true) {
  auto ids = qwen_model().tokenizer->encode(text, add_special);
  EXPECT_TRUE(ids.ok());
  return *ids;
}

TEST(OpenAiRequestTest, CompletionPromptListsAreOneEngineRequestEach) {
  GenerationRequest g = parsed({{"prompt", {"Hello there", "Goodbye"}}, {"n", 2}, {"max_tokens", 3}});
  ASSERT_EQ(g.prompts.size(), 2u);
  EXPECT_EQ(g.n(), 2);
  EXPECT_EQ(g.num_choices(), 4);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_ids, encode("Hello there"));
  EXPECT_EQ(g.prompts[1].engine_request.prompt_ids, encode("Goodbye"));
  for (const auto& p : g.prompts) {
    EXPECT_EQ(p.engine_request.params.n, 2);
    EXPECT_EQ(p.engine_request.params.max_tokens, 3);
    EXPECT_EQ(p.echo, "");
  }
  // Token-id prompts: one array, or an array of arrays.
  g = parsed({{"prompt", {1, 2, 3}}});
  ASSERT_EQ(g.prompts.size(), 1u);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  g = parsed({{"prompt", {{1, 2}, json::array({3}), {4, 5, 6}}}});
  ASSERT_EQ(g.prompts.size(), 3u);
  EXPECT_EQ(g.prompts[2].engine_request.prompt_ids, (std::vector<int32_t>{4, 5, 6}));
  // A one-element batch is one prompt.
  EXPECT_EQ(parsed({{"prompt", {"x"}}}).prompts.size(), 1u);
}

TEST(OpenAiRequestTest, CompletionPromptListErrorsNameThePrompt) {
  ApiError e = error_of({{"prompt", {{1, 2}, {}}}});
  EXPECT_EQ(e.param, "prompt");
  EXPECT_NE(e.message.find("prompt[1]"), std::string::npos) << e.message;
  e = error_of({{"prompt", {{1, 2}, {1, 99999999}}}});
  EXPECT_EQ(e.param, "prompt");
  EXPECT_NE(e.message.find("prompt[1][1]"), std::string::npos) << e.message;
  e = error_of({{"prompt", {"a", 7}}});
  EXPECT_NE(e.message.find("prompt[1]"), std::string::npos) << e.message;
  e = error_of({{"prompt", json::array()}});
  EXPECT_EQ(e.param, "prompt");
  // Each prompt must fit the context with max_tokens; the message says which.
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "hello ";
  e = error_of({{"prompt", {"short", long_prompt}}, {"max_tokens", 4}});
  EXPECT_EQ(e.code, "context_length_exceeded");
  EXPECT_NE(e.message.find("prompt[1]"), std::string::npos) << e.message;
}

TEST(OpenAiRequestTest, CompletionEchoIsThePromptText) {
  GenerationRequest g = parsed({{"prompt", {"Hello there", "Bye"}}, {"echo", true}, {"max_tokens", 2}});
  ASSERT_EQ(g.prompts.size(), 2u);
  EXPECT_TRUE(g.generate);
  EXPECT_EQ(g.prompts[0].echo, "Hello there");
  EXPECT_EQ(g.prompts[1].echo, "Bye");
  // Token ids are decoded for the echo (special tokens kept).
  const std::vector<int32_t> ids = encode("<|im_start|>user");
  g = parsed({{"prompt", ids}, {"echo", true}, {"max_tokens", 2}});
  EXPECT_EQ(g.prompts[0].echo, "<|im_start|>user");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"echo", "yes"}}).param, "echo");
}

TEST(OpenAiRequestTest, MaxTokensZeroOnlyWithEcho) {
  GenerationRequest g = parsed({{"prompt", {"a b", "c"}}, {"echo", true}, {"max_tokens", 0}});
  EXPECT_FALSE(g.generate);
  ASSERT_EQ(g.prompts.size(), 2u);
  EXPECT_EQ(g.prompts[1].echo, "c");
  ApiError e = error_of({{"prompt", "x"}, {"max_tokens", 0}});
  EXPECT_EQ(e.param, "max_tokens");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"max_completion_tokens", 0}}).param, "max_completion_tokens");
  EXPECT_EQ(error_of({{"prompt", "x"}, {"echo", true}, {"max_tokens", -1}}).param, "max_tokens");
  // A prompt as long as the context can still be echoed (nothing is generated).
  ServedModel small = qwen_model();
  small.max_model_len = 2;
  g = parsed({{"prompt", {1, 2}}, {"echo", true}, {"max_tokens", 0}}, ApiKind::kCompletion, small);
  EXPECT_FALSE(g.generate);
}

TEST(OpenAiRequestTest, EchoWithLogprobsAsksTheEngineForPromptLogprobs) {
  // lm-eval-harness's loglikelihood request: prefill only, on the engine.
  GenerationRequest g = parsed({{"prompt", {"a b", "c"}}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 0}});
  EXPECT_TRUE(g.generate);
  EXPECT_TRUE(g.echo_logprobs);
  EXPECT_TRUE(g.logprobs);
  EXPECT_EQ(g.top_logprobs, 1);
  EXPECT_FALSE(g.prompt_logprobs.has_value());
  ASSERT_EQ(g.prompts.size(), 2u);
  for (const GenerationPrompt& p : g.prompts) {
    EXPECT_EQ(p.engine_request.prompt_logprobs, 1);
    EXPECT_EQ(p.engine_request.params.max_tokens, 0);
  }
  EXPECT_EQ(g.prompts[0].echo, "a b");
  // With generation: the prompt's logprobs and then the generated ones.
  g = parsed({{"prompt", "x"}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 3}});
  EXPECT_TRUE(g.echo_logprobs);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_logprobs, 0);
  EXPECT_EQ(g.prompts[0].engine_request.params.max_tokens, 3);
  // A prompt that fills the context can be scored (nothing is generated).
  ServedModel small = qwen_model();
  small.max_model_len = 2;
  g = parsed({{"prompt", {1, 2}}, {"echo", true}, {"logprobs", 2}, {"max_tokens", 0}}, ApiKind::kCompletion, small);
  EXPECT_TRUE(g.generate);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_logprobs, 2);
  // echo false with logprobs is an ordinary request.
  g = parsed({{"prompt", "x"}, {"echo", false}, {"logprobs", 1}});
  EXPECT_TRUE(g.logprobs);
  EXPECT_FALSE(g.echo_logprobs);
  EXPECT_FALSE(g.prompts[0].engine_request.prompt_logprobs.has_value());
  // max_tokens 0 without echo is still refused, logprobs or not.
  EXPECT_EQ(error_of({{"prompt", "x"}, {"logprobs", 1}, {"max_tokens", 0}}).param, "max_tokens");
}

TEST(OpenAiRequestTest, VllmPromptLogprobs) {
  // Completions: the larger N of logprobs (with echo) and prompt_logprobs goes to the engine.
  GenerationRequest g = parsed({{"prompt", "x y"}, {"prompt_logprobs", 2}, {"max_tokens", 1}});
  EXPECT_EQ(g.prompt_logprobs, 2);
  EXPECT_FALSE(g.echo_logprobs);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_logprobs, 2);
  g = parsed({{"prompt", "x y"}, {"prompt_logprobs", 1}, {"echo", true}, {"logprobs", 4}, {"max_tokens", 0}});
  EXPECT_EQ(g.prompt_logprobs, 1);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_logprobs, 4);
  // Chat, prefill only with echo.
  const json chat = {{{"role", "user"}, {"content", "hi"}}};
  g = parsed({{"messages", chat}, {"prompt_logprobs", 0}, {"echo", true}, {"max_tokens", 0}}, ApiKind::kChat);
  EXPECT_TRUE(g.generate);
  EXPECT_EQ(g.prompt_logprobs, 0);
  EXPECT_EQ(g.prompts[0].engine_request.prompt_logprobs, 0);
  EXPECT_EQ(g.prompts[0].engine_request.params.max_tokens, 0);
  // Chat's echo with logprobs is not completions' prompt-logprobs echo.
  g = parsed({{"messages", chat}, {"echo", true}, {"logprobs", true}, {"max_tokens", 2}}, ApiKind::kChat);
  EXPECT_FALSE(g.echo_logprobs);
  EXPECT_FALSE(g.prompts[0].engine_request.prompt_logprobs.has_value());
  ApiError e = error_of({{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", true}});
  EXPECT_NE(e.message.find("stream"), std::string::npos) << e.message;
}

const json kPrefill = {{{"role", "user"}, {"content", "Write a haiku."}},
                       {{"role", "assistant"}, {"content", "Soft rain on the roof, "}}};

std::string rendered(const json& messages, ChatPromptEnd end) {
  ServedModel m = qwen_model();
  auto msgs = nlohmann::ordered_json::parse(messages.dump());
  auto text = render_chat(*m.chat_template, msgs, end, "", m.tokenizer->eos_token().value_or(""));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

TEST(OpenAiRequestTest, ContinueFinalMessageEndsThePromptInsideIt) {
  GenerationRequest g =
      parsed({{"messages", kPrefill}, {"continue_final_message", true}, {"add_generation_prompt", false}}, ApiKind::kChat);
  const std::string text = rendered(kPrefill, ChatPromptEnd::kContinueFinalMessage);
  // Qwen3's template ends an assistant turn with <|im_end|>; the prefill stays open (after the
  // empty think block Qwen3 writes into the final assistant turn), and its trailing space stays
  // too (the template keeps content as given).
  const std::string tail = "<|im_start|>assistant\n<think>\n\n</think>\n\nSoft rain on the roof, ";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail) << text;
  EXPECT_EQ(g.prompts.at(0).engine_request.prompt_ids, encode(text, false));
  EXPECT_EQ(g.role, "assistant");
  // continue_final_message alone turns the generation prompt off.
  g = parsed({{"messages", kPrefill}, {"continue_final_message", true}}, ApiKind::kChat);
  EXPECT_EQ(g.prompts.at(0).engine_request.prompt_ids, encode(text, false));
  // add_generation_prompt false: the conversation as rendered, no assistant header after it.
  g = parsed({{"messages", kPrefill}, {"add_generation_prompt", false}}, ApiKind::kChat);
  EXPECT_EQ(g.prompts.at(0).engine_request.prompt_ids, encode(rendered(kPrefill, ChatPromptEnd::kNone), false));
  g = parsed({{"messages", kPrefill}}, ApiKind::kChat);
  EXPECT_EQ(g.prompts.at(0).engine_request.prompt_ids,
            encode(rendered(kPrefill, ChatPromptEnd::kGenerationPrompt), false));
}

TEST(OpenAiRequestTest, ContinueFinalMessageErrors) {
  ApiError e = error_of({{"messages", kPrefill}, {"continue_final_message", true}, {"add_generation_prompt", true}},
                        ApiKind::kChat);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "continue_final_message");
  EXPECT_NE(e.message.find("add_generation_prompt"), std::string::npos) << e.message;
  EXPECT_EQ(error_of({{"messages", kPrefill}, {"continue_final_message", 1}}, ApiKind::kChat).param,
            "continue_final_message");
  EXPECT_EQ(error_of({{"messages", kPrefill}, {"add_generation_prompt", "no"}}, ApiKind::kChat).param,
            "add_generation_prompt");
  // A final message without content has nothing to continue (transformers' ValueError).
  e = error_of({{"messages", {{{"role", "user"}, {"content", "hi"}}, {{"role", "assistant"}}}},
                {"continue_final_message", true}},
               ApiKind::kChat);
  EXPECT_EQ(e.param, "continue_final_message");
  EXPECT_NE(e.message.find("no \"content\""), std::string::npos) << e.message;
}

TEST(OpenAiRequestTest, ChatEchoAndRoleFollowVllm) {
  // Continued assistant message: the reply is "assistant" and echo is the prefill.
  GenerationRequest g = parsed({{"messages", kPrefill}, {"continue_final_message", true}, {"echo", true}}, ApiKind::kChat);
  EXPECT_EQ(g.role, "assistant");
  EXPECT_EQ(g.prompts.at(0).echo, "Soft rain on the roof, ");
  // A generation prompt after a user message: the reply's role is assistant, nothing to echo.
  const json user_last = {{{"role", "user"}, {"content", "Hi"}}};
  g = parsed({{"messages", user_last}, {"echo", true}}, ApiKind::kChat);
  EXPECT_EQ(g.role, "assistant");
  EXPECT_EQ(g.prompts.at(0).echo, "");
  // No generation prompt: the reply continues the final message's role, and echoes it.
  g = parsed({{"messages", user_last}, {"echo", true}, {"add_generation_prompt", false}}, ApiKind::kChat);
  EXPECT_EQ(g.role, "user");
  EXPECT_EQ(g.prompts.at(0).echo, "Hi");
  // Without echo nothing is prepended.
  g = parsed({{"messages", kPrefill}, {"continue_final_message", true}}, ApiKind::kChat);
  EXPECT_EQ(g.prompts.at(0).echo, "");
}

TEST(OpenAiRequestTest, TextPartsAreJoinedWithNewlines) {
  const json parts = {{{"role", "user"},
                       {"content", {{{"type", "text"}, {"text", "first"}}, {{"type", "text"}, {"text", "second"}}}}}};
  const json joined = {{{"role", "user"}, {"content", "first\nsecond"}}};
  EXPECT_EQ(parsed({{"messages", parts}}, ApiKind::kChat).prompts.at(0).engine_request.prompt_ids,
            parsed({{"messages", joined}}, ApiKind::kChat).prompts.at(0).engine_request.prompt_ids);
  // The echo of a text-part message is the joined text.
  const json prefill = {{{"role", "user"}, {"content", "Go"}},
                        {{"role", "assistant"},
                         {"content", {{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}}}}};
  EXPECT_EQ(parsed({{"messages", prefill}, {"continue_final_message", true}, {"echo", true}}, ApiKind::kChat)
                .prompts.at(0)
                .echo,
            "a\nb");
}

TEST(OpenAiRequestTest, AddSpecialTokensAndPriority) {
  GenerationRequest g = parsed({{"prompt", "hi"}, {"priority", -3}});
  EXPECT_EQ(g.prompts.at(0).engine_request.priority, -3);
  EXPECT_EQ(error_of({{"prompt", "hi"}, {"priority", "high"}}).param, "priority");
  EXPECT_EQ(error_of({{"prompt", "hi"}, {"add_special_tokens", 1}}).param, "add_special_tokens");
  EXPECT_EQ(parsed({{"prompt", "hi"}, {"add_special_tokens", false}}).prompts.at(0).engine_request.prompt_ids,
            encode("hi", false));
  // Chat: the template writes the special tokens; add_special_tokens true adds the tokenizer's too.
  const json m = {{{"role", "user"}, {"content", "Hi"}}};
  EXPECT_EQ(parsed({{"messages", m}, {"add_special_tokens", true}}, ApiKind::kChat).prompts.at(0).engine_request.prompt_ids,
            encode(rendered(m, ChatPromptEnd::kGenerationPrompt), true));
}

TEST(OpenAiRequestTest, FieldsThatWouldChangeTheResultAreRefusedByName) {
  const json chat = {{{"role", "user"}, {"content", "x"}}};
  struct Case {
    json body;
    ApiKind kind;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"prompt", "x"}, {"guided_json", {{"type", "object"}}}}, ApiKind::kCompletion, "guided_json"},
      {{{"messages", chat}, {"guided_regex", "a+"}}, ApiKind::kChat, "guided_regex"},
      {{{"messages", chat}, {"guided_choice", {"a", "b"}}}, ApiKind::kChat, "guided_choice"},
      {{{"messages", chat}, {"structured_outputs", {{"json", json::object()}}}}, ApiKind::kChat, "structured_outputs"},
      {{{"messages", chat}, {"tools", {{{"type", "function"}}}}}, ApiKind::kChat, "tools"},
      {{{"messages", chat}, {"tool_choice", "required"}}, ApiKind::kChat, "tool_choice"},
      {{{"messages", chat}, {"functions", {{{"name", "f"}}}}}, ApiKind::kChat, "functions"},
      {{{"messages", chat}, {"chat_template", "{{ messages }}"}}, ApiKind::kChat, "chat_template"},
      {{{"prompt", "x"}, {"bad_words", {"ok", 5}}}, ApiKind::kCompletion, "bad_words"},
      {{{"prompt", "x"}, {"bad_words", {""}}}, ApiKind::kCompletion, "bad_words"},
      {{{"prompt", "x"}, {"bad_words", "bad"}}, ApiKind::kCompletion, "bad_words"},
      {{{"prompt", "x"}, {"bad_words", {std::string(300, 'a')}}}, ApiKind::kCompletion, "bad_words"},
      {{{"prompt", "x"}, {"allowed_token_ids", {1, 2}}}, ApiKind::kCompletion, "allowed_token_ids"},
      {{{"prompt", "x"}, {"use_beam_search", true}}, ApiKind::kCompletion, "use_beam_search"},
      {{{"prompt", "x"}, {"include_stop_str_in_output", true}}, ApiKind::kCompletion, "include_stop_str_in_output"},
      {{{"prompt", "x"}, {"prompt_logprobs", 21}}, ApiKind::kCompletion, "prompt_logprobs"},
      {{{"prompt", "x"}, {"prompt_logprobs", -1}}, ApiKind::kCompletion, "prompt_logprobs"},
      {{{"messages", chat}, {"prompt_logprobs", true}}, ApiKind::kChat, "prompt_logprobs"},
      {{{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", true}}, ApiKind::kCompletion, "prompt_logprobs"},
      {{{"prompt", "x"}, {"truncate_prompt_tokens", 5}}, ApiKind::kCompletion, "truncate_prompt_tokens"},
      {{{"prompt", "x"}, {"return_tokens_as_token_ids", true}}, ApiKind::kCompletion, "return_tokens_as_token_ids"},
      {{{"prompt", "x"}, {"suffix", "end"}}, ApiKind::kCompletion, "suffix"},
      {{{"prompt", "x"}, {"best_of", 3}}, ApiKind::kCompletion, "best_of"},
      {{{"messages", chat}, {"modalities", {"text", "audio"}}}, ApiKind::kChat, "modalities"},
      {{{"messages", chat}, {"audio", {{"voice", "alloy"}}}}, ApiKind::kChat, "audio"},
      {{{"messages", chat}, {"web_search_options", json::object()}}, ApiKind::kChat, "web_search_options"},
      {{{"prompt", "x"}, {"stream", true}, {"stream_options", {{"continuous_usage_stats", true}}}},
       ApiKind::kCompletion, "stream_options"},
      {{{"messages", chat}, {"reasoning_effort", "high"}}, ApiKind::kChat, "reasoning_effort"},
      {{{"prompt", "x"}, {"spaces_between_special_tokens", false}}, ApiKind::kCompletion,
       "spaces_between_special_tokens"},
      {{{"prompt", "x"}, {"return_token_ids", true}}, ApiKind::kCompletion, "return_token_ids"},
      {{{"messages", chat}, {"documents", {1}}}, ApiKind::kChat, "documents"},
  };
  for (const Case& c : cases) {
    ApiError e = error_of(c.body, c.kind);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.message.rfind(c.param, 0), 0u) << e.message;
  }
  // Their no-op values pass.
  for (const json& body : {json{{"messages", chat}, {"tools", json::array()}, {"tool_choice", "none"}},
                           json{{"messages", chat}, {"use_beam_search", false}, {"modalities", {"text"}}},
                           json{{"messages", chat}, {"response_format", {{"type", "text"}}}, {"bad_words", json::array()}},
                           json{{"messages", chat}, {"include_stop_str_in_output", false}, {"best_of", 1}}}) {
    parsed(body, ApiKind::kChat);
  }
}

TEST(OpenAiRequestTest, BadWordsJoinTheServersBannedPhrases) {
  ServedModel m = qwen_model();
  GenerationRequest none = parsed({{"prompt", "x"}}, ApiKind::kCompletion, m);
  EXPECT_TRUE(none.prompts.at(0).engine_request.banned_phrases.empty());
  GenerationRequest own = parsed({{"prompt", {"x", "y"}}, {"bad_words", {"Moses", "the LORD"}}}, ApiKind::kCompletion, m);
  for (const GenerationPrompt& p : own.prompts) {
    ASSERT_EQ(p.engine_request.banned_phrases.size(), 1u);
    EXPECT_EQ(p.engine_request.banned_phrases[0]->phrases(), (std::vector<std::string>{"Moses", "the LORD"}));
  }
  m.banned_phrases = *BannedPhraseSet::compile({"Pharaoh"}, "--banned-phrases", {});
  GenerationRequest both = parsed({{"prompt", "x"}, {"bad_words", {"Moses"}}}, ApiKind::kCompletion, m);
  ASSERT_EQ(both.prompts.at(0).engine_request.banned_phrases.size(), 2u);
  EXPECT_EQ(both.prompts.at(0).engine_request.banned_phrases[0], m.banned_phrases);
  GenerationRequest server_only = parsed({{"prompt", "x"}}, ApiKind::kCompletion, m);
  EXPECT_EQ(server_only.prompts.at(0).engine_request.banned_phrases.size(), 1u);
}

TEST(OpenAiRequestTest, DocumentsAndTemplateKwargsReachTheTemplate) {
  ServedModel m = qwen_model();
  auto tmpl = ChatTemplate::parse(
      "{% for d in documents %}[{{ d.title }}]{% endfor %}{{ flavor }}:{{ messages[0].content }}");
  ASSERT_TRUE(tmpl.ok());
  m.chat_template = std::make_shared<ChatTemplate>(std::move(*tmpl));
  GenerationRequest g = parsed({{"messages", {{{"role", "user"}, {"content", "q"}}}},
                                {"documents", {{{"title", "a"}}, {{"title", "b"}}}},
                                {"chat_template_kwargs", {{"flavor", "x"}}}},
                               ApiKind::kChat, m);
  EXPECT_EQ(g.prompts.at(0).engine_request.prompt_ids, encode("[a][b]x:q", false));
}

TEST(OpenAiRequestTest, TokenizeMessagesHonoursThePromptEnd) {
  auto ids = tokenize_request({{"messages", kPrefill}, {"continue_final_message", true}}, qwen_model());
  ASSERT_TRUE(std::holds_alternative<std::vector<int32_t>>(ids));
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids), encode(rendered(kPrefill, ChatPromptEnd::kContinueFinalMessage), false));
}

}  // namespace
}  // namespace weft
