// Prompt logprobs (Request::prompt_logprobs) through the whole Engine against transformers: each
// prompt token's logprob given the tokens before it equals log_softmax of the reference's prompt
// logits row before it, alone, batched, with chunked prefill, beside ordinary requests, with
// n > 1, after the prompt was cached, while speculating, and summed it equals Engine::score.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "golden_harness.h"

namespace weft::golden {
namespace {

// log_softmax of rows within the logits tolerance (2e-3) has at most twice its error.
constexpr float kTolerance = 4e-3f;
constexpr int kTop = 5;

std::unique_ptr<LocalEngine> make_engine(const std::string& name, int64_t budget = 2048, int block_size = 4,
                                         SpeculativeMethod method = SpeculativeMethod::kNone) {
  LocalEngineOptions options;
  options.model_dir = model_dir(name);
  options.num_threads = 2;
  options.kv.block_size = block_size;
  options.kv.dtype = DType::kF32;
  options.kv.max_blocks = 256;
  options.scheduler.max_num_batched_tokens = budget;
  options.seed = 7;
  options.speculative.method = method;
  options.speculative.engine.adaptive = false;
  auto engine = LocalEngine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

SamplingParams prefill_only() {
  SamplingParams p;
  p.max_tokens = 0;
  return p;
}

class PromptLogprobsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PromptLogprobsTest, MatchTransformersAloneBatchedAndChunked) {
  const Reference ref = load_reference(GetParam());
  for (int64_t budget : {2048, 7, 1}) {
    auto engine = make_engine(GetParam(), budget);
    ASSERT_NE(engine, nullptr);
    // Batched: every prompt at once; then the first alone.
    PromptLogprobRun run = run_prompt_logprobs(engine->engine(), ref.prompts, kTop, prefill_only());
    for (int i = 0; i < kNumPrompts; ++i) {
      ASSERT_NE(run.prompt_logprobs[i][0], nullptr) << "prompt " << i << " budget " << budget;
      EXPECT_EQ(run.times_carried[i][0], 1);
      EXPECT_TRUE(run.ids[i][0].empty());
      EXPECT_EQ(run.finish_reasons[i][0], FinishReason::kLength);
      EXPECT_EQ(check_prompt_logprobs(*run.prompt_logprobs[i][0], ref.prompts[i], ref.prompt_logits[i], kTop, kTolerance),
                "")
          << "prompt " << i << " budget " << budget;
    }
    PromptLogprobRun alone = run_prompt_logprobs(engine->engine(), {ref.prompts[0]}, 0, prefill_only());
    ASSERT_NE(alone.prompt_logprobs[0][0], nullptr);
    EXPECT_EQ(check_prompt_logprobs(*alone.prompt_logprobs[0][0], ref.prompts[0], ref.prompt_logits[0], 0, kTolerance), "");
    EXPECT_EQ(engine->engine().blocks().num_free_blocks(), engine->engine().blocks().num_blocks());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PromptLogprobsTest,
                         ::testing::Values("llama_4layers", "llama_gqa", "qwen2_bias", "qwen3_qknorm", "gemma2_softcap",
                                           "gemma3_text", "mistral_window", "mixtral_moe"));

TEST(PromptLogprobsEngineTest, GenerationAfterThePromptIsUnchanged) {
  const Reference ref = load_reference("llama_gqa");
  auto engine = make_engine("llama_gqa", 7);
  ASSERT_NE(engine, nullptr);
  // Ordinary greedy requests alongside prompt-logprobs requests (submitted first, so they share
  // steps): the prompt-logprobs ones also generate, and every greedy output is transformers'.
  SamplingParams greedy_params;
  greedy_params.temperature = 0.0f;
  greedy_params.max_tokens = kGreedyTokens;
  greedy_params.logprobs = 2;
  Request plain;
  plain.prompt_ids = ref.prompts[1];
  plain.params = greedy_params;
  plain.params.ignore_eos = true;
  ASSERT_TRUE(engine->engine().add_request(plain).ok());
  PromptLogprobRun run = run_prompt_logprobs(engine->engine(), ref.prompts, kTop, greedy_params);
  for (int i = 0; i < kNumPrompts; ++i) {
    EXPECT_EQ(run.ids[i][0], ref.greedy_ids[i]) << "prompt " << i;
    EXPECT_TRUE(run.carried_first[i][0]);
    EXPECT_EQ(run.times_carried[i][0], 1);
    ASSERT_NE(run.prompt_logprobs[i][0], nullptr);
    EXPECT_EQ(check_prompt_logprobs(*run.prompt_logprobs[i][0], ref.prompts[i], ref.prompt_logits[i], kTop, kTolerance), "");
  }
}

TEST(PromptLogprobsEngineTest, EverySequenceOfARequestGetsThemOnce) {
  const Reference ref = load_reference("qwen2_bias");
  auto engine = make_engine("qwen2_bias", 5);
  ASSERT_NE(engine, nullptr);
  SamplingParams sampled;
  sampled.n = 3;
  sampled.temperature = 0.8f;
  sampled.seed = 11;
  sampled.max_tokens = 6;
  PromptLogprobRun run = run_prompt_logprobs(engine->engine(), ref.prompts, 2, sampled);
  for (int i = 0; i < kNumPrompts; ++i) {
    for (int s = 0; s < 3; ++s) {
      ASSERT_NE(run.prompt_logprobs[i][s], nullptr) << "prompt " << i << " seq " << s;
      EXPECT_EQ(run.prompt_logprobs[i][s], run.prompt_logprobs[i][0]);
      EXPECT_EQ(run.times_carried[i][s], 1);
      EXPECT_TRUE(run.carried_first[i][s]);
      EXPECT_EQ(run.ids[i][s].size(), 6u);
    }
    EXPECT_EQ(check_prompt_logprobs(*run.prompt_logprobs[i][0], ref.prompts[i], ref.prompt_logits[i], 2, kTolerance), "");
  }
  // The same sampled tokens as without prompt logprobs (seeds given per prompt).
  GreedyRun plain = generate(engine->engine(), ref.prompts, 6, [&] {
    SamplingParams p = sampled;
    p.n = 1;
    return p;
  }());
  for (int i = 0; i < kNumPrompts; ++i) EXPECT_EQ(run.ids[i][0], plain.ids[i]) << "prompt " << i;
  // Prefill only with n > 1: every sequence finishes with the prompt.
  SamplingParams none = prefill_only();
  none.n = 2;
  PromptLogprobRun empty = run_prompt_logprobs(engine->engine(), {ref.prompts[2]}, 1, none);
  for (int s = 0; s < 2; ++s) {
    ASSERT_NE(empty.prompt_logprobs[0][s], nullptr);
    EXPECT_TRUE(empty.ids[0][s].empty());
    EXPECT_EQ(empty.finish_reasons[0][s], FinishReason::kLength);
  }
  EXPECT_EQ(engine->engine().blocks().num_free_blocks(), engine->engine().blocks().num_blocks());
}

TEST(PromptLogprobsEngineTest, ACachedPromptIsComputedAgain) {
  const Reference ref = load_reference("llama_4layers");
  auto engine = make_engine("llama_4layers");
  ASSERT_NE(engine, nullptr);
  SamplingParams two;
  two.max_tokens = 2;
  generate(engine->engine(), {ref.prompts[3]}, 2, two);  // caches the prompt's full blocks
  const int64_t before = engine->engine().num_prefilled_tokens();
  PromptLogprobRun run = run_prompt_logprobs(engine->engine(), {ref.prompts[3]}, kTop, prefill_only());
  EXPECT_EQ(engine->engine().num_prefilled_tokens() - before, static_cast<int64_t>(ref.prompts[3].size()));
  ASSERT_NE(run.prompt_logprobs[0][0], nullptr);
  EXPECT_EQ(check_prompt_logprobs(*run.prompt_logprobs[0][0], ref.prompts[3], ref.prompt_logits[3], kTop, kTolerance), "");
}

TEST(PromptLogprobsEngineTest, SpeculatingEnginesLeavePrefillChunksAlone) {
  const Reference ref = load_reference("llama_gqa");
  for (int64_t budget : {2048, 1, 3}) {
    auto engine = make_engine("llama_gqa", budget, 4, SpeculativeMethod::kNgram);
    ASSERT_NE(engine, nullptr);
    ASSERT_TRUE(engine->engine().speculating());
    SamplingParams greedy_params;
    greedy_params.temperature = 0.0f;
    greedy_params.max_tokens = kGreedyTokens;
    PromptLogprobRun run = run_prompt_logprobs(engine->engine(), ref.prompts, kTop, greedy_params);
    for (int i = 0; i < kNumPrompts; ++i) {
      EXPECT_EQ(run.ids[i][0], ref.greedy_ids[i]) << "prompt " << i << " budget " << budget;
      ASSERT_NE(run.prompt_logprobs[i][0], nullptr);
      EXPECT_EQ(check_prompt_logprobs(*run.prompt_logprobs[i][0], ref.prompts[i], ref.prompt_logits[i], kTop, kTolerance),
                "")
          << "prompt " << i << " budget " << budget;
    }
  }
}

TEST(PromptLogprobsEngineTest, SumEqualsScore) {
  const Reference ref = load_reference("mistral");
  auto engine = make_engine("mistral", 6);
  ASSERT_NE(engine, nullptr);
  for (int i = 0; i < kNumPrompts; ++i) {
    auto scored = engine->engine().score(ref.prompts[i]);
    ASSERT_TRUE(scored.ok()) << scored.status();
    PromptLogprobRun run = run_prompt_logprobs(engine->engine(), {ref.prompts[i]}, 0, prefill_only());
    ASSERT_NE(run.prompt_logprobs[0][0], nullptr);
    const PromptLogprobs& got = *run.prompt_logprobs[0][0];
    ASSERT_EQ(got.size(), scored->size() + 1);
    for (size_t p = 1; p < got.size(); ++p) EXPECT_NEAR(got[p].logprob, (*scored)[p - 1], 1e-4) << "position " << p;
  }
}

TEST(PromptLogprobsEngineTest, Validation) {
  auto engine = make_engine("llama_4layers");
  ASSERT_NE(engine, nullptr);
  Request r;
  r.prompt_ids = {1, 2, 3};
  r.params.max_tokens = 0;
  auto refused = engine->engine().add_request(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "max_tokens: must be >= 1, got 0");
  r.prompt_logprobs = 21;
  refused = engine->engine().add_request(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "prompt_logprobs: must be in [0, 20], got 21");
  r.prompt_logprobs = 0;
  r.params.min_tokens = 1;
  refused = engine->engine().add_request(r);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("min_tokens"), std::string::npos) << refused.status();
  r.params.min_tokens = 0;
  // A one-token prompt has only its empty first position.
  r.prompt_ids = {5};
  PromptLogprobRun run = run_prompt_logprobs(engine->engine(), {{5}}, 3, prefill_only());
  ASSERT_NE(run.prompt_logprobs[0][0], nullptr);
  ASSERT_EQ(run.prompt_logprobs[0][0]->size(), 1u);
  EXPECT_TRUE(std::isnan(run.prompt_logprobs[0][0]->front().logprob));
}

}  // namespace
}  // namespace weft::golden
