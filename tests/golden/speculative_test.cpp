// Speculative decoding through the whole Engine (engine/speculative/, sampling/
// speculative_verifier.h):
//  - greedy identity: on every golden model, with n-gram lookup and with the model as its own
//    draft, the tokens and logprobs equal those of plain decoding; also under preemption,
//    chunked prefill and prefix caching, with n > 1, and with max_tokens / stop tokens cutting
//    inside an accepted run;
//  - the KV blocks (the target's and the draft's) are all free again once requests finish or
//    are aborted;
//  - on the default model with its draft: seeded sampled requests give the non-speculative
//    tokens, and unseeded ones (rejection sampling over drawn guesses) follow the same
//    distribution (two-sample chi-square at p = 1e-3; a test that the check can fail, too).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../unit/sampling/chi_square.h"
#include "engine/speculative/draft_model_proposer.h"
#include "golden_harness.h"
#include "tokenizer/tokenizer.h"

namespace weft::golden {
namespace {

const std::vector<std::string> kModels = {
    "llama_4layers", "llama_gqa",     "llama_bf16",   "llama3_tied",   "llama_linear_rope", "mistral",
    "mistral_window", "qwen2_bias",   "qwen2_window", "qwen2_yarn",    "qwen3_qknorm",      "phi3_longrope",
    "phi3_window",    "gemma2_softcap", "gemma3_text", "mixtral_moe",  "qwen2_moe",         "qwen3_moe",
    "llama_dynamic_ntk"};

std::filesystem::path default_model() { return std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-model"; }
std::filesystem::path default_draft() { return std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-draft"; }

struct Shape {
  int block_size = 16;
  int64_t max_blocks = 0;
  bool prefix_caching = true;
  int64_t max_batched_tokens = 2048;
  int max_num_seqs = 64;
};

std::unique_ptr<LocalEngine> make_engine(const std::filesystem::path& dir, SpeculativeMethod method,
                                         const std::filesystem::path& draft = {}, Shape shape = {},
                                         int k = 4, bool adaptive = false) {
  LocalEngineOptions options;
  options.model_dir = dir;
  options.num_threads = 2;
  options.kv.block_size = shape.block_size;
  options.kv.dtype = DType::kF32;
  options.kv.max_blocks = shape.max_blocks;
  options.kv.memory_bytes = 64ll << 20;
  options.scheduler.enable_prefix_caching = shape.prefix_caching;
  options.scheduler.max_num_batched_tokens = shape.max_batched_tokens;
  options.scheduler.max_num_seqs = shape.max_num_seqs;
  options.seed = 1234;
  options.speculative.method = method;
  options.speculative.draft_model = draft;
  options.speculative.engine.num_speculative_tokens = k;
  options.speculative.engine.adaptive = adaptive;
  auto engine = LocalEngine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Every KV block is free: the target's and, with a draft model, the draft's.
void expect_idle(LocalEngine& e) {
  EXPECT_EQ(e.engine().blocks().num_free_blocks(), e.engine().blocks().num_blocks());
  if (auto* draft = dynamic_cast<const DraftModelProposer*>(e.engine().proposer())) {
    EXPECT_EQ(draft->blocks().num_free_blocks(), draft->blocks().num_blocks());
  }
}

class SpeculativeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpeculativeGoldenTest, GreedyOutputIsPlainDecodingsWithNgramAndSelfDraft) {
  const Reference ref = load_reference(GetParam());
  const std::filesystem::path dir = model_dir(GetParam());
  auto plain = make_engine(dir, SpeculativeMethod::kNone);
  ASSERT_NE(plain, nullptr);
  const GreedyRun expected = greedy(plain->engine(), ref.prompts, kGreedyTokens);
  const GreedyRun expected_ids = greedy(plain->engine(), ref.prompts, kGreedyTokens, false);
  for (SpeculativeMethod method : {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    SCOPED_TRACE(method == SpeculativeMethod::kNgram ? "ngram" : "self-draft");
    auto spec = make_engine(dir, method, dir);
    ASSERT_NE(spec, nullptr);
    // With logprobs (full or candidate rows, verified by plain sampling) and without (argmax rows).
    EXPECT_EQ(compare_runs(expected, greedy(spec->engine(), ref.prompts, kGreedyTokens), 2e-4), "");
    EXPECT_EQ(greedy(spec->engine(), ref.prompts, kGreedyTokens, false).ids, expected_ids.ids);
    const SpeculationStats& stats = spec->engine().speculation_stats();
    if (method == SpeculativeMethod::kDraftModel) {
      // The model drafting for itself: (nearly) every guess stands.
      EXPECT_GT(stats.num_drafts, 0);
      EXPECT_GT(stats.acceptance_rate(), 0.9) << stats.num_accepted_tokens << " / " << stats.num_draft_tokens;
    }
    EXPECT_EQ(stats.num_emitted_tokens, stats.num_drafts + stats.num_accepted_tokens);
    expect_idle(*spec);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeGoldenTest, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return info.param; });

// Greedy ids of `prompts` on `engine`, submitted together; counts preemptions.
struct BatchRun {
  std::vector<std::vector<int32_t>> ids;
  int preemptions = 0;
};
BatchRun run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, SamplingParams params) {
  BatchRun run;
  run.ids.resize(prompts.size() * params.n);
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request request;
    request.prompt_ids = prompts[i];
    request.params = params;
    auto id = engine.add_request(request);
    EXPECT_TRUE(id.ok()) << id.status();
    if (id.ok()) index_of[*id] = i;
  }
  for (int step = 0; engine.has_unfinished() && step < 20000; ++step) {
    auto outputs = engine.step();
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    if (!outputs.ok()) break;
    run.preemptions += static_cast<int>(engine.scheduler().last_preempted().size());
    for (const SequenceOutput& o : *outputs) {
      auto& ids = run.ids[index_of.at(o.request_id) * params.n + o.index];
      ids.insert(ids.end(), o.token_ids.begin(), o.token_ids.end());
    }
  }
  EXPECT_FALSE(engine.has_unfinished());
  return run;
}

SamplingParams greedy_params(int max_tokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

TEST(SpeculativeEngineTest, PreemptionChunkedPrefillAndPrefixCachingKeepGreedyOutput) {
  for (const char* name : {"llama_gqa", "mistral_window"}) {
    SCOPED_TRACE(name);
    const Reference ref = load_reference(name);
    const std::filesystem::path dir = model_dir(name);
    auto plain = make_engine(dir, SpeculativeMethod::kNone);
    const BatchRun expected = run_all(plain->engine(), ref.prompts, greedy_params(kGreedyTokens));
    // Blocks of 4, a cache too small for all four requests at once (as engine_kv_test sizes
    // it), prompts split into chunks of 16 tokens, and each prompt run twice (the second time
    // from the prefix cache).
    size_t longest = 0;
    for (const auto& prompt : ref.prompts) longest = std::max(longest, prompt.size());
    Shape tight;
    tight.block_size = 4;
    tight.max_blocks = static_cast<int64_t>((longest + kGreedyTokens + 3) / 4) + 2;
    tight.max_batched_tokens = 16;
    if (const int64_t window = kv_window(plain->model().config); window > 0) {
      tight.max_blocks = (window + tight.max_batched_tokens + 3) / 4 + 2;
    }
    for (SpeculativeMethod method : {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
      auto spec = make_engine(dir, method, dir, tight);
      ASSERT_NE(spec, nullptr);
      const BatchRun first = run_all(spec->engine(), ref.prompts, greedy_params(kGreedyTokens));
      const int64_t hits_before = spec->engine().num_prefix_hit_tokens();
      const BatchRun second = run_all(spec->engine(), ref.prompts, greedy_params(kGreedyTokens));
      EXPECT_EQ(first.ids, expected.ids);
      EXPECT_EQ(second.ids, expected.ids);
      EXPECT_GT(first.preemptions + second.preemptions, 0);
      EXPECT_GT(spec->engine().num_prefix_hit_tokens(), hits_before);
      EXPECT_GT(spec->engine().speculation_stats().num_drafts, 0);
      expect_idle(*spec);
    }
  }
}

TEST(SpeculativeEngineTest, MaxTokensAndStopTokensCutInsideAnAcceptedRun) {
  const Reference ref = load_reference("llama_gqa");
  const std::filesystem::path dir = model_dir("llama_gqa");
  auto plain = make_engine(dir, SpeculativeMethod::kNone);
  auto spec = make_engine(dir, SpeculativeMethod::kDraftModel, dir, {}, 8);
  for (int max_tokens : {1, 2, 7, 13}) {
    EXPECT_EQ(run_all(spec->engine(), ref.prompts, greedy_params(max_tokens)).ids,
              run_all(plain->engine(), ref.prompts, greedy_params(max_tokens)).ids)
        << "max_tokens " << max_tokens;
  }
  // A stop token taken from the middle of the plain output.
  const BatchRun full = run_all(plain->engine(), ref.prompts, greedy_params(kGreedyTokens));
  SamplingParams stop = greedy_params(kGreedyTokens);
  stop.stop_token_ids = {full.ids[0][9]};
  const BatchRun cut = run_all(spec->engine(), ref.prompts, stop);
  EXPECT_EQ(cut.ids, run_all(plain->engine(), ref.prompts, stop).ids);
  EXPECT_LE(cut.ids[0].size(), 10u);
  expect_idle(*spec);
}

TEST(SpeculativeEngineTest, ForkedSequencesSpeculateEachOnItsOwn) {
  const Reference ref = load_reference("qwen2_bias");
  const std::filesystem::path dir = model_dir("qwen2_bias");
  auto plain = make_engine(dir, SpeculativeMethod::kNone);
  auto spec = make_engine(dir, SpeculativeMethod::kDraftModel, dir);
  SamplingParams p = greedy_params(20);
  const BatchRun one = run_all(plain->engine(), ref.prompts, p);
  p.n = 3;
  const BatchRun forked = run_all(spec->engine(), ref.prompts, p);
  for (size_t i = 0; i < ref.prompts.size(); ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(forked.ids[i * 3 + j], one.ids[i]) << "prompt " << i << " fork " << j;
  }
  expect_idle(*spec);
}

TEST(SpeculativeEngineTest, AbortsGiveEveryBlockBack) {
  const Reference ref = load_reference("llama_gqa");
  const std::filesystem::path dir = model_dir("llama_gqa");
  for (SpeculativeMethod method : {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    auto spec = make_engine(dir, method, dir);
    Engine& engine = spec->engine();
    std::vector<int64_t> ids;
    for (const auto& prompt : ref.prompts) {
      Request r;
      r.prompt_ids = prompt;
      r.params = greedy_params(200);
      ids.push_back(*engine.add_request(r));
    }
    for (int step = 0; step < 6; ++step) ASSERT_TRUE(engine.step().ok());
    for (int64_t id : ids) engine.abort(id);
    while (engine.has_unfinished()) ASSERT_TRUE(engine.step().ok());
    ASSERT_TRUE(engine.step().ok());
    expect_idle(*spec);
  }
}

// --- the default model with its draft (a real pair: greedy choices agree about 65% of the time) ---

std::vector<std::vector<int32_t>> default_prompts() {
  auto tokenizer = Tokenizer::load(default_model());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::vector<std::vector<int32_t>> prompts;
  // The last one repeats itself, so n-gram lookup has something to find.
  for (const char* text : {"And God said unto Moses,", "In the beginning",
                           "Blessed are the meek: for they shall inherit the earth. Blessed are the meek:"}) {
    prompts.push_back(*(*tokenizer)->encode(text, true));
  }
  return prompts;
}

TEST(SpeculativeDefaultModelTest, GreedyAndSeededSampledTokensAreThePlainOnes) {
  auto plain = make_engine(default_model(), SpeculativeMethod::kNone);
  auto draft = make_engine(default_model(), SpeculativeMethod::kDraftModel, default_draft());
  auto adaptive = make_engine(default_model(), SpeculativeMethod::kDraftModel, default_draft(), {}, 4, true);
  auto ngram = make_engine(default_model(), SpeculativeMethod::kNgram);
  ASSERT_TRUE(plain && draft && adaptive && ngram);
  std::vector<SamplingParams> cases;
  cases.push_back(greedy_params(64));
  cases.back().logprobs = 3;
  SamplingParams sampled = greedy_params(64);
  sampled.temperature = 0.8f;
  sampled.top_p = 0.95f;
  sampled.seed = 77;
  sampled.logprobs = 2;
  cases.push_back(sampled);
  sampled.repetition_penalty = 1.3f;
  sampled.top_k = 40;
  cases.push_back(sampled);
  for (const SamplingParams& p : cases) {
    const GreedyRun expected = generate(plain->engine(), default_prompts(), 64, p);
    for (LocalEngine* e : {draft.get(), adaptive.get(), ngram.get()}) {
      EXPECT_EQ(compare_runs(expected, generate(e->engine(), default_prompts(), 64, p), 2e-4), "")
          << "temperature " << p.temperature << ", proposer " << e->engine().proposer()->name();
    }
  }
  const SpeculationStats& stats = draft->engine().speculation_stats();
  EXPECT_GT(stats.acceptance_rate(), 0.2);
  EXPECT_LT(stats.acceptance_rate(), 1.0);
  for (LocalEngine* e : {draft.get(), adaptive.get(), ngram.get()}) expect_idle(*e);
}

// The token at output position `position` of `count` unseeded requests of one prompt.
std::vector<double> token_histogram(Engine& engine, SamplingParams p, int count, int position) {
  const std::vector<int32_t> prompt = default_prompts()[0];
  p.max_tokens = position + 1;
  p.ignore_eos = true;
  std::vector<double> histogram(4096, 0.0);
  std::map<int64_t, std::vector<int32_t>> ids;
  for (int i = 0; i < count; ++i) {
    Request r;
    r.prompt_ids = prompt;
    r.params = p;
    ids[*engine.add_request(r)];
  }
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    EXPECT_TRUE(outputs.ok()) << outputs.status();
    if (!outputs.ok()) break;
    for (const SequenceOutput& o : *outputs) {
      auto& v = ids[o.request_id];
      v.insert(v.end(), o.token_ids.begin(), o.token_ids.end());
    }
  }
  for (const auto& [id, v] : ids) {
    if (static_cast<int>(v.size()) > position) histogram[v[position]] += 1.0;
  }
  return histogram;
}

// Pearson's two-sample chi-square homogeneity statistic over bins pooled until each holds at
// least 10 observations in the two samples together.
testing::ChiSquareResult two_sample_chi_square(const std::vector<double>& a, const std::vector<double>& b) {
  double na = 0.0, nb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    na += a[i];
    nb += b[i];
  }
  std::vector<std::pair<double, double>> bins;
  double pa = 0.0, pb = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] + b[i] >= 10.0) {
      bins.emplace_back(a[i], b[i]);
    } else {
      pa += a[i];
      pb += b[i];
    }
  }
  if (pa + pb > 0.0) bins.emplace_back(pa, pb);
  testing::ChiSquareResult r;
  for (const auto& [x, y] : bins) {
    const double total = x + y;
    const double ea = total * na / (na + nb);
    const double eb = total * nb / (na + nb);
    r.statistic += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
  }
  r.df = static_cast<int>(bins.size()) - 1;
  return r;
}

TEST(SpeculativeDefaultModelTest, UnseededSampledTokensFollowTheTargetDistribution) {
  constexpr int kRequests = 2000;
  constexpr int kPosition = 3;  // verified after accepted and rejected guesses alike
  // Blocks of 2: the shared prompt comes from the prefix cache instead of 2000 prefills.
  Shape small_blocks;
  small_blocks.block_size = 2;
  auto plain = make_engine(default_model(), SpeculativeMethod::kNone, {}, small_blocks);
  auto draft = make_engine(default_model(), SpeculativeMethod::kDraftModel, default_draft(), small_blocks);
  ASSERT_TRUE(plain && draft);
  SamplingParams top_p;
  top_p.temperature = 0.8f;
  top_p.top_p = 0.95f;
  SamplingParams penalty = top_p;
  penalty.repetition_penalty = 1.3f;
  for (const SamplingParams& p : {top_p, penalty}) {
    const auto expected = token_histogram(plain->engine(), p, kRequests, kPosition);
    const auto got = token_histogram(draft->engine(), p, kRequests, kPosition);
    const auto chi = two_sample_chi_square(expected, got);
    EXPECT_LT(chi.statistic, testing::chi_square_critical(chi.df, 1e-3))
        << "repetition_penalty " << p.repetition_penalty << ": chi2 " << chi.statistic << ", df " << chi.df;
  }
  // Guesses were drawn and verified by rejection (not by plain sampling).
  EXPECT_GT(draft->engine().speculation_stats().num_drafts, kRequests);
  // The check can fail: a hotter temperature is told apart.
  SamplingParams hotter = top_p;
  hotter.temperature = 1.2f;
  const auto chi = two_sample_chi_square(token_histogram(plain->engine(), top_p, kRequests, kPosition),
                                         token_histogram(draft->engine(), hotter, kRequests, kPosition));
  EXPECT_GT(chi.statistic, testing::chi_square_critical(chi.df, 1e-3));
  expect_idle(*draft);
}

}  // namespace
}  // namespace weft::golden
