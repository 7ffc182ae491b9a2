// The int8 KV cache: write_kv_cache() quantizes each (token, kv head) row symmetrically with its
// own scale (checked against a quantizer written here in double), and paged_attention() over the
// int8 cache equals a dense causal softmax in double over the dequantized values (1e-5, as the
// float test) and stays within the quantization error of the unquantized attention.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernel_test_util.h"
#include "weft/kernels/attention.h"

namespace weft::kernels {
namespace {

class AttentionInt8Test : public IsaTest {};

TEST_P(AttentionInt8Test, WriteQuantizesEachRowWithItsScaleAndSkipsNegativeSlots) {
  ThreadPool pool(2);
  const int64_t blocks = 3, bs = 4, kvh = 2, d = 17, tokens = 4;
  std::vector<float> kv = random_floats(tokens * kvh * d, 21, -3, 3);
  std::vector<float> vv = random_floats(tokens * kvh * d, 22, -0.01f, 0.01f);
  for (int64_t i = 0; i < d; ++i) kv[(2 * kvh + 1) * d + i] = 0.0f;  // an all-zero row
  Tensor k = make_f32(kv, {tokens, kvh, d});
  Tensor v = make_f32(vv, {tokens, kvh, d});
  Tensor kc = Tensor::zeros(DType::kI8, {blocks, bs, kvh, d});
  Tensor vc = Tensor::zeros(DType::kI8, {blocks, bs, kvh, d});
  std::fill(kc.data_as<int8_t>(), kc.data_as<int8_t>() + kc.numel(), int8_t{99});
  Tensor ks = Tensor::zeros(DType::kF32, {blocks, bs, kvh});
  Tensor vs = Tensor::zeros(DType::kF32, {blocks, bs, kvh});
  const std::vector<int64_t> slot_list = {5, -1, 0, 11};
  Tensor slots = Tensor::zeros(DType::kI64, {tokens});
  std::copy(slot_list.begin(), slot_list.end(), slots.data_as<int64_t>());
  write_kv_cache(k, v, slots, kc, vc, ks, vs, pool);

  std::vector<bool> written(blocks * bs, false);
  for (int64_t t = 0; t < tokens; ++t) {
    if (slot_list[t] < 0) continue;
    written[slot_list[t]] = true;
    for (int which = 0; which < 2; ++which) {
      const std::vector<float>& src = which == 0 ? kv : vv;
      const Tensor& cache = which == 0 ? kc : vc;
      const Tensor& scales = which == 0 ? ks : vs;
      for (int64_t h = 0; h < kvh; ++h) {
        const float* x = src.data() + (t * kvh + h) * d;
        double amax = 0;
        for (int64_t i = 0; i < d; ++i) amax = std::max(amax, std::fabs(double(x[i])));
        const float scale = scales.data_as<float>()[slot_list[t] * kvh + h];
        EXPECT_NEAR(scale, amax / 127.0, 1e-6 * amax + 1e-30) << "token " << t << " head " << h;
        const int8_t* q = cache.data_as<int8_t>() + (slot_list[t] * kvh + h) * d;
        for (int64_t i = 0; i < d; ++i) {
          const double want = amax == 0 ? 0 : std::nearbyint(double(x[i]) * 127.0 / amax);
          EXPECT_NEAR(q[i], want, 1.0) << "token " << t << " head " << h << " dim " << i;
          EXPECT_LE(std::fabs(double(q[i]) * scale - x[i]), 0.5 * scale * 1.0001 + 1e-12);
        }
      }
    }
  }
  for (int64_t slot = 0; slot < blocks * bs; ++slot) {
    if (written[slot]) continue;
    for (int64_t i = 0; i < kvh * d; ++i) {
      ASSERT_EQ(kc.data_as<int8_t>()[slot * kvh * d + i], 99) << "slot " << slot << " was written";
    }
  }
}

struct SeqSpec {
  int32_t context_len;
  int32_t query_len;
};

// Returns the worst |int8 attention - unquantized attention|.
double check_int8_attention(const std::vector<SeqSpec>& seqs, int64_t num_heads,
                            int64_t num_kv_heads, int64_t d, int64_t bs, ThreadPool& pool,
                            uint32_t seed, float softcap = 0.0f) {
  const int num_seqs = static_cast<int>(seqs.size());
  int max_blocks = 0, total_blocks = 0, tokens = 0, cached = 0;
  for (const SeqSpec& s : seqs) {
    const int nb = static_cast<int>((s.context_len + bs - 1) / bs);
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    tokens += s.query_len;
    cached += s.context_len;
  }
  const int pool_blocks = total_blocks + 3;
  std::vector<int32_t> ids(pool_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t kv_row = num_kv_heads * d;
  std::vector<int32_t> tables(static_cast<size_t>(num_seqs * max_blocks), -1);
  std::vector<int32_t> query_start(num_seqs + 1, 0), context_len(num_seqs);
  // Every cached token of every sequence goes through write_kv_cache once.
  std::vector<float> k_rows = random_floats(static_cast<size_t>(cached * kv_row), seed + 1, -2, 2);
  std::vector<float> v_rows = random_floats(k_rows.size(), seed + 2);
  Tensor slots = Tensor::zeros(DType::kI64, {cached});
  std::vector<int64_t> row_of_seq(num_seqs);
  int next = 0, row = 0;
  for (int s = 0; s < num_seqs; ++s) {
    query_start[s + 1] = query_start[s] + seqs[s].query_len;
    context_len[s] = seqs[s].context_len;
    const int nb = static_cast<int>((seqs[s].context_len + bs - 1) / bs);
    for (int b = 0; b < nb; ++b) tables[s * max_blocks + b] = ids[next++];
    row_of_seq[s] = row;
    for (int t = 0; t < seqs[s].context_len; ++t, ++row) {
      slots.data_as<int64_t>()[row] = int64_t{tables[s * max_blocks + t / bs]} * bs + t % bs;
    }
  }
  Tensor kc = Tensor::zeros(DType::kI8, {pool_blocks, bs, num_kv_heads, d});
  Tensor vc = Tensor::zeros(DType::kI8, {pool_blocks, bs, num_kv_heads, d});
  Tensor ks = Tensor::zeros(DType::kF32, {pool_blocks, bs, num_kv_heads});
  Tensor vs = Tensor::zeros(DType::kF32, {pool_blocks, bs, num_kv_heads});
  write_kv_cache(make_f32(k_rows, {cached, num_kv_heads, d}),
                 make_f32(v_rows, {cached, num_kv_heads, d}), slots, kc, vc, ks, vs, pool);

  std::vector<float> qv = random_floats(static_cast<size_t>(tokens * num_heads * d), seed + 3, -2, 2);
  Tensor out = Tensor::zeros(DType::kF32, {tokens, num_heads, d});
  AttentionBatch batch;
  batch.num_seqs = num_seqs;
  batch.query_start = query_start.data();
  batch.context_len = context_len.data();
  batch.block_tables = tables.data();
  batch.max_blocks_per_seq = max_blocks;
  batch.block_size = static_cast<int>(bs);
  batch.softcap = softcap;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  paged_attention(make_f32(qv, {tokens, num_heads, d}), kc, vc, ks, vs, batch, scale, out, pool);

  auto dequant = [&](const Tensor& cache, const Tensor& scales, int64_t slot, int64_t h,
                     int64_t i) {
    return double(cache.data_as<int8_t>()[(slot * num_kv_heads + h) * d + i]) *
           scales.data_as<float>()[slot * num_kv_heads + h];
  };
  const int64_t group = num_heads / num_kv_heads;
  double worst_vs_float = 0;
  int failures = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const int ql = seqs[s].query_len, ctx = seqs[s].context_len;
    for (int j = 0; j < ql; ++j) {
      const int pos = ctx - ql + j;
      for (int64_t h = 0; h < num_heads; ++h) {
        const int64_t kvh = h / group;
        const float* qr = qv.data() + ((query_start[s] + j) * num_heads + h) * d;
        // Two references: over the dequantized cache, and over the original float rows.
        std::vector<double> lq(pos + 1), lf(pos + 1);
        double mq = -1e300, mf = -1e300;
        for (int t = 0; t <= pos; ++t) {
          const int64_t slot = slots.data_as<int64_t>()[row_of_seq[s] + t];
          double dq = 0, df = 0;
          for (int64_t i = 0; i < d; ++i) {
            dq += double(qr[i]) * dequant(kc, ks, slot, kvh, i);
            df += double(qr[i]) * k_rows[((row_of_seq[s] + t) * num_kv_heads + kvh) * d + i];
          }
          lq[t] = dq * scale;
          lf[t] = df * scale;
          if (softcap > 0.0f) {
            lq[t] = softcap * std::tanh(lq[t] / softcap);
            lf[t] = softcap * std::tanh(lf[t] / softcap);
          }
          mq = std::max(mq, lq[t]);
          mf = std::max(mf, lf[t]);
        }
        double sq = 0, sf = 0;
        for (int t = 0; t <= pos; ++t) {
          sq += (lq[t] = std::exp(lq[t] - mq));
          sf += (lf[t] = std::exp(lf[t] - mf));
        }
        const float* got = out.data_as<float>() + ((query_start[s] + j) * num_heads + h) * d;
        for (int64_t i = 0; i < d; ++i) {
          double rq = 0, rf = 0;
          for (int t = 0; t <= pos; ++t) {
            const int64_t slot = slots.data_as<int64_t>()[row_of_seq[s] + t];
            rq += lq[t] * dequant(vc, vs, slot, kvh, i);
            rf += lf[t] * v_rows[((row_of_seq[s] + t) * num_kv_heads + kvh) * d + i];
          }
          rq /= sq;
          rf /= sf;
          worst_vs_float = std::max(worst_vs_float, std::fabs(got[i] - rf));
          if (std::fabs(got[i] - rq) > 1e-5 && failures++ < 5) {
            ADD_FAILURE() << "seq " << s << " query " << j << " head " << h << " dim " << i
                          << ": got " << got[i] << " want " << rq;
          }
        }
      }
    }
  }
  return worst_vs_float;
}

TEST_P(AttentionInt8Test, MatchesDenseSoftmaxOverDequantizedCache) {
  ThreadPool pool(3);
  const std::vector<SeqSpec> ragged = {{50, 1}, {37, 37}, {70, 19}, {1, 1}, {12, 0}, {33, 2}};
  double worst = 0;
  uint32_t seed = 100;
  for (int64_t kv_heads : {8, 2, 1}) {
    worst = std::max(worst, check_int8_attention(ragged, 8, kv_heads, 64, 16, pool, seed++));
  }
  worst = std::max(worst, check_int8_attention({{9, 9}, {4, 1}}, 6, 3, 20, 5, pool, seed++));
  // Contexts over several key segments (512 keys): decode rows split over threads by segment.
  worst = std::max(worst, check_int8_attention({{1300, 1}, {700, 2}}, 8, 2, 64, 16, pool, seed++));
  // Quantization error: values in [-1, 1] rounded to 1/254 of the row's range, |error| <=
  // 0.004 per element; after the softmax average the output moves by about that much.
  std::printf("int8 KV attention vs unquantized: max |diff| = %.2e\n", worst);
  EXPECT_LT(worst, 0.02);
}

// Soft-capped scores (Gemma 2) read from the int8 cache: the same cap applies to the
// dequantized scores.
TEST_P(AttentionInt8Test, SoftCappedScoresOverDequantizedCache) {
  ThreadPool pool(3);
  const std::vector<SeqSpec> ragged = {{50, 1}, {37, 37}, {70, 19}, {1, 1}, {12, 0}, {33, 2}};
  double worst = 0;
  uint32_t seed = 200;
  for (float cap : {0.3f, 1.0f}) {
    worst = std::max(worst, check_int8_attention(ragged, 8, 2, 64, 16, pool, seed++, cap));
    worst = std::max(worst, check_int8_attention({{9, 9}, {4, 1}}, 6, 3, 20, 5, pool, seed++, cap));
  }
  EXPECT_LT(worst, 0.02);
}

WEFT_INSTANTIATE_ISA_TESTS(AttentionInt8Test);

}  // namespace
}  // namespace weft::kernels
