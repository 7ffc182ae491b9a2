#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "chi_square.h"
#include "sampling/logits_processors.h"
#include "sampling/rng.h"

namespace weft {
namespace {

using testing::chi_square;
using testing::chi_square_critical;

// Distinct, deterministic logits (no library RNG, so the test is the same on every platform).
std::vector<float> make_logits(int64_t vocab, double freq = 1.3, double scale = 3.0,
                               double phase = 0.2) {
  std::vector<float> v(vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    v[i] = static_cast<float>(scale * std::sin(freq * i + phase) + 1e-3 * i);
  }
  return v;
}

Tensor tile_rows(const std::vector<float>& row, int64_t rows) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  Tensor t = Tensor::zeros(DType::kF32, {rows, vocab});
  for (int64_t r = 0; r < rows; ++r)
    std::copy(row.begin(), row.end(), t.data_as<float>() + r * vocab);
  return t;
}

// The documented rule of sampler.h, written naively: double precision, full sort. Returns the
// renormalised distribution over the vocabulary (0 for filtered tokens). `margin` receives the
// smallest distance of a top_p / min_p decision from its threshold, relative to the mass, so a
// test can make sure float rounding in the sampler cannot flip a decision.
std::vector<double> reference_distribution(const std::vector<float>& logits,
                                           const SamplingParams& p, double* margin = nullptr) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<double> x(vocab);
  for (int64_t i = 0; i < vocab; ++i) x[i] = static_cast<double>(logits[i]) / p.temperature;
  const double mx = *std::max_element(x.begin(), x.end());
  std::vector<double> prob(vocab);
  double z = 0.0;
  for (int64_t i = 0; i < vocab; ++i) z += prob[i] = std::exp(x[i] - mx);
  for (double& q : prob) q /= z;
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  std::vector<bool> keep(vocab, true);
  double m = 1.0;
  if (p.top_k > 0 && p.top_k < vocab) {
    for (int64_t j = p.top_k; j < vocab; ++j) keep[order[j]] = false;
  }
  if (p.top_p < 1.0f) {
    double kept_mass = 0.0;
    for (int64_t i = 0; i < vocab; ++i) kept_mass += keep[i] ? prob[i] : 0.0;
    const double target = p.top_p * kept_mass;
    double ahead = 0.0;
    for (int64_t j = 0; j < vocab; ++j) {
      const int32_t id = order[j];
      if (!keep[id]) continue;
      if (j > 0) m = std::min(m, std::fabs(ahead - target) / kept_mass);
      if (ahead >= target) keep[id] = false;
      ahead += prob[id];
    }
  }
  if (p.min_p > 0.0f) {
    const double pmax = prob[order[0]];
    for (int64_t i = 0; i < vocab; ++i) {
      m = std::min(m, std::fabs(prob[i] - p.min_p * pmax) / pmax);
      if (prob[i] < p.min_p * pmax) keep[i] = false;
    }
  }
  double kept = 0.0;
  for (int64_t i = 0; i < vocab; ++i) kept += keep[i] ? prob[i] : 0.0;
  std::vector<double> out(vocab, 0.0);
  for (int64_t i = 0; i < vocab; ++i) out[i] = keep[i] ? prob[i] / kept : 0.0;
  if (margin != nullptr) *margin = m;
  return out;
}

// Inverse CDF in ascending id order: the first token whose cumulative mass exceeds u.
int32_t reference_token(const std::vector<double>& dist, double u) {
  double acc = 0.0;
  int32_t last = -1;
  for (size_t i = 0; i < dist.size(); ++i) {
    if (dist[i] == 0.0) continue;
    acc += dist[i];
    last = static_cast<int32_t>(i);
    if (acc > u) return last;
  }
  return last;
}

std::vector<SampleResult> sample_or_die(const Tensor& logits,
                                        const std::vector<SequenceSamplingState>& states,
                                        ThreadPool& pool) {
  auto r = Sampler().sample(logits, states, pool);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : std::vector<SampleResult>{};
}

struct DistributionCase {
  const char* name;
  float temperature;
  int top_k;
  float top_p;
  float min_p;
};

class SamplerDistribution : public ::testing::TestWithParam<DistributionCase> {};

// 20000 draws from one row: no filtered token is ever drawn, and the frequencies of the kept
// ones fit the filtered, renormalised distribution (chi-square at p = 1e-3).
TEST_P(SamplerDistribution, FrequenciesFitTheFilteredDistribution) {
  const DistributionCase& c = GetParam();
  constexpr int64_t kVocab = 64;
  constexpr int64_t kDraws = 20000;
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  ASSERT_TRUE(p.validate(kVocab).ok());
  const std::vector<float> row = make_logits(kVocab);
  double margin = 0.0;
  const std::vector<double> dist = reference_distribution(row, p, &margin);
  ASSERT_GT(margin, 1e-4) << "test logits put a filter decision too close to its threshold";
  const int kept =
      static_cast<int>(std::count_if(dist.begin(), dist.end(), [](double d) { return d > 0; }));
  ASSERT_GE(kept, 3);

  const Tensor logits = tile_rows(row, kDraws);
  std::vector<SequenceSamplingState> states(kDraws);
  for (int64_t i = 0; i < kDraws; ++i)
    states[i] = {&p, {}, {}, 1000 + static_cast<uint64_t>(i), 0, {}};
  ThreadPool pool(2);
  const std::vector<SampleResult> results = sample_or_die(logits, states, pool);
  ASSERT_EQ(results.size(), static_cast<size_t>(kDraws));

  std::vector<double> observed(kVocab, 0.0);
  for (const SampleResult& r : results) {
    ASSERT_GE(r.token, 0);
    ASSERT_LT(r.token, kVocab);
    observed[r.token] += 1.0;
  }
  std::vector<double> obs_kept, exp_kept;
  for (int64_t t = 0; t < kVocab; ++t) {
    if (dist[t] == 0.0) {
      EXPECT_EQ(observed[t], 0.0) << "filtered token " << t << " was drawn";
      continue;
    }
    obs_kept.push_back(observed[t]);
    exp_kept.push_back(dist[t] * kDraws);
  }
  const auto chi = chi_square(obs_kept, exp_kept);
  ASSERT_GE(chi.df, 1);
  EXPECT_LT(chi.statistic, chi_square_critical(chi.df, 1e-3))
      << c.name << ": chi2 = " << chi.statistic << " with df " << chi.df << ", kept " << kept;
}

// Sampler::distributions (what speculative decoding verifies against) is the same filtered,
// renormalised distribution the draws above fit: same support, same probabilities.
TEST_P(SamplerDistribution, DistributionsEqualTheReference) {
  const DistributionCase& c = GetParam();
  constexpr int64_t kVocab = 64;
  SamplingParams p;
  p.temperature = c.temperature;
  p.top_k = c.top_k;
  p.top_p = c.top_p;
  p.min_p = c.min_p;
  const std::vector<float> row = make_logits(kVocab);
  const std::vector<double> dist = reference_distribution(row, p);
  const Tensor logits = tile_rows(row, 1);
  std::vector<SequenceSamplingState> states = {{&p, {}, {}, 7, 0, {}}};
  ThreadPool pool(1);
  auto got = Sampler().distributions(logits, states, pool);
  ASSERT_TRUE(got.ok()) << got.status();
  const TokenDistribution& d = (*got)[0];
  ASSERT_TRUE(std::is_sorted(d.ids.begin(), d.ids.end()));
  for (int32_t t = 0; t < kVocab; ++t) {
    EXPECT_NEAR(d.prob_of(t), dist[t], 2e-6) << c.name << ": token " << t;
    EXPECT_EQ(d.prob_of(t) > 0.0f, dist[t] > 0.0) << c.name << ": token " << t;
  }
}

TEST(Sampler, GreedyDistributionIsThePointTheSamplerPicks) {
  constexpr int64_t kVocab = 50;
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.3f;
  const std::vector<float> row = make_logits(kVocab);
  const std::vector<int32_t> prompt = {3, 4, 5};
  const std::vector<int32_t> output = {int32_t(std::max_element(row.begin(), row.end()) - row.begin())};
  std::vector<SequenceSamplingState> states = {{&p, prompt, output, 1, 0, {}}};
  ThreadPool pool(1);
  const Tensor logits = tile_rows(row, 1);
  auto d = Sampler().distributions(logits, states, pool);
  auto s = Sampler().sample(logits, states, pool);
  ASSERT_TRUE(d.ok() && s.ok());
  ASSERT_EQ((*d)[0].ids.size(), 1u);
  EXPECT_EQ((*d)[0].ids[0], (*s)[0].token);
  EXPECT_EQ((*d)[0].probs[0], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Filters, SamplerDistribution,
                         ::testing::Values(DistributionCase{"plain", 0.8f, -1, 1.0f, 0.0f},
                                           DistributionCase{"top_k", 1.0f, 10, 1.0f, 0.0f},
                                           DistributionCase{"top_p", 1.0f, 0, 0.8f, 0.0f},
                                           DistributionCase{"min_p", 1.0f, -1, 1.0f, 0.1f},
                                           DistributionCase{"hot_combined", 1.7f, 30, 0.9f, 0.02f},
                                           DistributionCase{"cold_top_p", 0.5f, -1, 0.95f, 0.0f}),
                         [](const auto& info) { return std::string(info.param.name); });

// The chi-square test must be able to fail: the unfiltered sampler output does not fit the
// top_k distribution's expected counts over the same tokens.
TEST(SamplerDistributionSelfCheck, ChiSquareRejectsTheWrongDistribution) {
  constexpr int64_t kVocab = 64;
  constexpr int64_t kDraws = 20000;
  SamplingParams drawn;
  SamplingParams claimed;
  claimed.temperature = 0.9f;
  const std::vector<float> row = make_logits(kVocab);
  const std::vector<double> dist = reference_distribution(row, claimed);
  const Tensor logits = tile_rows(row, kDraws);
  std::vector<SequenceSamplingState> states(kDraws);
  for (int64_t i = 0; i < kDraws; ++i)
    states[i] = {&drawn, {}, {}, static_cast<uint64_t>(i), 0, {}};
  ThreadPool pool(2);
  std::vector<double> observed(kVocab, 0.0);
  for (const SampleResult& r : sample_or_die(logits, states, pool)) observed[r.token] += 1.0;
  std::vector<double> expected(kVocab);
  for (int64_t t = 0; t < kVocab; ++t) expected[t] = dist[t] * kDraws;
  const auto chi = chi_square(observed, expected);
  EXPECT_GT(chi.statistic, chi_square_critical(chi.df, 1e-3));
}

// A 152k vocabulary with a flat-ish distribution, so top_p needs tens of thousands of
// candidates (several rounds of the sampler's partial sort). Every token must equal the one the
// naive reference picks for the same uniform.
TEST(Sampler, LargeVocabTokensEqualTheNaiveReference) {
  constexpr int64_t kVocab = 152064;
  constexpr int64_t kSeeds = 24;
  const std::vector<float> row = make_logits(kVocab, 0.37, 2.0, 0.0);
  const Tensor logits = tile_rows(row, kSeeds);
  ThreadPool pool(2);
  const std::vector<DistributionCase> cases = {
      {"top_p", 1.0f, -1, 0.9f, 0.0f},    {"top_k_top_p", 0.7f, 1000, 0.5f, 0.0f},
      {"min_p", 1.0f, -1, 1.0f, 0.5f},    {"plain", 1.2f, -1, 1.0f, 0.0f},
      {"top_k", 1.0f, 50000, 1.0f, 0.0f}, {"all", 0.9f, 20000, 0.7f, 0.3f},
  };
  for (const DistributionCase& c : cases) {
    SamplingParams p;
    p.temperature = c.temperature;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    double margin = 0.0;
    const std::vector<double> dist = reference_distribution(row, p, &margin);
    ASSERT_GT(margin, 1e-6) << c.name;
    std::vector<SequenceSamplingState> states(kSeeds);
    for (int64_t i = 0; i < kSeeds; ++i)
      states[i] = {&p, {}, {}, 77 + static_cast<uint64_t>(i), 0, {}};
    const std::vector<SampleResult> results = sample_or_die(logits, states, pool);
    for (int64_t i = 0; i < kSeeds; ++i) {
      const double u = SamplingRng(77 + i, 0, 0).uniform();
      EXPECT_EQ(results[i].token, reference_token(dist, u)) << c.name << " seed " << 77 + i;
    }
  }
}

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
  std::vector<float> row = make_logits(100);
  const float top = *std::max_element(row.begin(), row.end()) + 1.0f;
  row[41] = top;
  row[17] = top;
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = 3;
  p.top_p = 0.5f;  // filters cannot change the argmax
  const Tensor logits = tile_rows(row, 2);
  const std::vector<int32_t> output = {17};
  SamplingParams penalised = p;
  penalised.repetition_penalty = 1.5f;
  std::vector<SequenceSamplingState> states = {{&p, {}, {}, 1, 0, {}},
                                               {&penalised, {}, output, 2, 0, {}}};
  ThreadPool pool(1);
  const auto results = sample_or_die(logits, states, pool);
  EXPECT_EQ(results[0].token, 17);
  EXPECT_EQ(results[1].token, 41);  // 17 was penalised
}

TEST(Sampler, GreedyMatchesArgmaxOverManyRows) {
  constexpr int64_t kVocab = 500;
  constexpr int64_t kRows = 64;
  Tensor logits = Tensor::zeros(DType::kF32, {kRows, kVocab});
  SamplingParams p;
  p.temperature = 0.0f;
  std::vector<SequenceSamplingState> states(kRows, {&p, {}, {}, 0, 0, {}});
  std::vector<int32_t> expected(kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    const std::vector<float> row = make_logits(kVocab, 0.1 + 0.03 * r, 1.0 + r, 0.5 * r);
    std::copy(row.begin(), row.end(), logits.data_as<float>() + r * kVocab);
    expected[r] = static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  }
  ThreadPool pool(2);
  const auto results = sample_or_die(logits, states, pool);
  for (int64_t r = 0; r < kRows; ++r) EXPECT_EQ(results[r].token, expected[r]) << "row " << r;
}

// Logits of step `step` for a sequence tagged `tag`: each sequence sees its own stream.
std::vector<float> step_logits(int64_t vocab, int tag, int step) {
  return make_logits(vocab, 0.05 + 0.01 * tag, 2.5, 0.3 * step + tag);
}

// Generates `steps` tokens for the sequence of interest (params `p`, seed 1234), either alone on
// one thread or at position `position` among other sequences with other params, on two threads.
std::vector<SampleResult> generate(const SamplingParams& p, int steps, bool in_batch,
                                   int position) {
  constexpr int64_t kVocab = 1000;
  const std::vector<int32_t> prompt = {5, 6, 7, 5};
  const std::vector<int32_t> eos = {999};
  SamplingParams other_a;
  other_a.top_k = 5;
  SamplingParams other_b;
  other_b.temperature = 0.0f;
  SamplingParams other_c;
  other_c.top_p = 0.3f;
  other_c.logprobs = 20;
  other_c.repetition_penalty = 1.3f;
  const std::vector<const SamplingParams*> others = {&other_a, &other_b, &other_c, &other_a, &p};
  ThreadPool pool(in_batch ? 2 : 1);
  std::vector<int32_t> output;
  std::vector<std::vector<int32_t>> other_outputs(others.size());
  std::vector<SampleResult> results;
  for (int step = 0; step < steps; ++step) {
    std::vector<SequenceSamplingState> states;
    std::vector<std::vector<float>> rows;
    if (in_batch) {
      for (size_t o = 0; o < others.size(); ++o) {
        // The last "other" shares the params but has a different seed.
        states.push_back({others[o], prompt, other_outputs[o], 99 + o, 0, eos});
        rows.push_back(step_logits(kVocab, 10 + static_cast<int>(o), step));
      }
    }
    const SequenceSamplingState mine{&p, prompt, output, 1234, 0, eos};
    states.insert(states.begin() + (in_batch ? position : 0), mine);
    rows.insert(rows.begin() + (in_batch ? position : 0), step_logits(kVocab, 0, step));
    Tensor logits = Tensor::zeros(DType::kF32, {static_cast<int64_t>(rows.size()), kVocab});
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy(rows[r].begin(), rows[r].end(), logits.data_as<float>() + r * kVocab);
    }
    auto step_results = sample_or_die(logits, states, pool);
    const size_t mine_at = in_batch ? position : 0;
    results.push_back(step_results[mine_at]);
    output.push_back(step_results[mine_at].token);
    if (in_batch) {
      for (size_t r = 0, o = 0; r < step_results.size(); ++r) {
        if (r != mine_at) other_outputs[o++].push_back(step_results[r].token);
      }
    }
  }
  return results;
}

TEST(Sampler, SeededTokensDoNotDependOnTheBatch) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_p = 0.95f;
  p.top_k = 200;
  p.repetition_penalty = 1.2f;
  p.frequency_penalty = 0.3f;
  p.logprobs = 3;
  constexpr int kSteps = 24;
  const auto alone = generate(p, kSteps, false, 0);
  for (int position : {0, 3, 5}) {
    const auto batched = generate(p, kSteps, true, position);
    ASSERT_EQ(batched.size(), alone.size());
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_EQ(batched[s].token, alone[s].token) << "position " << position << " step " << s;
      EXPECT_EQ(batched[s].logprob, alone[s].logprob);
      EXPECT_EQ(batched[s].top_logprobs, alone[s].top_logprobs);
    }
  }
  // The test can fail: the tokens really are random, so another seed gives other tokens.
  std::set<int32_t> distinct;
  for (const auto& r : alone) distinct.insert(r.token);
  EXPECT_GT(distinct.size(), 5u);
}

TEST(Sampler, SeedAndSequenceIndexSelectTheStream) {
  constexpr int64_t kVocab = 256;
  constexpr int64_t kRows = 64;
  const std::vector<float> row(kVocab, 0.0f);  // uniform distribution
  const Tensor logits = tile_rows(row, kRows);
  SamplingParams p;
  std::vector<SequenceSamplingState> a(kRows), b(kRows), c(kRows);
  for (int64_t i = 0; i < kRows; ++i) {
    a[i] = {&p, {}, {}, static_cast<uint64_t>(i), 0, {}};
    b[i] = {&p, {}, {}, static_cast<uint64_t>(i), 1, {}};
    c[i] = {&p, {}, {}, static_cast<uint64_t>(i), 0, {}};
  }
  ThreadPool pool(2);
  const auto ra = sample_or_die(logits, a, pool);
  const auto rb = sample_or_die(logits, b, pool);
  const auto rc = sample_or_die(logits, c, pool);
  int same_ab = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    EXPECT_EQ(ra[i].token, rc[i].token);
    same_ab += ra[i].token == rb[i].token;
    // With uniform logits the draw is floor(u * vocab).
    EXPECT_EQ(ra[i].token, static_cast<int32_t>(SamplingRng(i, 0, 0).uniform() * kVocab));
  }
  EXPECT_LT(same_ab, 5);
}

TEST(Sampler, LogitBiasForcesAndForbidsTokens) {
  constexpr int64_t kVocab = 50;
  constexpr int64_t kDraws = 2000;
  const std::vector<float> row = make_logits(kVocab);
  const int32_t argmax =
      static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
  const int32_t argmin =
      static_cast<int32_t>(std::min_element(row.begin(), row.end()) - row.begin());
  SamplingParams forbid;
  forbid.logit_bias = {{argmax, -100.0f}};
  SamplingParams force;
  force.logit_bias = {{argmin, 100.0f}};
  SamplingParams force_greedy = force;
  force_greedy.temperature = 0.0f;
  const Tensor logits = tile_rows(row, kDraws);
  std::vector<SequenceSamplingState> states(kDraws);
  for (int64_t i = 0; i < kDraws; ++i) {
    const SamplingParams* p = i % 3 == 0 ? &forbid : (i % 3 == 1 ? &force : &force_greedy);
    states[i] = {p, {}, {}, static_cast<uint64_t>(i), 0, {}};
  }
  ThreadPool pool(2);
  const auto results = sample_or_die(logits, states, pool);
  int forbidden_drawn = 0, forced_missed = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    if (i % 3 == 0) forbidden_drawn += results[i].token == argmax;
    if (i % 3 != 0) forced_missed += results[i].token != argmin;
  }
  EXPECT_EQ(forbidden_drawn, 0);
  EXPECT_EQ(forced_missed, 0);
}

TEST(Sampler, MinTokensHoldsBackEosThenReleasesIt) {
  constexpr int64_t kVocab = 40;
  constexpr int64_t kDraws = 500;
  std::vector<float> row = make_logits(kVocab);
  row[7] = 30.0f;  // eos dominates
  row[9] = 29.0f;  // a stop token id, next most likely
  SamplingParams p;
  p.min_tokens = 2;
  p.stop_token_ids = {9};
  const std::vector<int32_t> eos = {7};
  const std::vector<int32_t> one = {1};
  const std::vector<int32_t> two = {1, 2};
  const Tensor logits = tile_rows(row, kDraws);
  std::vector<SequenceSamplingState> states(kDraws);
  for (int64_t i = 0; i < kDraws; ++i) {
    states[i] = {&p, {}, i % 2 == 0 ? std::span<const int32_t>(one) : two, static_cast<uint64_t>(i),
                 0,  eos};
  }
  ThreadPool pool(2);
  const auto results = sample_or_die(logits, states, pool);
  int early_stops = 0, late_eos = 0;
  for (int64_t i = 0; i < kDraws; ++i) {
    if (i % 2 == 0) early_stops += results[i].token == 7 || results[i].token == 9;
    if (i % 2 == 1) late_eos += results[i].token == 7;
  }
  EXPECT_EQ(early_stops, 0);
  EXPECT_GT(late_eos, kDraws / 2 * 0.6);  // P(eos) = 1 / (1 + e^-1 + ...) ~ 0.73
}

TEST(Sampler, WhenEveryTokenIsSuppressedTheRawArgmaxIsReturned) {
  std::vector<float> row = {0.5f, 2.0f, 1.0f};
  SamplingParams sampled;
  sampled.min_tokens = 1;
  sampled.stop_token_ids = {0, 1, 2};
  SamplingParams greedy = sampled;
  greedy.temperature = 0.0f;
  const Tensor logits = tile_rows(row, 2);
  std::vector<SequenceSamplingState> states = {{&sampled, {}, {}, 3, 0, {}},
                                               {&greedy, {}, {}, 3, 0, {}}};
  ThreadPool pool(1);
  const auto results = sample_or_die(logits, states, pool);
  EXPECT_EQ(results[0].token, 1);
  EXPECT_EQ(results[1].token, 1);
}

TEST(Sampler, LogprobsAreTheRawLogSoftmax) {
  constexpr int64_t kVocab = 300;
  const std::vector<float> row = make_logits(kVocab);
  double mx = *std::max_element(row.begin(), row.end());
  double z = 0.0;
  for (float v : row) z += std::exp(v - mx);
  const double lse = mx + std::log(z);
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return row[a] > row[b]; });

  SamplingParams p;  // temperature, bias and penalties must not change the reported logprobs
  p.temperature = 0.3f;
  p.logit_bias = {{order[0], -5.0f}};
  p.presence_penalty = 1.0f;
  p.logprobs = 5;
  SamplingParams none;
  const std::vector<int32_t> output = {order[1]};
  const Tensor logits = tile_rows(row, 2);
  std::vector<SequenceSamplingState> states = {{&p, {}, output, 11, 0, {}},
                                               {&none, {}, {}, 11, 0, {}}};
  ThreadPool pool(1);
  const auto results = sample_or_die(logits, states, pool);
  const SampleResult& r = results[0];
  EXPECT_NEAR(r.logprob, row[r.token] - lse, 1e-5);
  ASSERT_EQ(r.top_logprobs.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(r.top_logprobs[i].first, order[i]);
    EXPECT_NEAR(r.top_logprobs[i].second, row[order[i]] - lse, 1e-5);
  }
  EXPECT_TRUE(std::isnan(results[1].logprob));
  EXPECT_TRUE(results[1].top_logprobs.empty());
}

TEST(Sampler, RejectsBadInputNamingIt) {
  SamplingParams p;
  ThreadPool pool(1);
  const Tensor logits = tile_rows(make_logits(10), 2);
  const std::vector<int32_t> bad = {3, 10};
  std::vector<SequenceSamplingState> states = {{&p, {}, {}, 0, 0, {}}, {&p, {}, bad, 0, 0, {}}};
  auto r = Sampler().sample(logits, states, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sequence 1: output_ids[1]"), std::string::npos)
      << r.status();

  states.pop_back();
  r = Sampler().sample(logits, states, pool);  // 2 rows, 1 state
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("logits: expected shape [1, vocab]"), std::string::npos);

  const Tensor half = Tensor::zeros(DType::kF16, {1, 10});
  r = Sampler().sample(half, states, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("f16"), std::string::npos);

  states[0].params = nullptr;
  r = Sampler().sample(tile_rows(make_logits(10), 1), states, pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("params"), std::string::npos);
}

}  // namespace
}  // namespace weft

namespace weft {
namespace {

// SamplingParams::diagnostics (weft inspect): rank and entropy of the raw row computed here in
// double; the processed first choice moves when a bias does; the drawn probability is the
// distribution's (1 for greedy).
TEST(Sampler, DiagnosticsDescribeTheRawRowAndWhatMovedTheChoice) {
  const std::vector<float> row = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.diagnostics = true;
  SamplingParams biased = greedy;
  biased.logit_bias[4] = 10.0f;
  SamplingParams sampled;
  sampled.temperature = 1.0f;
  sampled.seed = 5;
  sampled.diagnostics = true;
  std::vector<SequenceSamplingState> states = {{&greedy, {}, {}, 1, 0, {}},
                                               {&biased, {}, {}, 2, 0, {}},
                                               {&sampled, {}, {}, 3, 0, {}}};
  ThreadPool pool(1);
  const auto results = sample_or_die(tile_rows(row, 3), states, pool);
  double total = 0, entropy = 0;
  for (float x : row) total += std::exp(static_cast<double>(x));
  for (float x : row) entropy -= std::exp(x) / total * std::log(std::exp(x) / total);

  ASSERT_TRUE(results[0].diagnostics.has_value());
  EXPECT_EQ(results[0].token, 1);  // ties to the lower id
  EXPECT_EQ(results[0].diagnostics->raw_rank, 1);
  EXPECT_EQ(results[0].diagnostics->raw_argmax, 1);
  EXPECT_EQ(results[0].diagnostics->processed_argmax, 1);
  EXPECT_NEAR(results[0].diagnostics->raw_entropy, entropy, 1e-6);
  EXPECT_EQ(results[0].diagnostics->sampled_probability, 1.0f);
  EXPECT_FALSE(results[0].diagnostics->masked);

  EXPECT_EQ(results[1].token, 4);
  EXPECT_EQ(results[1].diagnostics->raw_rank, 5);  // the raw row ranks it last
  EXPECT_EQ(results[1].diagnostics->raw_argmax, 1);
  EXPECT_EQ(results[1].diagnostics->processed_argmax, 4);

  const int32_t t = results[2].token;
  EXPECT_NEAR(results[2].diagnostics->sampled_probability, std::exp(row[t]) / total, 1e-6);
  int rank = 1;
  for (size_t i = 0; i < row.size(); ++i) rank += row[i] > row[t] || (row[i] == row[t] && static_cast<int32_t>(i) < t);
  EXPECT_EQ(results[2].diagnostics->raw_rank, rank);

  SamplingParams plain;
  plain.temperature = 0.0f;
  std::vector<SequenceSamplingState> no_diag = {{&plain, {}, {}, 1, 0, {}}};
  EXPECT_FALSE(sample_or_die(tile_rows(row, 1), no_diag, pool)[0].diagnostics.has_value());
}

}  // namespace
}  // namespace weft
