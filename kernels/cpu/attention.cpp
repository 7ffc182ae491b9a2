#include "weft/kernels/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/isa.h"

namespace weft::kernels {
namespace {

// One unit of parallel work: query rows [q_begin, q_end) of sequence `seq` (relative to its
// first query row) for query heads [h_begin, h_end) of the group that reads kv head `kv_head`.
// Heads of one group share each K/V block load, so they stay together unless the batch is too
// small to keep every thread busy.
struct WorkItem {
  int32_t seq;
  int32_t kv_head;
  int32_t h_begin, h_end;
  int32_t q_begin, q_end;
};

struct Geometry {
  int64_t num_heads, num_kv_heads, head_dim, group;
  int64_t block_size;
};

std::vector<WorkItem> plan_items(const AttentionBatch& batch, const Geometry& g, int64_t threads) {
  const int64_t want = 2 * threads;
  auto count = [&](int64_t q_tile) {
    int64_t items = 0;
    for (int s = 0; s < batch.num_seqs; ++s) {
      const int64_t ql = batch.query_start[s + 1] - batch.query_start[s];
      items += (ql + q_tile - 1) / q_tile * g.num_kv_heads;
    }
    return items;
  };
  // Query tiles of 16 rows share each K/V block; smaller tiles only when that starves threads.
  int64_t q_tile = 16;
  while (q_tile > 1 && count(q_tile) < want) q_tile /= 2;
  const int64_t items = count(q_tile);
  int64_t head_split = 1;
  if (items > 0 && items < want) head_split = std::min(g.group, (want + items - 1) / items);
  const int64_t h_tile = (g.group + head_split - 1) / head_split;

  std::vector<WorkItem> out;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int32_t ql = batch.query_start[s + 1] - batch.query_start[s];
    for (int32_t q0 = 0; q0 < ql; q0 += static_cast<int32_t>(q_tile)) {
      const int32_t q1 = std::min<int32_t>(ql, q0 + static_cast<int32_t>(q_tile));
      for (int64_t kvh = 0; kvh < g.num_kv_heads; ++kvh) {
        for (int64_t h0 = 0; h0 < g.group; h0 += h_tile) {
          out.push_back({s, static_cast<int32_t>(kvh), static_cast<int32_t>(h0),
                         static_cast<int32_t>(std::min(g.group, h0 + h_tile)), q0, q1});
        }
      }
    }
  }
  // Later query tiles attend to more keys; handing them out first balances the dynamic chunks.
  std::stable_sort(out.begin(), out.end(), [&](const WorkItem& a, const WorkItem& b) {
    const int64_t ka = batch.context_len[a.seq] -
                       (batch.query_start[a.seq + 1] - batch.query_start[a.seq]) + a.q_end;
    const int64_t kb = batch.context_len[b.seq] -
                       (batch.query_start[b.seq + 1] - batch.query_start[b.seq]) + b.q_end;
    return ka * (a.h_end - a.h_begin) > kb * (b.h_end - b.h_begin);
  });
  return out;
}

// Keys per online-softmax step of run_item (whole blocks; at least one).
constexpr int64_t kChunkKeys = 128;
// Query heads of one row whose scores and outputs are computed together.
constexpr int kHeadsPerPass = 4;

// Items of at most this many query rows read a 16-bit cache in place (each vector widened in its
// register as it is loaded); longer ones widen each chunk once into the scratch, which many rows
// then read. Both give the same bits (widening is exact).
constexpr int64_t kMaxRowsReadingInPlace = 8;

// Where part of a chunk's keys and values are: `count` rows `stride` elements apart, the first of
// them `begin` keys into the chunk; F32 (k, v) or 16-bit (k16, v16, of the cache's dtype).
struct KeyRun {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t stride = 0, begin = 0, count = 0;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
};

// Per-thread buffers, reused across the items one chunk processes.
struct Scratch {
  std::vector<float> acc, row_max, row_sum, k, v, scores;
  std::vector<KeyRun> runs;
};

// Int8 cache rows: per (slot, kv head) scales; null for float caches.
struct Scales {
  const float* k = nullptr;
  const float* v = nullptr;
};

// Where the weights of (batch token `token`, query head `head`) go, or null when not recorded.
float* recorded_row(const AttentionBatch& batch, const Geometry& g, int64_t token, int64_t head) {
  const AttentionWeightsOut* out = batch.weights_out;
  if (out == nullptr || out->row[token] < 0) return nullptr;
  return out->weights + (out->row[token] * g.num_heads + head) * out->stride;
}

void dequantize_row(const int8_t* src, float scale, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale;
}

void run_item(const WorkItem& it, const float* q, const TensorView& k_cache,
              const TensorView& v_cache, const Scales& scales, const AttentionBatch& batch,
              const Geometry& g, float scale, float* out, const cpu::VecOps& ops, Scratch& sc) {
  const int64_t d = g.head_dim;
  const int64_t bs = g.block_size;
  const int64_t ql = batch.query_start[it.seq + 1] - batch.query_start[it.seq];
  const int64_t q_row0 = batch.query_start[it.seq];
  const int64_t first_pos = batch.context_len[it.seq] - ql;  // position of query row 0
  assert(first_pos >= 0);
  const int64_t heads = it.h_end - it.h_begin;
  const int64_t rows = (it.q_end - it.q_begin) * heads;
  const int64_t n_keys = first_pos + it.q_end;  // keys the last row of the item sees
  // The first key row j sees: 0, or the start of its sliding window.
  auto first_key = [&](int64_t j) -> int64_t {
    return batch.window > 0 ? std::max<int64_t>(0, first_pos + j - batch.window + 1) : 0;
  };
  const int64_t kv_stride = g.num_kv_heads * d;
  const size_t esize = dtype_size(k_cache.dtype);
  const bool direct = k_cache.dtype == DType::kF32;
  const bool in_place_16 = !direct && scales.k == nullptr && it.q_end - it.q_begin <= kMaxRowsReadingInPlace;
  // Keys go through the online softmax a chunk of whole blocks at a time (one max, one exp pass
  // and one rescale per row and chunk rather than per block). Chunks start at multiples of
  // chunk_blocks from key 0, whatever the item, so a row's arithmetic is the same in every item
  // and batch it is part of (a decode row equals its row in a prefill).
  const int64_t chunk_blocks = std::max<int64_t>(1, kChunkKeys / bs);
  const int64_t chunk_keys = chunk_blocks * bs;

  sc.acc.assign(static_cast<size_t>(rows * d), 0.0f);
  sc.row_max.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
  sc.row_sum.assign(static_cast<size_t>(rows), 0.0f);
  sc.scores.resize(static_cast<size_t>(kHeadsPerPass * chunk_keys));
  if (!direct) {
    sc.k.resize(static_cast<size_t>(chunk_keys * d));
    sc.v.resize(static_cast<size_t>(chunk_keys * d));
  }
  const int32_t* table =
      batch.block_tables + static_cast<int64_t>(it.seq) * batch.max_blocks_per_seq;
  std::vector<KeyRun>& runs = sc.runs;

  for (int64_t c = first_key(it.q_begin) / chunk_keys; c * chunk_keys < n_keys; ++c) {
    const int64_t t0 = c * chunk_keys;
    const int64_t nt = std::min(chunk_keys, n_keys - t0);
    runs.clear();
    // Blocks wholly before the item's first window are never read (their KV may be freed).
    for (int64_t b = std::max(t0, first_key(it.q_begin)) / bs; b * bs < t0 + nt; ++b) {
      const int64_t block = table[b];
      assert(block >= 0);
      const int64_t begin = b * bs - t0;
      const int64_t count = std::min(bs, nt - begin);
      // Element offset of (block, token 0, kv_head, 0).
      const int64_t base = (block * bs * g.num_kv_heads + it.kv_head) * d;
      if (direct) {
        runs.push_back({k_cache.as<const float>() + base, v_cache.as<const float>() + base, kv_stride, begin, count});
        continue;
      }
      if (in_place_16) {
        KeyRun run;
        run.stride = kv_stride;
        run.begin = begin;
        run.count = count;
        run.k16 = static_cast<const uint16_t*>(k_cache.data) + base;
        run.v16 = static_cast<const uint16_t*>(v_cache.data) + base;
        runs.push_back(run);
        continue;
      }
      const char* kc = static_cast<const char*>(k_cache.data);
      const char* vc = static_cast<const char*>(v_cache.data);
      for (int64_t t = 0; t < count; ++t) {
        const size_t off = static_cast<size_t>(base + t * kv_stride) * esize;
        float* kd = sc.k.data() + (begin + t) * d;
        float* vd = sc.v.data() + (begin + t) * d;
        if (scales.k != nullptr) {
          const int64_t s = (block * bs + t) * g.num_kv_heads + it.kv_head;
          dequantize_row(reinterpret_cast<const int8_t*>(kc + off), scales.k[s], kd, d);
          dequantize_row(reinterpret_cast<const int8_t*>(vc + off), scales.v[s], vd, d);
        } else {
          ops.widen(k_cache.dtype, kc + off, kd, d);
          ops.widen(v_cache.dtype, vc + off, vd, d);
        }
      }
    }
    if (!direct && !in_place_16) runs.assign(1, KeyRun{sc.k.data(), sc.v.data(), d, 0, nt});  // widened: one run

    for (int64_t j = it.q_begin; j < it.q_end; ++j) {
      // Causal: query j (position first_pos + j) sees keys up to and including its own.
      const int64_t lim = std::min(nt, first_pos + j - t0 + 1);
      const int64_t skip = std::max<int64_t>(0, first_key(j) - t0);  // keys before its window
      if (lim - skip <= 0) continue;
      const int64_t n = lim - skip;
      // The heads of one query row see the same keys: up to kHeadsPerPass of them share each
      // K and V load (the multi-row routines give each head the bits it would get alone).
      for (int64_t h0 = 0; h0 < heads; h0 += kHeadsPerPass) {
        const int nh = static_cast<int>(std::min<int64_t>(kHeadsPerPass, heads - h0));
        const float* qs[kHeadsPerPass];
        float* ss[kHeadsPerPass];
        float* accs[kHeadsPerPass];
        for (int t = 0; t < nh; ++t) {
          const int64_t head = it.kv_head * g.group + it.h_begin + h0 + t;
          qs[t] = q + ((q_row0 + j) * g.num_heads + head) * d;
          ss[t] = sc.scores.data() + t * chunk_keys;
          accs[t] = sc.acc.data() + ((j - it.q_begin) * heads + h0 + t) * d;
        }
        for (const KeyRun& run : runs) {
          const int64_t a = std::max(skip, run.begin), e = std::min(lim, run.begin + run.count);
          if (a >= e) continue;
          float* outs[kHeadsPerPass];
          for (int t = 0; t < nh; ++t) outs[t] = ss[t] + a;
          if (run.k16 != nullptr) {
            ops.dot_rows_multi_16(k_cache.dtype, qs, nh, run.k16 + (a - run.begin) * run.stride, e - a, d,
                                  run.stride, scale, outs);
          } else {
            ops.dot_rows_multi(qs, nh, run.k + (a - run.begin) * run.stride, e - a, d, run.stride,
                               scale, outs);
          }
        }
        for (int t = 0; t < nh; ++t) {
          const int64_t r = (j - it.q_begin) * heads + h0 + t;
          const int64_t head = it.kv_head * g.group + it.h_begin + h0 + t;
          float* s = ss[t] + skip;
          if (batch.softcap > 0.0f) ops.softcap(s, n, batch.softcap);
          // Recorded rows keep their scores; they become weights once the row's max and sum are known.
          if (float* w = recorded_row(batch, g, q_row0 + j, head)) std::copy(s, s + n, w + t0 + skip);
          const float mx = ops.max(s, n);
          const float old_max = sc.row_max[r];
          const float new_max = std::max(old_max, mx);
          const float sum = ops.exp_shift(s, n, new_max);
          float* acc = accs[t];
          if (old_max != -std::numeric_limits<float>::infinity() && old_max != new_max) {
            // Rescale what was accumulated under the old running max.
            const float corr = std::exp(old_max - new_max);
            sc.row_sum[r] *= corr;
            for (int64_t i = 0; i < d; ++i) acc[i] *= corr;
          }
          sc.row_sum[r] += sum;
          sc.row_max[r] = new_max;
        }
        for (const KeyRun& run : runs) {
          const int64_t a = std::max(skip, run.begin), e = std::min(lim, run.begin + run.count);
          if (a >= e) continue;
          const float* ps[kHeadsPerPass];
          for (int t = 0; t < nh; ++t) ps[t] = ss[t] + a;
          if (run.v16 != nullptr) {
            ops.axpy_rows_multi_16(v_cache.dtype, ps, nh, run.v16 + (a - run.begin) * run.stride, e - a, d,
                                   run.stride, accs);
          } else {
            ops.axpy_rows_multi(ps, nh, run.v + (a - run.begin) * run.stride, e - a, d, run.stride,
                                accs);
          }
        }
      }
    }
  }

  for (int64_t j = it.q_begin; j < it.q_end; ++j) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t r = (j - it.q_begin) * heads + h;
      const int64_t head = it.kv_head * g.group + it.h_begin + h;
      float* o = out + ((q_row0 + j) * g.num_heads + head) * d;
      const float* acc = sc.acc.data() + r * d;
      const float inv = sc.row_sum[r] > 0.0f ? 1.0f / sc.row_sum[r] : 0.0f;
      for (int64_t i = 0; i < d; ++i) o[i] = acc[i] * inv;
      if (float* w = recorded_row(batch, g, q_row0 + j, head)) {
        // Keys [first_key(j), position]: exp(score - max) / sum, the weights the output mixed.
        for (int64_t t = first_key(j); t <= first_pos + j; ++t) w[t] = std::exp(w[t] - sc.row_max[r]) * inv;
      }
    }
  }
}

}  // namespace

void write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slots,
                    const TensorView& k_cache, const TensorView& v_cache, ThreadPool& pool) {
  const int64_t tokens = k.shape[0];
  const int64_t row = tokens > 0 ? k.numel() / tokens : 0;
  assert(k.dtype == DType::kF32 && v.dtype == DType::kF32 && v.numel() == k.numel());
  assert(slots.dtype == DType::kI64 && slots.numel() == tokens);
  assert(k_cache.dtype == v_cache.dtype && is_float_dtype(k_cache.dtype));
  const cpu::VecOps& ops = cpu::vec_ops();
  const int64_t* slot = slots.as<const int64_t>();
  const int64_t cache_slots = row > 0 ? k_cache.numel() / row : 0;
  const size_t row_bytes = static_cast<size_t>(row) * dtype_size(k_cache.dtype);
  char* kc = static_cast<char*>(k_cache.data);
  char* vc = static_cast<char*>(v_cache.data);
  const float* kp = k.as<const float>();
  const float* vp = v.as<const float>();
  pool.parallel_for(
      tokens,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          if (slot[t] < 0) continue;
          assert(slot[t] < cache_slots);
          ops.narrow(kp + t * row, k_cache.dtype, kc + slot[t] * row_bytes, row);
          ops.narrow(vp + t * row, v_cache.dtype, vc + slot[t] * row_bytes, row);
        }
      },
      std::max<int64_t>(1, 8192 / std::max<int64_t>(1, row)));
  (void)cache_slots;
}

namespace {

// Symmetric per-row int8: scale = max |x| / 127, q = round(x / scale).
float quantize_row(const float* src, int8_t* dst, int64_t n) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(src[i]));
  if (amax == 0.0f) {
    std::fill(dst, dst + n, int8_t{0});
    return 0.0f;
  }
  const float scale = amax / 127.0f;
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyint(src[i] * inv);
    dst[i] = static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
  }
  return scale;
}

void paged_attention_impl(const TensorView& q, const TensorView& k_cache,
                          const TensorView& v_cache, const Scales& scales,
                          const AttentionBatch& batch, float scale, const TensorView& out,
                          ThreadPool& pool);

}  // namespace

void write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slots,
                    const TensorView& k_cache, const TensorView& v_cache,
                    const TensorView& k_scale, const TensorView& v_scale, ThreadPool& pool) {
  const int64_t tokens = k.shape[0];
  assert(k.dtype == DType::kF32 && v.dtype == DType::kF32 && v.numel() == k.numel());
  assert(k_cache.dtype == DType::kI8 && v_cache.dtype == DType::kI8);
  assert(k_scale.dtype == DType::kF32 && v_scale.dtype == DType::kF32);
  assert(slots.dtype == DType::kI64 && slots.numel() == tokens);
  const int64_t heads = k_cache.shape[2];
  const int64_t d = k_cache.shape[3];
  assert(tokens == 0 || k.numel() == tokens * heads * d);
  const int64_t* slot = slots.as<const int64_t>();
  int8_t* kc = k_cache.as<int8_t>();
  int8_t* vc = v_cache.as<int8_t>();
  float* ks = k_scale.as<float>();
  float* vs = v_scale.as<float>();
  const float* kp = k.as<const float>();
  const float* vp = v.as<const float>();
  pool.parallel_for(
      tokens,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          if (slot[t] < 0) continue;
          for (int64_t h = 0; h < heads; ++h) {
            const int64_t src = (t * heads + h) * d;
            const int64_t row = slot[t] * heads + h;
            ks[row] = quantize_row(kp + src, kc + row * d, d);
            vs[row] = quantize_row(vp + src, vc + row * d, d);
          }
        }
      },
      std::max<int64_t>(1, 8192 / std::max<int64_t>(1, heads * d)));
}

void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionBatch& batch, float scale, const TensorView& out,
                     ThreadPool& pool) {
  assert(k_cache.dtype != DType::kI8);
  paged_attention_impl(q, k_cache, v_cache, Scales{}, batch, scale, out, pool);
}

void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& k_scale, const TensorView& v_scale,
                     const AttentionBatch& batch, float scale, const TensorView& out,
                     ThreadPool& pool) {
  assert(k_cache.dtype == DType::kI8 && k_scale.dtype == DType::kF32 &&
         v_scale.dtype == DType::kF32);
  paged_attention_impl(q, k_cache, v_cache,
                       Scales{k_scale.as<const float>(), v_scale.as<const float>()}, batch, scale,
                       out, pool);
}

namespace {

void paged_attention_impl(const TensorView& q, const TensorView& k_cache,
                          const TensorView& v_cache, const Scales& scales,
                          const AttentionBatch& batch, float scale, const TensorView& out,
                          ThreadPool& pool) {
  Geometry g;
  g.num_heads = q.shape[1];
  g.head_dim = q.shape[2];
  g.num_kv_heads = k_cache.shape[2];
  g.block_size = k_cache.shape[1];
  assert(q.dtype == DType::kF32 && out.dtype == DType::kF32 && q.shape.rank() == 3);
  assert(out.numel() == q.numel() && k_cache.dtype == v_cache.dtype);
  assert(k_cache.shape.rank() == 4 && k_cache.shape[3] == g.head_dim);
  assert(g.block_size == batch.block_size && g.num_heads % g.num_kv_heads == 0);
  g.group = g.num_heads / g.num_kv_heads;
  if (batch.num_seqs == 0) return;

  const std::vector<WorkItem> items = plan_items(batch, g, pool.num_threads());
  const cpu::VecOps& ops = cpu::vec_ops();
  const float* qp = q.as<const float>();
  float* op = out.as<float>();
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t begin, int64_t end) {
    Scratch sc;
    for (int64_t i = begin; i < end; ++i) {
      run_item(items[static_cast<size_t>(i)], qp, k_cache, v_cache, scales, batch, g, scale, op,
               ops, sc);
    }
  });
}

}  // namespace

}  // namespace weft::kernels
