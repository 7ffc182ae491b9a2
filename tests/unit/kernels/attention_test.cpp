// paged_attention() on ragged batches (prefill, chunked prefill and decode sequences together)
// whose blocks are scattered over a shuffled pool, for GQA ratios 1, 2, 4 and MQA, every cache
// dtype and ISA path, against a dense causal softmax computed in double from the same (rounded)
// K/V values. Tolerance: 1e-5 absolute on outputs of magnitude <= 1 (F32 online softmax with
// a ~2 ulp vector exp). With a sliding window, each query sees only its `window` newest
// positions, and the table entries of blocks wholly before a sequence's first window point at a
// block of NaNs: reading one (instead of skipping it, as a freed block must be) poisons the output.
// With a soft-cap c, each score s becomes c * tanh(s / c) before the softmax (Gemma 2).
// Every other query row also records its softmax weights (AttentionWeightsOut, weft inspect's
// path): they must equal the dense softmax within 1e-6, zero outside the row's keys, and recording
// must not change any output bit (a batch with recorded rows is never split over key segments,
// one without may be: the same bits either way).
#include "weft/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <tuple>

#include "kernel_test_util.h"

namespace weft::kernels {
namespace {

class AttentionTest : public IsaTest {};

struct SeqSpec {
  int32_t context_len;
  int32_t query_len;
};

void check_attention(const std::vector<SeqSpec>& seqs, int64_t num_heads, int64_t num_kv_heads,
                     int64_t d, int64_t bs, DType cache_dt, ThreadPool& pool, uint32_t seed,
                     int32_t window = 0, float softcap = 0.0f) {
  const int num_seqs = static_cast<int>(seqs.size());
  int max_blocks = 0, total_blocks = 0, tokens = 0;
  for (const SeqSpec& s : seqs) {
    const int nb = static_cast<int>((s.context_len + bs - 1) / bs);
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    tokens += s.query_len;
  }
  max_blocks += 2;  // unused table entries must never be read
  const int pool_blocks = total_blocks + 5;
  const int poison_block = pool_blocks - 1;  // the last block, never handed out
  std::vector<int32_t> free_ids(pool_blocks - 1);
  std::iota(free_ids.begin(), free_ids.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(free_ids.begin(), free_ids.end(), rng);

  // Dense K/V per sequence, then scattered into the paged caches.
  const int64_t kv_row = num_kv_heads * d;
  std::vector<float> k_all(static_cast<size_t>(pool_blocks * bs * kv_row), 0.0f);
  std::vector<float> v_all(k_all.size(), 0.0f);
  std::vector<std::vector<float>> k_dense(num_seqs), v_dense(num_seqs);
  std::vector<int32_t> tables(static_cast<size_t>(num_seqs * max_blocks), -1);
  std::vector<int32_t> query_start(num_seqs + 1, 0), context_len(num_seqs);
  int next_free = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const SeqSpec& spec = seqs[s];
    query_start[s + 1] = query_start[s] + spec.query_len;
    context_len[s] = spec.context_len;
    const int nb = static_cast<int>((spec.context_len + bs - 1) / bs);
    for (int b = 0; b < nb; ++b) tables[s * max_blocks + b] = free_ids[next_free++];
    k_dense[s] = random_floats(static_cast<size_t>(spec.context_len * kv_row), seed + 10 * s + 1);
    v_dense[s] = random_floats(static_cast<size_t>(spec.context_len * kv_row), seed + 10 * s + 2);
    for (int t = 0; t < spec.context_len; ++t) {
      const int64_t slot = static_cast<int64_t>(tables[s * max_blocks + t / bs]) * bs + t % bs;
      for (int64_t i = 0; i < kv_row; ++i) {
        k_all[slot * kv_row + i] = k_dense[s][t * kv_row + i];
        v_all[slot * kv_row + i] = v_dense[s][t * kv_row + i];
      }
    }
  }
  // Rounds k_all / v_all to the cache dtype in place; read the rounded values back densely.
  // Blocks before every query's window: the NaN block (their KV would have been freed).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::fill(k_all.begin() + poison_block * bs * kv_row, k_all.begin() + (poison_block + 1) * bs * kv_row, nan);
  std::fill(v_all.begin() + poison_block * bs * kv_row, v_all.begin() + (poison_block + 1) * bs * kv_row, nan);
  std::vector<int32_t> real_tables = tables;
  if (window > 0) {
    for (int s = 0; s < num_seqs; ++s) {
      const int first_key = std::max(0, seqs[s].context_len - seqs[s].query_len - window + 1);
      for (int b = 0; (b + 1) * bs <= first_key; ++b) tables[s * max_blocks + b] = poison_block;
    }
  }
  Tensor k_cache = make_stored(k_all, cache_dt, {pool_blocks, bs, num_kv_heads, d});
  Tensor v_cache = make_stored(v_all, cache_dt, {pool_blocks, bs, num_kv_heads, d});
  for (int s = 0; s < num_seqs; ++s) {
    for (int t = 0; t < seqs[s].context_len; ++t) {
      const int64_t slot = static_cast<int64_t>(real_tables[s * max_blocks + t / bs]) * bs + t % bs;
      for (int64_t i = 0; i < kv_row; ++i) {
        k_dense[s][t * kv_row + i] = k_all[slot * kv_row + i];
        v_dense[s][t * kv_row + i] = v_all[slot * kv_row + i];
      }
    }
  }

  std::vector<float> qv =
      random_floats(static_cast<size_t>(tokens * num_heads * d), seed + 3, -2, 2);
  Tensor q = make_f32(qv, {tokens, num_heads, d});
  Tensor out = Tensor::zeros(DType::kF32, {tokens, num_heads, d});
  AttentionBatch batch;
  batch.num_seqs = num_seqs;
  batch.query_start = query_start.data();
  batch.context_len = context_len.data();
  batch.block_tables = tables.data();
  batch.max_blocks_per_seq = max_blocks;
  batch.block_size = static_cast<int>(bs);
  batch.window = window;
  batch.softcap = softcap;
  int64_t stride = 0;
  for (const SeqSpec& s : seqs) stride = std::max<int64_t>(stride, s.context_len);
  std::vector<int32_t> recorded_row(static_cast<size_t>(tokens), -1);
  int32_t recorded = 0;
  for (int t = 0; t < tokens; t += 2) recorded_row[t] = recorded++;
  std::vector<float> weights(static_cast<size_t>(recorded * num_heads * stride), 0.0f);
  const AttentionWeightsOut weights_out{recorded_row.data(), weights.data(), stride};
  batch.weights_out = &weights_out;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  paged_attention(q, k_cache, v_cache, batch, scale, out, pool);
  Tensor unrecorded = Tensor::zeros(DType::kF32, {tokens, num_heads, d});
  batch.weights_out = nullptr;
  paged_attention(q, k_cache, v_cache, batch, scale, unrecorded, pool);
  EXPECT_EQ(0, std::memcmp(out.data(), unrecorded.data(), static_cast<size_t>(out.numel()) * sizeof(float)))
      << "recording weights changed the outputs (heads " << num_heads << "/" << num_kv_heads << ", d " << d
      << ", bs " << bs << ", " << dtype_name(cache_dt) << ", window " << window << ")";

  const int64_t group = num_heads / num_kv_heads;
  int failures = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const int ql = seqs[s].query_len, ctx = seqs[s].context_len;
    for (int j = 0; j < ql; ++j) {
      const int pos = ctx - ql + j;
      for (int64_t h = 0; h < num_heads; ++h) {
        const int64_t kvh = h / group;
        const float* qr = qv.data() + ((query_start[s] + j) * num_heads + h) * d;
        const int lo = window > 0 ? std::max(0, pos - window + 1) : 0;
        std::vector<double> logits(pos + 1, 0.0);
        double mx = -1e300;
        for (int t = lo; t <= pos; ++t) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i)
            dot += static_cast<double>(qr[i]) * k_dense[s][(t * num_kv_heads + kvh) * d + i];
          logits[t] = dot * scale;
          if (softcap > 0.0f) logits[t] = softcap * std::tanh(logits[t] / softcap);
          mx = std::max(mx, logits[t]);
        }
        double denom = 0;
        for (int t = lo; t <= pos; ++t) denom += (logits[t] = std::exp(logits[t] - mx));
        if (const int32_t row = recorded_row[query_start[s] + j]; row >= 0) {
          const float* w = weights.data() + (row * num_heads + h) * stride;
          for (int t = 0; t < stride; ++t) {
            const double want = t >= lo && t <= pos ? logits[t] / denom : 0.0;
            if (!(std::fabs(w[t] - want) <= 1e-6) && failures++ < 5) {
              ADD_FAILURE() << "seq " << s << " query " << j << " head " << h << " weight of key " << t
                            << ": got " << w[t] << " want " << want << " (window " << window << ")";
            }
          }
        }
        const float* got = out.data_as<float>() + ((query_start[s] + j) * num_heads + h) * d;
        for (int64_t i = 0; i < d; ++i) {
          double ref = 0;
          for (int t = lo; t <= pos; ++t)
            ref += logits[t] * v_dense[s][(t * num_kv_heads + kvh) * d + i];
          ref /= denom;
          if (!(std::fabs(got[i] - ref) <= 1e-5) && failures++ < 5) {
            ADD_FAILURE() << "seq " << s << " query " << j << " head " << h << " dim " << i
                          << ": got " << got[i] << " want " << ref << " (heads " << num_heads << "/"
                          << num_kv_heads << ", d " << d << ", bs " << bs << ", "
                          << dtype_name(cache_dt) << ", window " << window << ", softcap "
                          << softcap << ")";
          }
        }
      }
    }
  }
}

// Decode (1 query), full prefill, chunked prefill with history, a single-token context, and a
// sequence with no queries this step.
const std::vector<SeqSpec> kRagged = {{50, 1}, {37, 37}, {70, 19}, {1, 1}, {12, 0}, {33, 2}};

TEST_P(AttentionTest, RaggedBatchGqaRatios) {
  ThreadPool pool(3);
  uint32_t seed = 1;
  for (DType dt : kFloatDTypes) {
    for (int64_t kv_heads : {8, 4, 2, 1}) {
      check_attention(kRagged, 8, kv_heads, 64, 16, dt, pool, seed++);
    }
  }
}

TEST_P(AttentionTest, OddHeadDimAndBlockSize) {
  ThreadPool pool(2);
  check_attention(kRagged, 6, 3, 20, 5, DType::kBF16, pool, 40);
  check_attention(kRagged, 4, 1, 3, 1, DType::kF32, pool, 41);
  check_attention({{9, 9}, {4, 1}}, 2, 2, 128, 7, DType::kF16, pool, 42);
}

// One long prefill alone must still split into many work items; results cannot depend on how.
TEST_P(AttentionTest, SingleLongPrefillAcrossThreadCounts) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    check_attention({{150, 150}}, 4, 1, 32, 16, DType::kF16, pool, 50 + threads);
    check_attention({{300, 1}}, 4, 2, 64, 16, DType::kBF16, pool, 60 + threads);
  }
}

// Contexts over several key segments (512 keys with blocks of 16, 500 with blocks of 5, 1024 with
// blocks of 256): few query rows are split over threads by segments, and with a window the
// segments before it are skipped.
TEST_P(AttentionTest, LongContextsSplitByKeySegments) {
  uint32_t seed = 110;
  for (int threads : {2, 3, 8}) {
    ThreadPool pool(threads);
    check_attention({{1300, 1}}, 8, 2, 64, 16, DType::kBF16, pool, seed++);
    check_attention({{1300, 1}, {700, 2}}, 6, 3, 32, 5, DType::kF32, pool, seed++);
    check_attention({{1100, 1}}, 4, 1, 32, 16, DType::kF16, pool, seed++, 700);
    check_attention({{1100, 3}}, 4, 1, 32, 16, DType::kF32, pool, seed++, 100, 1.0f);
    check_attention({{2100, 1}}, 4, 2, 32, 256, DType::kBF16, pool, seed++);  // chunks of one 256-token block
  }
}

// Sliding windows shorter than, equal to and longer than the contexts; block-aligned and not;
// a window of 1 (each query sees only itself).
TEST_P(AttentionTest, SlidingWindow) {
  ThreadPool pool(3);
  uint32_t seed = 70;
  for (int32_t window : {1, 5, 16, 17, 40, 1000}) {
    check_attention(kRagged, 8, 2, 32, 16, DType::kF32, pool, seed++, window);
    check_attention(kRagged, 4, 4, 16, 5, DType::kBF16, pool, seed++, window);
  }
  check_attention({{150, 150}}, 4, 1, 32, 16, DType::kF16, pool, seed++, 33);
  check_attention({{300, 1}, {64, 3}}, 4, 2, 64, 8, DType::kF32, pool, seed++, 24);
}

// Soft-capped scores (scores here have |s| ~0.7, so caps of 0.3 and 1 are well past tanh's linear
// range and 50 is nearly linear), alone and with a sliding window, over every cache dtype.
TEST_P(AttentionTest, SoftCappedScores) {
  ThreadPool pool(3);
  uint32_t seed = 90;
  for (float cap : {0.3f, 1.0f, 50.0f}) {
    for (DType dt : kFloatDTypes) check_attention(kRagged, 8, 2, 64, 16, dt, pool, seed++, 0, cap);
    check_attention(kRagged, 4, 4, 16, 5, DType::kF32, pool, seed++, 17, cap);
  }
  check_attention({{150, 150}}, 4, 1, 32, 16, DType::kBF16, pool, seed++, 33, 0.5f);
}

// A query row's output, bit for bit, does not depend on what else the kernel computes with it:
// the last token of a 150-token prefill equals that token decoded alone, whatever the thread
// count (a lone decode row has its heads split over work items, a prefill keeps a group
// together, so heads go through the multi-head routines in different company; at 1100 tokens, three
// key segments, the lone row is split by segments and the prefill row is not).
TEST_P(AttentionTest, DecodeRowEqualsItsPrefillRowBitForBit) {
  // A decode row reads a 16-bit cache in place; a prefill's query tiles of 16 rows widen it chunk by
  // chunk first (with 160 tokens the last row is in such a tile; with 150, in a tile of 6, read in
  // place too).
  constexpr int64_t kHeads = 12, kD = 64, kBlock = 16;
  for (const auto& [kv_heads, cache_dtype, kLen] :
       {std::tuple<int64_t, DType, int32_t>{1, DType::kBF16, 160}, {3, DType::kBF16, 160}, {3, DType::kBF16, 150},
        {3, DType::kF16, 160}, {3, DType::kF32, 150}, {1, DType::kBF16, 1100}}) {
    const int64_t blocks = (kLen + kBlock - 1) / kBlock;
    std::vector<float> k = random_floats(static_cast<size_t>(blocks * kBlock * kv_heads * kD), 7);
    std::vector<float> v = random_floats(k.size(), 8);
    const Tensor k_cache = make_stored(k, cache_dtype, {blocks, kBlock, kv_heads, kD});
    const Tensor v_cache = make_stored(v, cache_dtype, {blocks, kBlock, kv_heads, kD});
    const std::vector<float> qv = random_floats(static_cast<size_t>(kLen * kHeads * kD), 9, -2, 2);
    std::vector<int32_t> table(static_cast<size_t>(blocks));
    std::iota(table.begin(), table.end(), 0);
    const int32_t context = kLen;
    auto run = [&](int32_t query_len, int threads) {
      std::vector<float> rows(qv.end() - query_len * kHeads * kD, qv.end());
      const Tensor q = make_f32(rows, {query_len, kHeads, kD});
      Tensor out = Tensor::zeros(DType::kF32, {query_len, kHeads, kD});
      const int32_t query_start[2] = {0, query_len};
      AttentionBatch batch;
      batch.num_seqs = 1;
      batch.query_start = query_start;
      batch.context_len = &context;
      batch.block_tables = table.data();
      batch.max_blocks_per_seq = static_cast<int>(blocks);
      batch.block_size = static_cast<int>(kBlock);
      ThreadPool pool(threads);
      paged_attention(q, k_cache, v_cache, batch, 0.125f, out, pool);
      const float* last = out.data_as<float>() + (query_len - 1) * kHeads * kD;
      return std::vector<float>(last, last + kHeads * kD);
    };
    const std::vector<float> prefill = run(kLen, 1);
    for (int threads : {1, 3, 8}) {
      EXPECT_EQ(run(1, threads), prefill) << "kv heads " << kv_heads << ", threads " << threads << ", "
                                          << dtype_name(cache_dtype) << ", " << kLen;
      EXPECT_EQ(run(kLen, threads), prefill) << "kv heads " << kv_heads << ", threads " << threads << ", "
                                             << dtype_name(cache_dtype);
    }
  }
}

WEFT_INSTANTIATE_ISA_TESTS(AttentionTest);

}  // namespace
}  // namespace weft::kernels
