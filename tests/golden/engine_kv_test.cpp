// KV management on the golden models, through the whole Engine:
//  - preemption: a KV budget too small for all requests at once still completes every request
//    with greedy output identical to an unconstrained run and to transformers' greedy ids;
//  - prefix caching: a request sharing a long prefix with an earlier one prefills only its
//    suffix (Engine::num_prefilled_tokens) and generates exactly what an uncached engine does;
//  - n > 1 forks (copy-on-write of the shared partial block): every sampled token's logprob, as
//    the engine reports it, equals the log-softmax of the logits obtained by scoring that
//    sequence's prompt + output from scratch (so each fork attended to its own KV).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "golden_harness.h"

namespace weft::golden {
namespace {

std::unique_ptr<LocalEngine> make_engine(const std::string& name, int block_size,
                                         int64_t max_blocks, bool prefix_caching,
                                         int64_t max_batched_tokens = 2048) {
  LocalEngineOptions options;
  options.model_dir = model_dir(name);
  options.num_threads = 2;
  options.kv.block_size = block_size;
  options.kv.dtype = DType::kF32;
  options.kv.max_blocks = max_blocks;
  options.scheduler.enable_prefix_caching = prefix_caching;
  options.scheduler.max_num_batched_tokens = max_batched_tokens;
  auto engine = LocalEngine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

struct GreedyResult {
  std::vector<std::vector<int32_t>> ids;
  int preemptions = 0;
};

// Greedy, eos ignored, all requests submitted at once.
GreedyResult run_greedy(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, int num_tokens) {
  GreedyResult run;
  run.ids.resize(prompts.size());
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request request;
    request.prompt_ids = prompts[i];
    request.params.temperature = 0.0f;
    request.params.max_tokens = num_tokens;
    request.params.ignore_eos = true;
    auto id = engine.add_request(request);
    EXPECT_TRUE(id.ok()) << id.status();
    if (id.ok()) index_of[*id] = i;
  }
  for (int step = 0; engine.has_unfinished() && step < 10000; ++step) {
    auto outputs = engine.step();
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    if (!outputs.ok()) break;
    run.preemptions += static_cast<int>(engine.scheduler().last_preempted().size());
    for (const SequenceOutput& o : *outputs) {
      auto& ids = run.ids[index_of.at(o.request_id)];
      ids.insert(ids.end(), o.token_ids.begin(), o.token_ids.end());
    }
  }
  EXPECT_FALSE(engine.has_unfinished());
  return run;
}

class EngineKvTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineKvTest, PreemptionUnderATightKvBudgetKeepsGreedyOutput) {
  const Reference ref = load_reference(GetParam());
  auto free_engine = make_engine(GetParam(), 4, 256, false);
  ASSERT_NE(free_engine, nullptr);
  const GreedyResult expected = run_greedy(free_engine->engine(), ref.prompts, kGreedyTokens);
  EXPECT_EQ(expected.preemptions, 0);
  // The longest request (47 + 32 tokens) needs 20 blocks of 4; all four together need ~45.
  size_t longest = 0;
  for (const auto& p : ref.prompts) longest = std::max(longest, p.size());
  int64_t tight = static_cast<int64_t>((longest + kGreedyTokens + 3) / 4) + 2;
  int64_t chunk = 2048;
  if (const int64_t window = kv_window(free_engine->model().config); window > 0) {
    // Blocks behind the window are freed, so a sequence holds at most (window + chunk) / 4 + 1.
    chunk = 8;
    tight = (window + chunk + 3) / 4 + 2;
  }
  for (bool caching : {false, true}) {
    auto tight_engine = make_engine(GetParam(), 4, tight, caching, chunk);
    ASSERT_NE(tight_engine, nullptr);
    const GreedyResult run = run_greedy(tight_engine->engine(), ref.prompts, kGreedyTokens);
    EXPECT_GT(run.preemptions, 0) << "the budget of " << tight << " blocks never preempted";
    for (int i = 0; i < kNumPrompts; ++i) {
      EXPECT_EQ(run.ids[i], expected.ids[i]) << "prompt " << i << " caching " << caching;
      EXPECT_EQ(run.ids[i], ref.greedy_ids[i]) << "prompt " << i << " vs transformers";
    }
    std::printf("%s: %d blocks, prefix caching %d: %d preemptions, output identical\n",
                GetParam().c_str(), static_cast<int>(tight), caching, run.preemptions);
  }
}

TEST_P(EngineKvTest, PrefixCachingPrefillsOnlyTheSuffixWithIdenticalOutput) {
  const Reference ref = load_reference(GetParam());
  constexpr int kBlock = 4;
  // A long shared prefix (47 + 26 tokens), then different suffixes.
  std::vector<int32_t> shared = ref.prompts[3];
  shared.insert(shared.end(), ref.prompts[2].begin(), ref.prompts[2].end());
  std::vector<int32_t> first = shared, second = shared;
  first.insert(first.end(), ref.prompts[1].begin(), ref.prompts[1].end());
  second.insert(second.end(), ref.prompts[0].begin(), ref.prompts[0].end());
  size_t common = 0;
  while (common < first.size() && common < second.size() && first[common] == second[common]) ++common;
  auto cached_engine = make_engine(GetParam(), kBlock, 256, true);
  auto plain_engine = make_engine(GetParam(), kBlock, 256, false);
  ASSERT_NE(cached_engine, nullptr);
  ASSERT_NE(plain_engine, nullptr);
  // LongRoPE: these prompts pass original_max_position_embeddings, so their KV depends on their
  // length and they share nothing (DynamicNtkKvTest checks the same rule with sharing prompts).
  const int64_t above = prompt_dependent_kv_above(cached_engine->model().config);
  const bool shares = above == 0 || static_cast<int64_t>(second.size()) <= above;
  const int64_t cached =
      shares ? static_cast<int64_t>(std::min(common, second.size() - 1)) / kBlock * kBlock : 0;
  Engine& c = cached_engine->engine();
  Engine& p = plain_engine->engine();
  const GreedyResult c1 = run_greedy(c, {first}, 16);
  const GreedyResult p1 = run_greedy(p, {first}, 16);
  EXPECT_EQ(c.num_prefilled_tokens(), static_cast<int64_t>(first.size()));
  const int64_t before = c.num_prefilled_tokens();
  const GreedyResult c2 = run_greedy(c, {second}, 16);
  const GreedyResult p2 = run_greedy(p, {second}, 16);
  const int64_t prefilled = c.num_prefilled_tokens() - before;
  EXPECT_EQ(prefilled, static_cast<int64_t>(second.size()) - cached);
  if (shares) {
    EXPECT_GE(cached, 64);
  }
  EXPECT_EQ(p.num_prefilled_tokens(), static_cast<int64_t>(first.size() + second.size()));
  EXPECT_EQ(c1.ids, p1.ids);
  EXPECT_EQ(c2.ids, p2.ids);
  EXPECT_EQ(c.num_prefix_hit_tokens(), cached);
  std::printf("%s: second prompt %zu tokens, %lld from the prefix cache, %lld prefilled\n",
              GetParam().c_str(), second.size(), static_cast<long long>(cached),
              static_cast<long long>(prefilled));
}

TEST_P(EngineKvTest, ForkedSequencesEachSeeTheirOwnKv) {
  const Reference ref = load_reference(GetParam());
  auto engine = make_engine(GetParam(), 4, 256, true);
  ASSERT_NE(engine, nullptr);
  Request request;
  request.prompt_ids = ref.prompts[1];  // 11 tokens: the forks share a partial third block
  request.params.n = 4;
  request.params.temperature = 1.0f;
  request.params.seed = 7;
  request.params.max_tokens = 12;
  request.params.ignore_eos = true;
  request.params.logprobs = 0;
  ASSERT_TRUE(engine->engine().add_request(request).ok());
  std::vector<std::vector<int32_t>> ids(4);
  std::vector<std::vector<float>> logprobs(4);
  while (engine->engine().has_unfinished()) {
    auto outputs = engine->engine().step();
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    for (const SequenceOutput& o : *outputs) {
      for (size_t t = 0; t < o.token_ids.size(); ++t) {
        ids[o.index].push_back(o.token_ids[t]);
        logprobs[o.index].push_back(o.samples[t].logprob);
      }
    }
  }
  // The prompt runs once; then three of the four holders of the shared partial block (tokens
  // 8..10) recompute it into their own block together with their first new token.
  EXPECT_EQ(engine->engine().num_prefilled_tokens(), 11 + 3 * 4);
  std::set<std::vector<int32_t>> distinct(ids.begin(), ids.end());
  EXPECT_GT(distinct.size(), 1u) << "sampling at temperature 1 gave identical sequences";
  auto scorer = make_engine(GetParam(), 16, 64, false);
  ASSERT_NE(scorer, nullptr);
  for (int s = 0; s < 4; ++s) {
    ASSERT_EQ(ids[s].size(), 12u);
    std::vector<int32_t> full = request.prompt_ids;
    full.insert(full.end(), ids[s].begin(), ids[s].end());
    const Tensor logits = score_prompts(*scorer, {full}, 4096)[0];
    for (size_t t = 0; t < ids[s].size(); ++t) {
      const auto row = log_softmax_row(logits, static_cast<int64_t>(request.prompt_ids.size() + t - 1));
      EXPECT_NEAR(logprobs[s][t], row[ids[s][t]], 2e-3) << "sequence " << s << " token " << t;
    }
  }
}

// Dynamic NTK RoPE (llama_dynamic_ntk: max_position_embeddings 20, factor 4): a token's KV
// depends on its prompt's length once that passes 20, yet preemption, recompute and chunking
// keep transformers' greedy tokens.
TEST(DynamicNtkKvTest, PreemptionAndChunkedPrefillKeepTransformersGreedyTokens) {
  const Reference ref = load_reference("llama_dynamic_ntk");
  for (bool caching : {false, true}) {
    // 22 blocks of 4 hold the longest request (47 + 32) and little else; prompts in chunks of 8.
    auto engine = make_engine("llama_dynamic_ntk", 4, 22, caching, 8);
    ASSERT_NE(engine, nullptr);
    const GreedyResult run = run_greedy(engine->engine(), ref.prompts, kGreedyTokens);
    EXPECT_GT(run.preemptions, 0);
    for (int i = 0; i < kNumPrompts; ++i) {
      EXPECT_EQ(run.ids[i], ref.greedy_ids[i]) << "prompt " << i << " caching " << caching;
    }
  }
}

// Two prompts past max_position_embeddings with a common prefix of 47 tokens: the second must
// not take the first's blocks (computed with the frequencies of another length), so it prefills
// everything and matches an engine without prefix caching to the logprob. Prompts within it
// still share.
TEST(DynamicNtkKvTest, PromptsPastTheContextDoNotShareThePrefixCache) {
  const Reference ref = load_reference("llama_dynamic_ntk");
  auto cached_engine = make_engine("llama_dynamic_ntk", 4, 256, true);
  auto plain_engine = make_engine("llama_dynamic_ntk", 4, 256, false);
  ASSERT_NE(cached_engine, nullptr);
  ASSERT_NE(plain_engine, nullptr);
  Engine& c = cached_engine->engine();
  Engine& p = plain_engine->engine();
  auto concat = [](std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<int32_t> long_a = concat(ref.prompts[3], ref.prompts[1]);  // 58 tokens
  const std::vector<int32_t> long_b = concat(ref.prompts[3], ref.prompts[0]);  // 50 tokens
  const std::vector<int32_t> short_a = concat(ref.prompts[1], ref.prompts[0]);  // 14 tokens
  const std::vector<int32_t> short_b = concat(ref.prompts[1], {7, 8, 9, 10, 11});  // 16 tokens
  // Each prompt with the prefix-cache hits it must get: none past the context, two blocks of 4
  // (the 11-token common prefix) within it.
  const std::vector<std::pair<std::vector<int32_t>, int64_t>> cases = {
      {long_a, 0}, {long_b, 0}, {short_a, 0}, {short_b, 8}};
  for (const auto& [prompt, expected_hits] : cases) {
    const int64_t hits_before = c.num_prefix_hit_tokens();
    const GreedyRun cached = greedy(c, {prompt}, 16);
    const GreedyRun plain = greedy(p, {prompt}, 16);
    EXPECT_EQ(c.num_prefix_hit_tokens() - hits_before, expected_hits) << prompt.size() << "-token prompt";
    EXPECT_EQ(cached.ids, plain.ids) << prompt.size() << "-token prompt";
    for (size_t t = 0; t < cached.logprobs[0].size(); ++t) {
      EXPECT_NEAR(cached.logprobs[0][t], plain.logprobs[0][t], 1e-5f)
          << prompt.size() << "-token prompt, token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EngineKvTest,
                         ::testing::Values("llama_gqa", "qwen2_bias", "mistral", "mistral_window",
                                           "qwen2_window", "phi3_longrope", "phi3_window",
                                           "mixtral_moe", "qwen3_moe", "qwen2_moe",
                                           "gemma2_softcap", "gemma3_text"));

}  // namespace
}  // namespace weft::golden
