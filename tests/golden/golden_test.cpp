// The engine against Hugging Face transformers on the golden models (see README.md here).
//
// Tolerances (logits, max abs over every prompt position; logits reach |35|, std ~8):
//   F32 weights:                     kF32Tolerance. transformers' own cached-vs-uncached
//                                    decoding differs by ~1e-4 (reference.json).
//   BF16 weights, F32 compute/KV:    kF32Tolerance against the reference computed in F32 from the
//                                    same BF16 weights (the model is the same function).
//   BF16 weights, BF16 KV cache:     below the error of transformers' own BF16 computation
//                                    (logits_bf16_compute vs the F32 reference, ~1.75): K/V are
//                                    rounded to 8 mantissa bits, everything else stays F32.
// Greedy tokens must be identical (the dumps' smallest top-1/top-2 margin is 0.02).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "golden_harness.h"
#include "weft/kernels/linear.h"

namespace weft::golden {
namespace {

constexpr float kF32Tolerance = 2e-3f;

std::unique_ptr<LocalEngine> make_engine(const std::string& name, std::optional<DType> kv_dtype = DType::kF32,
                                         int block_size = 16) {
  LocalEngineOptions options;
  options.model_dir = model_dir(name);
  options.num_threads = 2;
  options.kv.block_size = block_size;
  options.kv.dtype = kv_dtype;
  options.kv.max_blocks = 64;
  auto engine = LocalEngine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

class GoldenModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenModelTest, PromptLogitsMatchTransformersAlone) {
  const Reference ref = load_reference(GetParam());
  auto engine = make_engine(GetParam());
  ASSERT_NE(engine, nullptr);
  float worst = 0.0f;
  for (int i = 0; i < kNumPrompts; ++i) {
    auto logits = score_prompts(*engine, {ref.prompts[i]}, 4096);
    const float diff = max_abs_diff(logits[0], ref.prompt_logits[i]);
    EXPECT_LT(diff, kF32Tolerance) << "prompt " << i;
    worst = std::max(worst, diff);
  }
  std::printf("%s: max |logit diff| over all prompt positions = %.2e\n", GetParam().c_str(), worst);
}

TEST_P(GoldenModelTest, PromptLogitsMatchWhenBatchedAndChunked) {
  const Reference ref = load_reference(GetParam());
  // Block size 4 spreads each sequence over many non-adjacent blocks.
  auto engine = make_engine(GetParam(), DType::kF32, 4);
  ASSERT_NE(engine, nullptr);
  for (int64_t budget : {4096, 7, 1}) {
    auto logits = score_prompts(*engine, ref.prompts, budget);
    for (int i = 0; i < kNumPrompts; ++i) {
      EXPECT_LT(max_abs_diff(logits[i], ref.prompt_logits[i]), kF32Tolerance)
          << "prompt " << i << " budget " << budget;
    }
  }
}

TEST_P(GoldenModelTest, GreedyTokensMatchTransformers) {
  const Reference ref = load_reference(GetParam());
  auto engine = make_engine(GetParam());
  ASSERT_NE(engine, nullptr);
  // Together (one continuous batch) and one prompt at a time must both match.
  GreedyRun batched = greedy(engine->engine(), ref.prompts, kGreedyTokens);
  for (int i = 0; i < kNumPrompts; ++i) {
    EXPECT_EQ(batched.ids[i], ref.greedy_ids[i]) << "prompt " << i;
    GreedyRun alone = greedy(engine->engine(), {ref.prompts[i]}, kGreedyTokens);
    EXPECT_EQ(alone.ids[0], ref.greedy_ids[i]) << "prompt " << i << " alone";
    GreedyRun argmax = greedy(engine->engine(), {ref.prompts[i]}, kGreedyTokens, /*with_logprobs=*/false);
    EXPECT_EQ(argmax.ids[0], ref.greedy_ids[i]) << "prompt " << i << " argmax in the runner";
    // The reported top-5 raw logprobs agree with log_softmax of the reference logits.
    for (int t = 0; t < kGreedyTokens && t < static_cast<int>(batched.top_logprobs[i].size()); ++t) {
      const std::vector<float> expected = log_softmax_row(ref.greedy_logits[i], t);
      for (const auto& [token, logprob] : batched.top_logprobs[i][t]) {
        EXPECT_NEAR(logprob, expected[token], kF32Tolerance) << "prompt " << i << " step " << t;
      }
    }
  }
}

// Top-k sampling, and greedy decoding with logprobs, from the candidates (and log-sum-exps) the
// runner returns give the same tokens and logprobs as from the full logits (the distributed path
// is in tests/mpi/mpi_golden_check.cpp).
TEST_P(GoldenModelTest, SamplingFromCandidatesMatchesFullLogits) {
  const Reference ref = load_reference(GetParam());
  auto engine = make_engine(GetParam());
  ASSERT_NE(engine, nullptr);
  const int64_t rows = kNumPrompts * kGreedyTokens;
  for (const SamplingParams& params : {top_k_sampling_params(), greedy_logprobs_params()}) {
    const CandidateSamplingRuns runs = sample_both_ways(engine->engine(), ref.prompts, kGreedyTokens, params);
    EXPECT_EQ(runs.full_rows.full_logits, rows);
    EXPECT_EQ(runs.full_rows.candidates, 0);
    EXPECT_EQ(runs.candidate_rows.candidates, rows);
    EXPECT_EQ(runs.candidate_rows.full_logits, 0);
    EXPECT_EQ(compare_runs(runs.from_candidates, runs.full, 1e-5f), "") << "temperature " << params.temperature;
    int differs_from_greedy = 0;
    for (int i = 0; i < kNumPrompts; ++i) differs_from_greedy += runs.full.ids[i] != ref.greedy_ids[i];
    if (params.is_greedy()) {
      EXPECT_EQ(differs_from_greedy, 0);
    } else {
      EXPECT_GT(differs_from_greedy, 0) << "the sampling parameters do not really sample";
    }
  }
}

// A generation far past the window on a cache far smaller than it (mistral_window: window 12;
// 8 blocks of 4 = 32 tokens for 47 + 200): the blocks behind the window are freed as it goes,
// and every token is the argmax of the logits a full-context
// scoring pass (which frees nothing) computes for the same sequence.
TEST(SlidingWindowTest, LongGenerationFreesBlocksBehindTheWindow) {
  const Reference ref = load_reference("mistral_window");
  LocalEngineOptions options;
  options.model_dir = model_dir("mistral_window");
  options.num_threads = 2;
  options.kv.block_size = 4;
  options.kv.dtype = DType::kF32;
  options.kv.max_blocks = 8;
  options.scheduler.max_num_batched_tokens = 8;
  auto small = LocalEngine::create(options);
  ASSERT_TRUE(small.ok()) << small.status();
  Engine& engine = (*small)->engine();
  const std::vector<int32_t>& prompt = ref.prompts[3];
  constexpr int kTokens = 200;
  Request request;
  request.prompt_ids = prompt;
  request.params.temperature = 0.0f;
  request.params.max_tokens = kTokens;
  request.params.ignore_eos = true;
  ASSERT_TRUE(engine.add_request(request).ok());
  std::vector<int32_t> generated;
  int64_t fewest_free = engine.blocks().num_free_blocks();
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    for (const SequenceOutput& o : *outputs) generated.insert(generated.end(), o.token_ids.begin(), o.token_ids.end());
    fewest_free = std::min(fewest_free, engine.blocks().num_free_blocks());
  }
  ASSERT_EQ(generated.size(), static_cast<size_t>(kTokens));
  const int64_t most_held = 8 - fewest_free;
  std::printf("mistral_window: %d tokens held at most %lld of 8 blocks (without freeing: %d)\n",
              static_cast<int>(prompt.size()) + kTokens, static_cast<long long>(most_held),
              (static_cast<int>(prompt.size()) + kTokens + 3) / 4);
  EXPECT_LE(most_held, 6);  // ceil((12 + 8) / 4) + 1
  EXPECT_EQ(engine.blocks().num_free_blocks(), 8) << "every block returns when the sequence ends";
  EXPECT_EQ(std::vector<int32_t>(generated.begin(), generated.begin() + kGreedyTokens), ref.greedy_ids[3])
      << "the first 32 tokens are transformers' greedy tokens";

  options.kv.max_blocks = 128;
  auto big = LocalEngine::create(options);
  ASSERT_TRUE(big.ok()) << big.status();
  std::vector<int32_t> full = prompt;
  full.insert(full.end(), generated.begin(), generated.end() - 1);
  const Tensor logits = score_prompts(**big, {full}, 4096)[0];
  for (int t = 0; t < kTokens; ++t) {
    const int64_t row = static_cast<int64_t>(prompt.size()) - 1 + t;
    const float* r = logits.data_as<float>() + row * logits.dim(1);
    const float best = *std::max_element(r, r + logits.dim(1));
    EXPECT_NEAR(r[generated[t]], best, 1e-3f) << "token " << t << " is not the argmax of full-context scoring";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenModelTest,
                         ::testing::Values("llama_gqa", "llama3_tied", "mistral", "qwen2_bias",
                                           "qwen3_qknorm", "llama_linear_rope", "llama_bf16",
                                           "llama_4layers", "mistral_window", "qwen2_window",
                                           "phi3_longrope", "phi3_window", "mixtral_moe",
                                           "qwen3_moe", "qwen2_moe", "qwen2_yarn", "llama_dynamic_ntk", "llama_h128",
                                           "gemma2_softcap", "gemma3_text"));

// LongRoPE: a prompt longer than original_max_position_embeddings (58 > 48 tokens) runs with the
// long factors at every position, as transformers' single pass does, whether prefilled whole or
// in chunks, and so does everything generated after it (no recompute: it never crosses 48).
TEST(LongRopeTest, APromptPastTheOriginalContextUsesTheLongFactorsThroughout) {
  const Reference ref = load_reference("phi3_longrope");
  auto ids_of = [](const Tensor& t) {
    return std::vector<int32_t>(t.data_as<int32_t>(), t.data_as<int32_t>() + t.numel());
  };
  const std::vector<int32_t> prompt = ids_of(ref.extra.at("long_prompt.ids"));
  ASSERT_EQ(prompt.size(), 58u);
  auto engine = make_engine("phi3_longrope", DType::kF32, 4);
  ASSERT_NE(engine, nullptr);
  for (int64_t budget : {4096, 7}) {
    const Tensor logits = score_prompts(*engine, {prompt}, budget)[0];
    EXPECT_LT(max_abs_diff(logits, ref.extra.at("long_prompt.logits")), kF32Tolerance) << "budget " << budget;
  }
  const GreedyRun run = greedy(engine->engine(), {prompt}, kGreedyTokens);
  EXPECT_EQ(run.ids[0], ids_of(ref.extra.at("long_prompt.greedy_ids")));
}

TEST(GoldenBf16Test, Bf16KvCacheStaysCloseToTheF32Reference) {
  const Reference ref = load_reference("llama_bf16");
  auto engine = make_engine("llama_bf16", std::nullopt);  // auto: the model's dtype (BF16)
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->kv_cache().shape().dtype, DType::kBF16);
  auto logits = score_prompts(*engine, ref.prompts, 4096);
  float worst = 0.0f, transformers_bf16 = 0.0f;
  for (int i = 0; i < kNumPrompts; ++i) {
    worst = std::max(worst, max_abs_diff(logits[i], ref.prompt_logits[i]));
    const std::string name = "prompt_" + std::to_string(i) + ".logits_bf16_compute";
    transformers_bf16 = std::max(transformers_bf16, max_abs_diff(ref.extra.at(name), ref.prompt_logits[i]));
  }
  EXPECT_LT(worst, transformers_bf16);
  std::printf("llama_bf16, max |logit - F32 reference|: weft with a BF16 KV cache %.4f, "
              "transformers computing in BF16 %.4f\n", worst, transformers_bf16);
}

// --matmul-precision bf16 (BF16-rounded activations into the BF16 weights, F32 accumulation):
// its error against the F32 reference is stated here, next to transformers' own BF16 computation
// of the same model, and must stay below it. Greedy tokens are printed, not asserted (margins of
// these random models are below BF16 error). Where the CPU lacks AVX512-BF16 the path is not
// taken and the test skips.
TEST(GoldenBf16Test, Bf16ActivationsStayWithinTransformersBf16Error) {
  kernels::set_matmul_precision(kernels::MatmulPrecision::kBf16);
  if (!kernels::linear_uses_bf16_activations(DType::kBF16)) {
    kernels::set_matmul_precision(kernels::MatmulPrecision::kF32);
    GTEST_SKIP() << "no AVX512-BF16 on this CPU: --matmul-precision bf16 keeps F32 activations";
  }
  const Reference ref = load_reference("llama_bf16");
  auto engine = make_engine("llama_bf16", DType::kF32);
  ASSERT_NE(engine, nullptr);
  auto logits = score_prompts(*engine, ref.prompts, 4096);
  kernels::set_matmul_precision(kernels::MatmulPrecision::kF32);
  float worst = 0.0f, transformers_bf16 = 0.0f;
  for (int i = 0; i < kNumPrompts; ++i) {
    worst = std::max(worst, max_abs_diff(logits[i], ref.prompt_logits[i]));
    const std::string name = "prompt_" + std::to_string(i) + ".logits_bf16_compute";
    transformers_bf16 = std::max(transformers_bf16, max_abs_diff(ref.extra.at(name), ref.prompt_logits[i]));
  }
  std::printf("llama_bf16, max |logit - F32 reference|: weft with BF16 activations %.4f, "
              "transformers computing in BF16 %.4f\n", worst, transformers_bf16);
  EXPECT_GT(worst, 1e-3f) << "the BF16 path was not taken";
  EXPECT_LT(worst, transformers_bf16);
}

}  // namespace
}  // namespace weft::golden
