// Candidates (src/engine/sample_candidates.h): selection per vocabulary shard, the merge over
// shards, and the property the coordinator relies on — the sampler gives the same token from the
// expanded candidates as from the full logits row, for every plan Engine::sample_candidates_for
// allows (greedy, top_k with temperature, top_p, min_p), with ties in the logits.
#include "engine/sample_candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "sampling/sampler.h"

namespace weft {
namespace {

// Logits drawn from a few values, so ties (the hard case for ordering) are common.
std::vector<float> tied_row(std::mt19937& rng, int64_t vocab) {
  std::uniform_int_distribution<int> level(0, 40);
  std::vector<float> row(vocab);
  for (float& x : row) x = 0.25f * static_cast<float>(level(rng)) - 5.0f;
  return row;
}

// Selects k per shard of `shards` equal parts (the last one shorter, as with TP padding) and
// merges them, as the last stage does over its TP group.
SampleCandidates sharded_candidates(const std::vector<float>& row, int shards, int32_t k) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  const int64_t shard = (vocab + shards - 1) / shards;
  std::vector<int32_t> ids(static_cast<size_t>(shards) * k);
  std::vector<float> logits(ids.size());
  for (int s = 0; s < shards; ++s) {
    const int64_t begin = s * shard;
    const int64_t valid = std::max<int64_t>(0, std::min(shard, vocab - begin));
    select_row_candidates(row.data() + begin, valid, begin, k, ids.data() + s * k, logits.data() + s * k);
  }
  return merge_candidates(ids, logits, shards, 1, k);
}

TEST(SampleCandidates, SelectionIsBestFirstWithTiesToTheLowerId) {
  const std::vector<float> row = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 2.0f};
  std::vector<int32_t> ids(4);
  std::vector<float> logits(4);
  select_row_candidates(row.data(), 6, 100, 4, ids.data(), logits.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{101, 103, 102, 105}));
  EXPECT_EQ(logits, (std::vector<float>{3.0f, 3.0f, 2.0f, 2.0f}));
  // Fewer entries than k: padded with (-1, -inf).
  select_row_candidates(row.data(), 2, 0, 4, ids.data(), logits.data());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 0, -1, -1}));
  EXPECT_EQ(logits[3], -INFINITY);
}

TEST(SampleCandidates, MergeOverShardsEqualsSelectionOverTheWholeRow) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = 37 + trial % 50;
    const std::vector<float> row = tied_row(rng, vocab);
    const int32_t k = 1 + trial % 20;
    std::vector<int32_t> want_ids(k);
    std::vector<float> want_logits(k);
    select_row_candidates(row.data(), vocab, 0, k, want_ids.data(), want_logits.data());
    for (int shards : {1, 2, 3, 4}) {
      const SampleCandidates got = sharded_candidates(row, shards, k);
      ASSERT_EQ(got.rows(), 1);
      EXPECT_EQ(got.ids, want_ids) << "trial " << trial << " shards " << shards;
      EXPECT_EQ(got.logits, want_logits) << "trial " << trial << " shards " << shards;
    }
  }
}

TEST(SampleCandidates, ExpandPlacesCandidatesInRowsOfMinusInfinity) {
  SampleCandidates c;
  c.per_row = 2;
  c.ids = {3, 0, 1, 2};
  c.logits = {5.0f, 4.0f, 7.0f, 6.0f};
  const Tensor t = expand_candidates(c, {1, 0, 1}, 4);
  ASSERT_EQ(t.shape(), (Shape{3, 4}));
  const float* p = t.data_as<float>();
  const float inf = INFINITY;
  EXPECT_EQ(std::vector<float>(p, p + 4), (std::vector<float>{-inf, 7.0f, 6.0f, -inf}));
  EXPECT_EQ(std::vector<float>(p + 4, p + 8), (std::vector<float>{4.0f, -inf, -inf, 5.0f}));
  EXPECT_EQ(std::vector<float>(p + 8, p + 12), (std::vector<float>{-inf, 7.0f, 6.0f, -inf}));
}

TEST(SampleCandidates, LogSumExpFromShardPartsEqualsTheWholeRow) {
  std::mt19937 rng(3);
  std::normal_distribution<float> logit(0.0f, 4.0f);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t vocab = 10 + trial * 7;
    std::vector<float> row(vocab);
    for (float& x : row) x = logit(rng);
    double max = *std::max_element(row.begin(), row.end()), sum = 0.0;
    for (float x : row) sum += std::exp(static_cast<double>(x) - max);
    const double want = max + std::log(sum);
    for (int shards : {1, 2, 3, 5}) {
      const int64_t shard = (vocab + shards - 1) / shards;
      std::vector<std::pair<float, float>> parts;
      for (int s = 0; s < shards; ++s) {
        const int64_t begin = s * shard;
        parts.push_back(logsumexp_part(row.data() + begin, std::max<int64_t>(0, std::min(shard, vocab - begin))));
      }
      EXPECT_NEAR(combine_logsumexp(parts), want, 1e-5 * std::max(1.0, std::fabs(want)))
          << "trial " << trial << " shards " << shards;
    }
  }
  EXPECT_EQ(logsumexp_part(nullptr, 0).first, -INFINITY);
  EXPECT_EQ(combine_logsumexp({{-INFINITY, 0.0f}}), -INFINITY);
}

// With the row's log-sum-exp given, logprobs from expanded candidates equal those from the full row.
TEST(SampleCandidates, LogprobsFromCandidatesAndLogSumExpMatchTheFullRow) {
  ThreadPool pool(1);
  Sampler sampler;
  std::mt19937 rng(5);
  const int64_t vocab = 257;
  SamplingParams params;
  params.temperature = 0.0f;
  params.logprobs = 4;
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<float> row = tied_row(rng, vocab);
    Tensor full = Tensor::empty(DType::kF32, Shape{1, vocab});
    std::copy(row.begin(), row.end(), full.data_as<float>());
    SequenceSamplingState state;
    state.params = &params;
    std::vector<SequenceSamplingState> states = {state};
    auto want = sampler.sample(full.view(), states, pool);
    ASSERT_TRUE(want.ok()) << want.status();
    const Tensor sparse = expand_candidates(sharded_candidates(row, 2, 4), {0}, vocab);
    states[0].raw_logsumexp = combine_logsumexp({logsumexp_part(row.data(), vocab)});
    auto got = sampler.sample(sparse.view(), states, pool);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].token, (*want)[0].token);
    EXPECT_NEAR((*got)[0].logprob, (*want)[0].logprob, 1e-5);
    ASSERT_EQ((*got)[0].top_logprobs.size(), 4u);
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ((*got)[0].top_logprobs[j].first, (*want)[0].top_logprobs[j].first);
      EXPECT_NEAR((*got)[0].top_logprobs[j].second, (*want)[0].top_logprobs[j].second, 1e-5);
    }
    // Without it, the log-sum-exp of the sparse row is that of the candidates only: wrong.
    states[0].raw_logsumexp = std::numeric_limits<float>::quiet_NaN();
    auto unaware = sampler.sample(sparse.view(), states, pool);
    ASSERT_TRUE(unaware.ok());
    EXPECT_GT((*unaware)[0].logprob, (*want)[0].logprob + 1e-3);
  }
}

struct SamplingCase {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};

TEST(SampleCandidates, SamplerGivesTheSameTokenFromCandidatesAsFromFullLogits) {
  const std::vector<SamplingCase> cases = {
      {0.0f, 0, 1.0f, 0.0f},  {0.0f, 5, 1.0f, 0.0f},   {1.0f, 1, 1.0f, 0.0f},  {0.7f, 8, 1.0f, 0.0f},
      {1.3f, 40, 1.0f, 0.0f}, {0.9f, 16, 0.8f, 0.0f}, {1.0f, 32, 1.0f, 0.2f}, {0.5f, 64, 0.5f, 0.05f},
  };
  ThreadPool pool(1);
  Sampler sampler;
  std::mt19937 rng(11);
  const int64_t vocab = 301;
  int differing_from_greedy = 0;
  for (const SamplingCase& sc : cases) {
    SamplingParams params;
    params.temperature = sc.temperature;
    params.top_k = sc.top_k;
    params.top_p = sc.top_p;
    params.min_p = sc.min_p;
    const int32_t k = params.is_greedy() ? 1 : sc.top_k;
    for (int trial = 0; trial < 100; ++trial) {
      const std::vector<float> row = tied_row(rng, vocab);
      Tensor full = Tensor::empty(DType::kF32, Shape{1, vocab});
      std::copy(row.begin(), row.end(), full.data_as<float>());
      const std::vector<int32_t> output_ids(trial % 7, 3);
      SequenceSamplingState state;
      state.params = &params;
      state.output_ids = output_ids;
      state.seed = 1000 + trial;
      std::vector<SequenceSamplingState> states = {state};
      auto want = sampler.sample(full.view(), states, pool);
      ASSERT_TRUE(want.ok()) << want.status();
      // Any K >= what the plan needs, over any number of shards, gives the same token.
      for (int32_t extra : {0, 3}) {
        for (int shards : {1, 3}) {
          const Tensor sparse = expand_candidates(sharded_candidates(row, shards, k + extra), {0}, vocab);
          auto got = sampler.sample(sparse.view(), states, pool);
          ASSERT_TRUE(got.ok()) << got.status();
          EXPECT_EQ((*got)[0].token, (*want)[0].token)
              << "temperature " << sc.temperature << " top_k " << sc.top_k << " top_p " << sc.top_p
              << " min_p " << sc.min_p << " trial " << trial << " K " << k + extra << " shards " << shards;
        }
      }
      if (!params.is_greedy()) {
        differing_from_greedy += (*want)[0].token != std::max_element(row.begin(), row.end()) - row.begin();
      }
    }
  }
  // The cases really sample (they are not greedy in disguise).
  EXPECT_GT(differing_from_greedy, 100);
}

}  // namespace
}  // namespace weft
