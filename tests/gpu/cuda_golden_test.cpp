// The CUDA executor end to end (label gpu; skipped without a GPU).
//
// References:
//  * The golden models' transformers dumps (tests/golden/models), for every golden model
//    (head_dim 8, 16 and 32; F32 weights except llama_bf16), with its own BF16 tolerance (below).
//  * The CPU engine (itself held to the transformers dumps by tests/golden) on generated
//    Llama-shaped models with head_dim 64 (GQA 2) and 128 (MQA, tied embeddings): all-position
//    prompt logits, batched and chunked, and greedy generation.
//
// Tolerance. The GPU computes with BF16 activations, weights and KV cache (F32 inside kernels);
// the CPU reference keeps F32 activations and an F32 KV cache over the same BF16 weights. Each
// BF16 rounding has relative error <= 2^-9; a layer rounds the residual stream and each GEMM
// output once (~6 roundings), and the errors add up roughly as a random walk over the layers, so
// for these 2-4 layer models a logit deviates by about 1% of the logits' scale. We allow 4% of
// the largest |reference logit| of the prompt (kRelativeTolerance): comfortably above that noise,
// far below what a wrong op (a missing bias, a swapped rope half, a wrong KV slot) produces, which
// moves logits by O(100%) of their scale. Greedy tokens must equal the CPU's up to the first step
// where the CPU's own top-1 / top-2 margin is below twice the tolerance (a near tie that BF16 may
// legitimately flip); every run checked here must compare at least 4 tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "engine/cuda/cuda_device_executor.h"
#include "engine/cuda/cuda_executor.h"
#include "golden_harness.h"
#include "model/random_model.h"
#include "weft/kernels/cuda_device.h"

namespace weft::golden {
namespace {

constexpr float kRelativeTolerance = 0.04f;

class CudaGoldenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU";
  }
};

std::filesystem::path random_model(const std::string& name, RandomModelSpec spec) {
  const auto dir = std::filesystem::temp_directory_path() / ("weft_cuda_golden_" + name);
  std::filesystem::remove_all(dir);
  const absl::Status s = write_random_model(dir, spec);
  EXPECT_TRUE(s.ok()) << s;
  return dir;
}

RandomModelSpec gqa_hd64() {
  RandomModelSpec s;
  s.vocab_size = 512;
  s.hidden_size = 256;
  s.intermediate_size = 512;
  s.num_layers = 2;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.max_position_embeddings = 512;
  s.dtype = DType::kBF16;
  s.seed = 7;
  return s;
}

RandomModelSpec mqa_hd128_tied() {
  RandomModelSpec s = gqa_hd64();
  s.num_heads = 2;
  s.num_kv_heads = 1;
  s.num_layers = 4;
  s.tie_word_embeddings = true;
  s.seed = 11;
  return s;
}

std::unique_ptr<LocalEngine> make_engine(const std::filesystem::path& dir, bool cuda) {
  LocalEngineOptions o;
  o.model_dir = dir;
  o.num_threads = 2;
  o.kv.block_size = 16;
  o.kv.max_blocks = 128;
  if (cuda) {
    o.device = EngineDevice::kCuda;
  } else {
    o.kv.dtype = DType::kF32;
  }
  auto e = LocalEngine::create(o, {}, cuda ? DeviceExecutorFactory(make_cuda_device_executor)
                                           : DeviceExecutorFactory());
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

std::unique_ptr<CudaExecutor> make_executor(const std::filesystem::path& dir, int block_size) {
  auto config = load_model_config(dir);
  EXPECT_TRUE(config.ok()) << config.status();
  auto weights = WeightStore::open(dir);
  EXPECT_TRUE(weights.ok()) << weights.status();
  CudaExecutorOptions o;
  o.block_size = block_size;
  o.max_num_batched_tokens = 4096;
  o.max_kv_blocks = 256;
  o.max_model_len = 512;
  o.print_plan = false;
  auto ex = CudaExecutor::create(*config, *weights, o);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return ex.ok() ? std::move(*ex) : nullptr;
}

float max_abs(const Tensor& t) {
  float m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.data_as<float>()[i]));
  return m;
}

std::vector<std::vector<int32_t>> prompts(int64_t vocab) {
  std::vector<std::vector<int32_t>> out;
  for (int len : {5, 17, 33, 70}) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(static_cast<int32_t>((len * 131 + i * 29) % vocab));
    out.push_back(p);
  }
  return out;
}

void check_prompt_logits(const RandomModelSpec& spec, const std::string& name) {
  const auto dir = random_model(name, spec);
  auto cpu = make_engine(dir, false);
  ASSERT_NE(cpu, nullptr);
  const auto ps = prompts(spec.vocab_size);
  const std::vector<Tensor> expected = score_prompts(*cpu, ps, 4096);
  for (int block_size : {16, 32}) {
    auto ex = make_executor(dir, block_size);
    ASSERT_NE(ex, nullptr);
    // One step; chunks of 7 tokens (prefill chunks mixed with decode-like rows); one token a step.
    for (int64_t budget : {4096, 7, 1}) {
      const std::vector<Tensor> got =
          score_prompts(*ex, ex->num_kv_blocks(), block_size, spec.vocab_size, ps, budget);
      for (size_t i = 0; i < ps.size(); ++i) {
        const float tol = kRelativeTolerance * max_abs(expected[i]);
        const float diff = max_abs_diff(got[i], expected[i]);
        EXPECT_LT(diff, tol) << name << " prompt " << i << " block size " << block_size
                             << " budget " << budget;
        if (budget == 4096 && block_size == 16) {
          std::printf("%s prompt %zu: max |logit diff| %.4f (tolerance %.4f)\n", name.c_str(), i,
                      diff, tol);
        }
      }
    }
  }
}

TEST_F(CudaGoldenTest, PromptLogitsMatchCpuGqaHeadDim64) { check_prompt_logits(gqa_hd64(), "gqa64"); }
TEST_F(CudaGoldenTest, PromptLogitsMatchCpuMqaHeadDim128Tied) {
  check_prompt_logits(mqa_hd128_tied(), "mqa128");
}

// Greedy through the whole engine (scheduler, GPU argmax, CUDA graphs for decode) against the
// CPU engine's greedy tokens, up to the first near tie of the CPU logits.
void check_greedy(const RandomModelSpec& spec, const std::string& name) {
  const auto dir = random_model(name, spec);
  auto cpu = make_engine(dir, false);
  auto gpu = make_engine(dir, true);
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(gpu, nullptr);
  const auto ps = prompts(spec.vocab_size);
  const GreedyRun want = greedy(cpu->engine(), ps, kGreedyTokens, /*with_logprobs=*/false);
  for (bool with_logprobs : {false, true}) {  // argmax on the GPU / logits to the CPU sampler
    const GreedyRun got = greedy(gpu->engine(), ps, kGreedyTokens, with_logprobs);
    for (size_t i = 0; i < ps.size(); ++i) {
      // The CPU's logits along its own greedy continuation give each step's top-1/top-2 margin.
      std::vector<int32_t> full = ps[i];
      full.insert(full.end(), want.ids[i].begin(), want.ids[i].end());
      const Tensor logits = score_prompts(*cpu, {full}, 4096)[0];
      const float tol = kRelativeTolerance * max_abs(logits);
      int compared = 0;
      for (int t = 0; t < kGreedyTokens; ++t) {
        const int64_t row = static_cast<int64_t>(ps[i].size()) - 1 + t;
        std::vector<float> r(logits.data_as<float>() + row * spec.vocab_size,
                             logits.data_as<float>() + (row + 1) * spec.vocab_size);
        std::partial_sort(r.begin(), r.begin() + 2, r.end(), std::greater<float>());
        if (r[0] - r[1] < 2 * tol) break;
        ASSERT_EQ(got.ids[i][t], want.ids[i][t])
            << name << " prompt " << i << " step " << t << (with_logprobs ? " (CPU sampler)" : " (GPU argmax)");
        ++compared;
      }
      std::printf("%s prompt %zu: %d greedy tokens compared%s\n", name.c_str(), i, compared,
                  with_logprobs ? " (CPU sampler)" : " (GPU argmax)");
      EXPECT_GE(compared, 4) << name << " prompt " << i << ": too many near ties to judge";
    }
  }
}

// Tied embeddings here: with an untied random head this model's top-2 logits lie within the
// near-tie margin within the first 3 steps for every prompt, in each of 13 seeds tried (0-3 tokens
// judged per prompt); the untied head is checked by the prompt-logits test.
TEST_F(CudaGoldenTest, GreedyMatchesCpuGqaHeadDim64) {
  RandomModelSpec spec = gqa_hd64();
  spec.tie_word_embeddings = true;
  check_greedy(spec, "gqa64_tied_greedy");
}
TEST_F(CudaGoldenTest, GreedyMatchesCpuMqaHeadDim128Tied) {
  check_greedy(mqa_hd128_tied(), "mqa128_greedy");
}

// Against transformers directly: every golden model's all-position prompt logits through the
// CUDA executor vs the committed F32 dumps (computed by transformers in F32 from the stored
// weights).
//
// Tolerance. The executor rounds the weights to BF16 (all but llama_bf16 are stored in F32) and
// keeps activations and the KV cache in BF16, F32 inside each kernel; the dumps are F32
// throughout. The size of that error was measured with transformers itself: loading each golden
// model with dtype=bfloat16 (eager attention, the same weight rounding plus BF16 activations) and
// comparing with the same dumps over the same prompts gives, per model, a worst max |diff| of
// 3.2% (qwen3_qknorm) to 6.9% (llama_4layers) of the prompt's max |reference logit| (e.g. 1.75
// on llama_bf16, reference.json's max_abs_diff_bf16_compute_vs_f32), and an RMS diff of 1.8% to
// 4.8% of the reference logits' standard deviation. We allow about twice the worst of each:
// max |diff| <= 15% of max |ref| (about 5 logits, vs logits of std ~8 and max ~35), and RMS diff
// <= 10% of std(ref). The RMS bound is the discriminating one: a wrong op (a missing bias or q/k
// norm, the wrong rope scaling, a swapped rope half, a stale KV slot) moves the logits by O(std),
// i.e. an RMS diff near 100% of std. Token budget 4096 runs the four prompts as one ragged
// prefill step (prefill kernel); budget 1 feeds one token a step (decode kernel).
constexpr float kGoldenMaxTolerance = 0.15f;  // of max |reference logit| of the prompt
constexpr float kGoldenRmsTolerance = 0.10f;  // of the reference logits' standard deviation

// Root mean square of a - b, and the standard deviation of b (two F32 tensors, same shape).
std::pair<float, float> rms_diff_and_std(const Tensor& a, const Tensor& b) {
  const int64_t n = b.numel();
  double mean = 0.0;
  for (int64_t i = 0; i < n; ++i) mean += b.data_as<float>()[i];
  mean /= static_cast<double>(n);
  double sq_diff = 0.0, sq_dev = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a.data_as<float>()[i], y = b.data_as<float>()[i];
    sq_diff += (x - y) * (x - y);
    sq_dev += (y - mean) * (y - mean);
  }
  return {static_cast<float>(std::sqrt(sq_diff / static_cast<double>(n))),
          static_cast<float>(std::sqrt(sq_dev / static_cast<double>(n)))};
}

TEST_F(CudaGoldenTest, GoldenModelsMatchTransformers) {
  for (const char* name : {"llama_gqa", "llama3_tied", "mistral", "qwen2_bias", "qwen3_qknorm",
                           "llama_linear_rope", "llama_bf16", "llama_4layers"}) {
    auto config = load_model_config(model_dir(name));
    ASSERT_TRUE(config.ok()) << config.status();
    const Reference ref = load_reference(name);
    auto ex = make_executor(model_dir(name), 16);
    ASSERT_NE(ex, nullptr) << name;
    for (int64_t budget : {4096, 1}) {
      const std::vector<Tensor> got = score_prompts(*ex, ex->num_kv_blocks(), 16,
                                                    config->vocab_size, ref.prompts, budget);
      ASSERT_EQ(got.size(), static_cast<size_t>(kNumPrompts)) << name;
      for (int i = 0; i < kNumPrompts; ++i) {
        const Tensor& want = ref.prompt_logits[i];
        const float diff = max_abs_diff(got[i], want);
        const auto [rms, std_dev] = rms_diff_and_std(got[i], want);
        EXPECT_LT(diff, kGoldenMaxTolerance * max_abs(want))
            << name << " (head_dim " << config->head_dim << ") prompt " << i << " budget "
            << budget;
        EXPECT_LT(rms, kGoldenRmsTolerance * std_dev)
            << name << " (head_dim " << config->head_dim << ") prompt " << i << " budget "
            << budget;
        std::printf("%s (head_dim %lld) prompt %d budget %lld: max |logit diff| %.3f (%.1f%% of "
                    "max |ref|), rms diff %.1f%% of std\n",
                    name, static_cast<long long>(config->head_dim), i,
                    static_cast<long long>(budget), diff, 100.0f * diff / max_abs(want),
                    100.0f * rms / std_dev);
      }
    }
  }
}

// What the CUDA kernels do not implement is refused by name before any device is touched, so
// this runs (and must pass) without a GPU too.
TEST(CudaExecutorRefusalTest, GemmaIsRefusedByName) {
  for (const char* name : {"gemma2_softcap", "gemma3_text"}) {
    auto config = load_model_config(model_dir(name));
    ASSERT_TRUE(config.ok()) << config.status();
    auto weights = WeightStore::open(model_dir(name));
    ASSERT_TRUE(weights.ok()) << weights.status();
    CudaExecutorOptions o;
    o.print_plan = false;
    auto ex = CudaExecutor::create(*config, *weights, o);
    ASSERT_FALSE(ex.ok()) << name;
    EXPECT_EQ(ex.status().code(), absl::StatusCode::kUnimplemented) << ex.status();
    EXPECT_NE(ex.status().message().find(config->architecture), std::string::npos) << ex.status();
    EXPECT_NE(ex.status().message().find("use --device cpu"), std::string::npos) << ex.status();
  }
}

}  // namespace
}  // namespace weft::golden
