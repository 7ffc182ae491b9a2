// The GPU sampler (weft/kernels/cuda/sampling.h) against the CPU Sampler (src/sampling): same
// tokens row by row for random logits, parameters and penalty histories (the GPU reproduces the
// CPU's processing, exp and Philox bit for bit; only mass sums differ, exactly vs in double, which
// moves a decision only when a cumulative mass lies within ~1e-15 of its threshold, far less
// likely than 1e-9 over these draws); and, independently of the CPU code, the empirical
// distribution over many seeds against softmax-after-filtering computed here in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "core/thread_pool.h"
#include "cuda_ops_test_util.h"
#include "sampling/logits_processors.h"
#include "sampling/sampler.h"
#include "weft/kernels/cuda/sampling.h"
#include "weft/kernels/cuda_device.h"

namespace weft {
namespace {

using kernels::cuda::DeviceBuffer;
using kernels::cuda::SamplingRowParams;

class CudaSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU";
  }
  ThreadPool pool_{2};
};

// One sequence's CPU-side description, kept alive for the CPU sampler's spans.
struct Seq {
  SamplingParams params;
  std::vector<int32_t> prompt, output, eos;
  uint64_t seed = 0;
  uint32_t seq_index = 0;
};

struct GpuResult {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<float> workspace;
};

// Runs the GPU sampler on `logits` (dtype `dt`, [seqs.size(), vocab]) with the seqs' state
// translated as the engine would: output counts, prompt mask, bias CSR, and the banned CSR of
// min_tokens (stop ids, plus eos unless ignore_eos, while output is shorter than min_tokens).
GpuResult run_gpu(const test::HostArray& logits, int64_t vocab, const std::vector<Seq>& seqs) {
  const int n = static_cast<int>(seqs.size());
  std::vector<SamplingRowParams> rows(n);
  std::vector<int32_t> counts(static_cast<size_t>(n) * vocab, 0);
  std::vector<uint8_t> mask(static_cast<size_t>(n) * vocab, 0);
  std::vector<int32_t> bias_off{0}, bias_ids, ban_off{0}, ban_ids;
  std::vector<float> bias_vals;
  for (int s = 0; s < n; ++s) {
    const Seq& q = seqs[s];
    SamplingRowParams& r = rows[s];
    r.temperature = q.params.temperature;
    r.top_k = q.params.top_k;
    r.top_p = q.params.top_p;
    r.min_p = q.params.min_p;
    r.repetition_penalty = q.params.repetition_penalty;
    r.presence_penalty = q.params.presence_penalty;
    r.frequency_penalty = q.params.frequency_penalty;
    r.seq_index = q.seq_index;
    r.seed = q.seed;
    r.step = q.output.size();
    for (int32_t t : q.output) ++counts[s * vocab + t];
    for (int32_t t : q.prompt) mask[s * vocab + t] = 1;
    for (const auto& [id, b] : q.params.logit_bias) {
      bias_ids.push_back(id);
      bias_vals.push_back(b);
    }
    bias_off.push_back(static_cast<int32_t>(bias_ids.size()));
    if (q.output.size() < static_cast<size_t>(q.params.min_tokens)) {
      for (int32_t id : q.params.stop_token_ids) ban_ids.push_back(id);
      if (!q.params.ignore_eos) {
        for (int32_t id : q.eos) ban_ids.push_back(id);
      }
    }
    ban_off.push_back(static_cast<int32_t>(ban_ids.size()));
  }
  bias_ids.push_back(0);  // keep every buffer non-empty
  bias_vals.push_back(0.0f);
  ban_ids.push_back(0);
  DeviceBuffer d_logits = test::upload(logits), d_rows = test::upload(rows),
               d_counts = test::upload(counts), d_mask = test::upload(mask),
               d_bias_off = test::upload(bias_off), d_bias_ids = test::upload(bias_ids),
               d_bias_vals = test::upload(bias_vals), d_ban_off = test::upload(ban_off),
               d_ban_ids = test::upload(ban_ids);
  DeviceBuffer d_ws = test::device_zeros(static_cast<size_t>(n) * vocab * sizeof(float));
  DeviceBuffer d_tokens = test::device_zeros(n * sizeof(int32_t));
  DeviceBuffer d_lp = test::device_zeros(n * sizeof(float));
  kernels::cuda::SamplingBatch b;
  b.num_seqs = n;
  b.vocab = vocab;
  b.logits = d_logits.data();
  b.logits_dtype = logits.dtype();
  b.logits_stride = vocab;
  b.params = d_rows.as<SamplingRowParams>();
  b.output_counts = d_counts.as<int32_t>();
  b.prompt_mask = d_mask.as<uint8_t>();
  b.bias_offsets = d_bias_off.as<int32_t>();
  b.bias_ids = d_bias_ids.as<int32_t>();
  b.bias_values = d_bias_vals.as<float>();
  b.banned_offsets = d_ban_off.as<int32_t>();
  b.banned_ids = d_ban_ids.as<int32_t>();
  b.workspace = d_ws.as<float>();
  b.tokens = d_tokens.as<int32_t>();
  b.logprobs = d_lp.as<float>();
  const absl::Status st = kernels::cuda::sample_tokens(b, nullptr);
  EXPECT_TRUE(st.ok()) << st;
  test::sync_device();
  GpuResult r;
  r.tokens = test::download<int32_t>(d_tokens, n);
  r.logprobs = test::download<float>(d_lp, n);
  r.workspace = test::download<float>(d_ws, static_cast<size_t>(n) * vocab);
  return r;
}

std::vector<SampleResult> run_cpu(const std::vector<float>& logits, int64_t vocab,
                                  const std::vector<Seq>& seqs, ThreadPool& pool) {
  std::vector<SequenceSamplingState> states(seqs.size());
  for (size_t s = 0; s < seqs.size(); ++s) {
    states[s].params = &seqs[s].params;
    states[s].prompt_ids = seqs[s].prompt;
    states[s].output_ids = seqs[s].output;
    states[s].eos_token_ids = seqs[s].eos;
    states[s].seed = seqs[s].seed;
    states[s].seq_index = seqs[s].seq_index;
  }
  TensorView v;
  v.data = const_cast<float*>(logits.data());
  v.dtype = DType::kF32;
  v.shape = Shape{static_cast<int64_t>(seqs.size()), vocab};
  auto r = Sampler().sample(v, states, pool);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<SampleResult>(seqs.size());
}

// Random sequences covering every processor and filter, greedy and sampled.
std::vector<Seq> random_seqs(int n, int64_t vocab, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(vocab - 1));
  std::uniform_int_distribution<int> pick(0, 99);
  const float temps[] = {0.0f, 0.5f, 1.0f, 1.3f};
  const int top_ks[] = {-1, 1, 5, 50, static_cast<int>(vocab - 1)};
  const float top_ps[] = {1.0f, 0.95f, 0.5f, 0.1f};
  const float min_ps[] = {0.0f, 0.0f, 0.05f};
  std::vector<Seq> seqs(n);
  for (int s = 0; s < n; ++s) {
    Seq& q = seqs[s];
    SamplingParams& p = q.params;
    p.temperature = temps[pick(rng) % 4];
    p.top_k = top_ks[pick(rng) % 5];
    p.top_p = top_ps[pick(rng) % 4];
    p.min_p = min_ps[pick(rng) % 3];
    if (pick(rng) < 50) p.repetition_penalty = pick(rng) < 50 ? 1.3f : 0.8f;
    if (pick(rng) < 50) p.presence_penalty = 0.7f;
    if (pick(rng) < 50) p.frequency_penalty = -0.4f;
    if (pick(rng) < 30) {
      for (int j = 0; j < 5; ++j) p.logit_bias[tok(rng)] = (pick(rng) - 50) * 0.1f;
    }
    q.eos = {tok(rng)};
    if (pick(rng) < 30) {
      p.min_tokens = 100;
      p.stop_token_ids = {tok(rng), tok(rng)};
      p.ignore_eos = pick(rng) < 30;
    }
    p.logprobs = 0;
    for (int j = pick(rng); j > 0; --j) q.prompt.push_back(tok(rng));
    // Repeats so counts exceed 1.
    for (int j = pick(rng) / 2; j > 0; --j) {
      q.output.push_back(j % 3 == 0 && !q.output.empty() ? q.output[0] : tok(rng));
    }
    q.seed = (static_cast<uint64_t>(rng()) << 32) | rng();
    q.seq_index = pick(rng) % 4;
  }
  return seqs;
}

TEST_F(CudaSamplingTest, MatchesCpuSamplerRowByRow) {
  std::mt19937 rng(77);
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t vocab : {int64_t{1000}, int64_t{32017}, int64_t{151936}}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dt) << " vocab=" << vocab);
      const int n = 48;
      std::normal_distribution<float> normal(0.0f, 3.0f);
      test::HostArray logits(dt, n * vocab);
      for (int64_t i = 0; i < n * vocab; ++i) logits.set(i, normal(rng));
      // A few exact ties so tie-breaking to the lowest id is exercised.
      logits.set(10, logits.get(20));
      const std::vector<Seq> seqs = random_seqs(n, vocab, rng);
      const GpuResult g = run_gpu(logits, vocab, seqs);
      const std::vector<float> lf = logits.to_floats();
      const std::vector<SampleResult> c = run_cpu(lf, vocab, seqs, pool_);
      PenaltyScratch scratch;
      for (int s = 0; s < n; ++s) {
        const SamplingParams& p = seqs[s].params;
        SCOPED_TRACE(testing::Message() << "row " << s << " T=" << p.temperature << " k="
                                        << p.top_k << " p=" << p.top_p << " min_p=" << p.min_p);
        EXPECT_EQ(g.tokens[s], c[s].token);
        // Raw log-softmax: F32 log-sum-exp on the GPU vs double on the CPU.
        EXPECT_NEAR(g.logprobs[s], c[s].logprob, 1e-4f * std::max(1.0f, std::fabs(c[s].logprob)));
        if (p.is_greedy()) {
          // The processed row (bias, min_tokens, penalties) equals the CPU processors' output.
          std::vector<float> row(lf.begin() + s * vocab, lf.begin() + (s + 1) * vocab);
          SequenceSamplingState st;
          st.params = &p;
          st.prompt_ids = seqs[s].prompt;
          st.output_ids = seqs[s].output;
          st.eos_token_ids = seqs[s].eos;
          apply_logits_processors(row, st, scratch);
          for (int64_t i = 0; i < vocab; ++i) {
            ASSERT_EQ(g.workspace[s * vocab + i], row[i]) << "token " << i;
          }
        }
      }
    }
  }
}

// top_k = 1 at any temperature picks what greedy picks (same processed logits).
TEST_F(CudaSamplingTest, TopKOneEqualsGreedy) {
  std::mt19937 rng(5);
  const int64_t vocab = 50000;
  const int n = 32;
  std::vector<Seq> seqs = random_seqs(n, vocab, rng);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  test::HostArray logits(DType::kBF16, n * vocab);
  for (int64_t i = 0; i < n * vocab; ++i) logits.set(i, normal(rng));
  for (Seq& q : seqs) {
    q.params.temperature = 0.0f;
    q.params.min_tokens = 0;
  }
  const GpuResult greedy = run_gpu(logits, vocab, seqs);
  for (Seq& q : seqs) {
    q.params.temperature = 0.7f;
    q.params.top_k = 1;
    q.params.top_p = 1.0f;
  }
  const GpuResult topk1 = run_gpu(logits, vocab, seqs);
  EXPECT_EQ(greedy.tokens, topk1.tokens);
}

// Same inputs, same tokens; and a row's token does not depend on its neighbours or position.
TEST_F(CudaSamplingTest, DeterministicAndBatchIndependent) {
  std::mt19937 rng(9);
  const int64_t vocab = 20000;
  const int n = 16;
  const std::vector<Seq> seqs = random_seqs(n, vocab, rng);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  test::HostArray logits(DType::kF32, n * vocab);
  for (int64_t i = 0; i < n * vocab; ++i) logits.set(i, normal(rng));
  const GpuResult a = run_gpu(logits, vocab, seqs);
  const GpuResult b = run_gpu(logits, vocab, seqs);
  EXPECT_EQ(a.tokens, b.tokens);
  std::vector<Seq> reversed(seqs.rbegin(), seqs.rend());
  test::HostArray rev(DType::kF32, n * vocab);
  for (int s = 0; s < n; ++s) {
    for (int64_t i = 0; i < vocab; ++i) rev.set((n - 1 - s) * vocab + i, logits.get(s * vocab + i));
  }
  const GpuResult c = run_gpu(rev, vocab, reversed);
  for (int s = 0; s < n; ++s) EXPECT_EQ(c.tokens[n - 1 - s], a.tokens[s]) << s;
}

// Softmax after filtering, computed here in double from the definition (sort, top_k, top_p
// prefix, min_p, renormalise), not from the sampler's code.
std::vector<double> filtered_softmax(const std::vector<float>& logits, float temperature,
                                     int top_k, float top_p, float min_p) {
  const int n = static_cast<int>(logits.size());
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logits[a] > logits[b]; });
  const double mx = logits[order[0]] / static_cast<double>(temperature);
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) w[i] = std::exp(logits[i] / static_cast<double>(temperature) - mx);
  const int kept_k = top_k > 0 ? std::min(top_k, n) : n;
  double total = 0;
  for (int j = 0; j < kept_k; ++j) total += w[order[j]];
  std::vector<double> p(n, 0.0);
  double ahead = 0;
  for (int j = 0; j < kept_k; ++j) {
    if (j > 0 && ahead >= top_p * total) break;
    ahead += w[order[j]];
    if (w[order[j]] >= min_p) p[order[j]] = w[order[j]];
  }
  double sum = 0;
  for (double v : p) sum += v;
  for (double& v : p) v /= sum;
  return p;
}

// 40000 draws (one row per seed) for a 12-token vocabulary: every filtered token is never drawn
// and the counts pass a chi-square test against the filtered softmax. The seeds are fixed, so
// the outcome is deterministic; the bound (df <= 11, 45) has p < 1e-5 for a correct sampler.
TEST_F(CudaSamplingTest, EmpiricalDistributionMatchesFilteredSoftmax) {
  const std::vector<float> base = {2.0f, 1.5f, 1.4f, 0.3f, -0.2f, 1.0f,
                                   0.9f, -1.0f, 0.0f, 2.2f, -3.0f, 0.5f};
  const int64_t vocab = static_cast<int64_t>(base.size());
  struct Config {
    float temperature;
    int top_k;
    float top_p;
    float min_p;
  };
  for (const Config cfg : {Config{1.0f, -1, 1.0f, 0.0f}, Config{0.8f, 8, 0.9f, 0.0f},
                           Config{1.5f, -1, 0.7f, 0.0f}, Config{1.0f, 6, 1.0f, 0.2f}}) {
    SCOPED_TRACE(testing::Message() << "T=" << cfg.temperature << " k=" << cfg.top_k
                                    << " p=" << cfg.top_p << " min_p=" << cfg.min_p);
    const int n = 40000;
    std::vector<Seq> seqs(n);
    test::HostArray logits(DType::kF32, n * vocab);
    for (int s = 0; s < n; ++s) {
      seqs[s].params.temperature = cfg.temperature;
      seqs[s].params.top_k = cfg.top_k;
      seqs[s].params.top_p = cfg.top_p;
      seqs[s].params.min_p = cfg.min_p;
      seqs[s].seed = 1000003ull * s + 17;
      for (int64_t i = 0; i < vocab; ++i) logits.set(s * vocab + i, base[i]);
    }
    const GpuResult g = run_gpu(logits, vocab, seqs);
    const std::vector<double> p =
        filtered_softmax(base, cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p);
    std::vector<int> counts(vocab, 0);
    for (int32_t t : g.tokens) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, vocab);
      ++counts[t];
    }
    double chi2 = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      if (p[i] == 0.0) {
        EXPECT_EQ(counts[i], 0) << "filtered token " << i << " was drawn";
        continue;
      }
      const double e = p[i] * n;
      chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    EXPECT_LT(chi2, 45.0);
  }
}

TEST_F(CudaSamplingTest, CountOutputTokens) {
  const int64_t vocab = 100;
  const int n = 4;
  std::vector<int32_t> counts(n * vocab, 0), tokens = {3, -1, 99, 3};
  counts[0 * vocab + 3] = 2;
  DeviceBuffer d_counts = test::upload(counts), d_tokens = test::upload(tokens);
  ASSERT_TRUE(kernels::cuda::count_output_tokens(d_counts.as<int32_t>(), vocab,
                                                 d_tokens.as<int32_t>(), n, nullptr)
                  .ok());
  test::sync_device();
  const std::vector<int32_t> out = test::download<int32_t>(d_counts, n * vocab);
  std::vector<int32_t> expected(n * vocab, 0);
  expected[0 * vocab + 3] = 3;
  expected[2 * vocab + 99] = 1;
  expected[3 * vocab + 3] = 1;
  EXPECT_EQ(out, expected);
}

// argmax_rows against a scalar argmax: ties to the lowest id (a row of equal maxima at both
// ends), NaN skipped, -inf everywhere gives -1, +inf wins; rows longer than one block's stride.
TEST_F(CudaSamplingTest, ArgmaxRowsMatchesScalarArgmax) {
  std::mt19937 rng(9);
  const int64_t vocab = 32003;
  const int n = 7;
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(n * vocab);
  for (float& v : logits) v = normal(rng);
  float* row = logits.data();
  row[5] = row[vocab - 2] = 100.0f;                                       // row 0: tie, id 5
  row = logits.data() + 1 * vocab;
  for (int64_t i = 0; i < vocab; i += 3) row[i] = std::nanf("");         // row 1: NaNs
  row = logits.data() + 2 * vocab;
  for (int64_t i = 0; i < vocab; ++i) row[i] = -INFINITY;                  // row 2: -1
  row = logits.data() + 3 * vocab;
  row[vocab - 1] = INFINITY;                                               // row 3: +inf last
  std::vector<int32_t> expected(n);
  for (int r = 0; r < n; ++r) {
    int32_t best = -1;
    for (int64_t i = 0; i < vocab; ++i) {
      const float v = logits[r * vocab + i];
      if (v > -INFINITY && (best < 0 || v > logits[r * vocab + best])) best = static_cast<int32_t>(i);
    }
    expected[r] = best;
  }
  EXPECT_EQ(expected[0], 5);
  EXPECT_EQ(expected[2], -1);
  EXPECT_EQ(expected[3], vocab - 1);
  DeviceBuffer d_logits = test::upload(logits);
  DeviceBuffer d_tokens = test::device_zeros(n * sizeof(int32_t));
  ASSERT_TRUE(kernels::cuda::argmax_rows(d_logits.as<float>(), n, vocab, d_tokens.as<int32_t>(),
                                         nullptr)
                  .ok());
  test::sync_device();
  EXPECT_EQ(test::download<int32_t>(d_tokens, n), expected);
}

}  // namespace
}  // namespace weft
