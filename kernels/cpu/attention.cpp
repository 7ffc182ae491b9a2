#include "weft/kernels/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/isa.h"

namespace weft::kernels {
namespace {

// Keys per online-softmax step of run_item (whole blocks; at least one).
constexpr int64_t kChunkKeys = 128;
// Chunks per key segment. Every query row's softmax runs separately over each segment of its keys
// (segment s: keys [s * segment_keys, (s + 1) * segment_keys) from key 0, whatever the batch),
// and the segments' results are folded in order (fold_segment). So one long context can be split
// over threads by whole segments (a lone decode row with a few KV heads would otherwise leave
// threads idle, or split the heads and read its cache twice) and every row still gets the same
// bits in every batch and on any thread count. Rows within one segment fold nothing.
constexpr int64_t kSegmentChunks = 4;

struct Geometry {
  int64_t num_heads, num_kv_heads, head_dim, group;
  int64_t block_size;
  int64_t chunk_keys;    // whole blocks, about kChunkKeys
  int64_t segment_keys;  // kSegmentChunks chunks
};

// One unit of parallel work: query rows [q_begin, q_end) of sequence `seq` (relative to its
// first query row) for query heads [h_begin, h_end) of the group that reads kv head `kv_head`,
// over key segments [seg_begin, seg_end). Heads of one group share each K/V block load, so they
// stay together unless the batch is too small to keep every thread busy; then long contexts are
// split by segments (each item writes its segments' partial results, `unit`), short ones by heads.
struct WorkItem {
  int32_t seq;
  int32_t kv_head;
  int32_t h_begin, h_end;
  int32_t q_begin, q_end;
  int64_t seg_begin = 0, seg_end = std::numeric_limits<int64_t>::max();
  int32_t unit = -1;  // the SplitUnit it belongs to; -1: it covers every key and writes the output
  int64_t cost = 0;   // keys times heads, for the order of hand-out
};

// Rows [q_begin, q_end) of `seq` over kv head `kv_head`'s whole group, split by key segments: each
// (row, head, segment in [first_segment, end_segment)) has a partial result in the call's buffer
// at `offset` (Partial layout), folded in segment order once every item is done.
struct SplitUnit {
  int32_t seq, kv_head, q_begin, q_end;
  int64_t first_segment, end_segment;
  int64_t offset;
};

// A (row, head, segment) partial result: running max, sum of exponentials, then head_dim sums.
constexpr int64_t kPartialHeader = 2;

// Where unit u's partial result of query row j (relative to its sequence), head h of the group and
// segment seg is; a row's and head's segments follow one another.
float* partial_at(float* partials, const SplitUnit& u, int64_t group, int64_t d, int64_t j, int64_t h,
                  int64_t seg) {
  const int64_t segments = u.end_segment - u.first_segment;
  return partials + u.offset +
         (((j - u.q_begin) * group + h) * segments + seg - u.first_segment) * (kPartialHeader + d);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Plan {
  std::vector<WorkItem> items;
  std::vector<SplitUnit> units;
  int64_t partial_floats = 0;
};

Plan plan_items(const AttentionBatch& batch, const Geometry& g, int64_t threads) {
  const int64_t want = 2 * threads;
  auto count = [&](int64_t q_tile) {
    int64_t items = 0;
    for (int s = 0; s < batch.num_seqs; ++s) {
      const int64_t ql = batch.query_start[s + 1] - batch.query_start[s];
      items += ceil_div(ql, q_tile) * g.num_kv_heads;
    }
    return items;
  };
  // Query tiles of 16 rows share each K/V block; smaller tiles only when that starves threads.
  int64_t q_tile = 16;
  while (q_tile > 1 && count(q_tile) < want) q_tile /= 2;
  const int64_t items = count(q_tile);
  // How many pieces each (sequence, query tile, kv head) should become to keep every thread busy.
  const int64_t pieces = items > 0 && items < want ? ceil_div(want, items) : 1;
  const int64_t h_tile = ceil_div(g.group, std::min(g.group, pieces));
  // Recorded rows turn scores into weights with the row's final max and sum: never split by keys.
  const bool key_split = pieces > 1 && batch.weights_out == nullptr;

  Plan plan;
  for (int s = 0; s < batch.num_seqs; ++s) {
    const int32_t ql = batch.query_start[s + 1] - batch.query_start[s];
    const int64_t first_pos = batch.context_len[s] - ql;
    for (int32_t q0 = 0; q0 < ql; q0 += static_cast<int32_t>(q_tile)) {
      const int32_t q1 = std::min<int32_t>(ql, q0 + static_cast<int32_t>(q_tile));
      const int64_t n_keys = first_pos + q1;
      const int64_t first_key =
          batch.window > 0 ? std::max<int64_t>(0, first_pos + q0 - batch.window + 1) : 0;
      const int64_t seg0 = first_key / g.segment_keys, seg1 = ceil_div(n_keys, g.segment_keys);
      for (int64_t kvh = 0; kvh < g.num_kv_heads; ++kvh) {
        WorkItem it{s, static_cast<int32_t>(kvh), 0, static_cast<int32_t>(g.group), q0, q1};
        if (key_split && seg1 - seg0 >= 2) {
          const int64_t parts = std::min(pieces, seg1 - seg0);
          it.unit = static_cast<int32_t>(plan.units.size());
          plan.units.push_back({s, static_cast<int32_t>(kvh), q0, q1, seg0, seg1, plan.partial_floats});
          plan.partial_floats += (q1 - q0) * g.group * (seg1 - seg0) * (kPartialHeader + g.head_dim);
          for (int64_t p = 0; p < parts; ++p) {
            it.seg_begin = seg0 + (seg1 - seg0) * p / parts;
            it.seg_end = seg0 + (seg1 - seg0) * (p + 1) / parts;
            it.cost = (std::min(n_keys, it.seg_end * g.segment_keys) -
                       std::max(first_key, it.seg_begin * g.segment_keys)) * g.group;
            plan.items.push_back(it);
          }
          continue;
        }
        for (int64_t h0 = 0; h0 < g.group; h0 += h_tile) {
          it.h_begin = static_cast<int32_t>(h0);
          it.h_end = static_cast<int32_t>(std::min(g.group, h0 + h_tile));
          it.cost = n_keys * (it.h_end - it.h_begin);
          plan.items.push_back(it);
        }
      }
    }
  }
  // Items over more keys first: that balances the dynamic chunks.
  std::stable_sort(plan.items.begin(), plan.items.end(),
                   [](const WorkItem& a, const WorkItem& b) { return a.cost > b.cost; });
  return plan;
}

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
  // Per row of the item (query row by head): the current segment's softmax state, and the folded
  // segments before it (items that write the output).
  std::vector<float> acc, row_max, row_sum;
  std::vector<float> folded_acc, folded_max, folded_sum;
  std::vector<float> k, v, scores;
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

// Folds one segment's softmax state (max m, sum l, weighted values acc) into a row's folded state
// (the segments before it). A segment the row has no keys in (l == 0) changes nothing; the first
// one with keys is copied, so a row within one segment keeps its online softmax's bits. Split and
// whole items fold through this one function, in segment order: the same bits either way.
void fold_segment(float m, float l, const float* acc, float& folded_max, float& folded_sum,
                  float* folded_acc, int64_t d) {
  if (l == 0.0f) return;
  if (folded_sum == 0.0f) {
    folded_max = m;
    folded_sum = l;
    std::copy(acc, acc + d, folded_acc);
    return;
  }
  const float new_max = std::max(folded_max, m);
  const float a = std::exp(folded_max - new_max), b = std::exp(m - new_max);
  folded_sum = folded_sum * a + l * b;
  folded_max = new_max;
  for (int64_t i = 0; i < d; ++i) folded_acc[i] = folded_acc[i] * a + acc[i] * b;
}

// Asks for the cache line at p to be brought into L2. An asm statement, not __builtin_prefetch:
// GCC counts the builtin as free of side effects, so it took a function that only fetches for a
// pure one and deleted every call to it (ChunkPrefetch::slice compiled to nothing; no
// prefetch instruction was left in this file's object).
inline void fetch_into_l2(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// Brings kv head `kv_head`'s K and V rows of the next chunk's keys into L2 while run_item works
// on this chunk. A row's keys are scattered over the cache a block at a time (16 rows of d values,
// kv_stride apart), which the hardware prefetchers do not follow. The fetches are spread over the
// chunk's work, a slice of the next chunk's K rows before each block's scores and of its V rows
// before each block's weighted sum: asked all at once at the chunk's start (as before) they fill
// the core's miss queue and stall it. kernels_bench BM_PagedAttentionDecode, contexts past the
// caches, against that burst: 1 x 65536 7.9-8.5 -> 4.7-5.4 ms, 16 x 2048 1.25-1.5 -> 0.95 ms; a
// distance of two chunks was slower than one.
class ChunkPrefetch {
 public:
  ChunkPrefetch(const int32_t* table, int64_t bs, int64_t num_kv_heads, int64_t kv_head, int64_t d,
                size_t esize)
      : table_(table), bs_(bs), num_kv_heads_(num_kv_heads), kv_head_(kv_head), d_(d), esize_(esize) {}

  // The keys [t0, t1) to fetch (the next chunk's); none when t1 <= t0.
  void set_keys(int64_t t0, int64_t t1) {
    t0_ = t0;
    t1_ = t1;
  }

  // Slice `part` of `parts` of those keys' rows in `cache` (the keys split evenly).
  void slice(const TensorView& cache, int64_t part, int64_t parts) const {
    if (t1_ <= t0_ || parts <= 0) return;
    const int64_t a = t0_ + (t1_ - t0_) * part / parts, e = t0_ + (t1_ - t0_) * (part + 1) / parts;
    const size_t row_bytes = static_cast<size_t>(d_) * esize_;
    const char* base = static_cast<const char*>(cache.data);
    for (int64_t b = a / bs_; b * bs_ < e; ++b) {
      const int64_t block = table_[b];
      if (block < 0) continue;
      const int64_t first = std::max(a, b * bs_) - b * bs_, last = std::min(e, (b + 1) * bs_) - b * bs_;
      for (int64_t t = first; t < last; ++t) {
        const size_t off = static_cast<size_t>(((block * bs_ + t) * num_kv_heads_ + kv_head_) * d_) * esize_;
        for (size_t line = 0; line < row_bytes; line += 64) fetch_into_l2(base + off + line);
      }
    }
  }

 private:
  const int32_t* table_;
  int64_t bs_, num_kv_heads_, kv_head_, d_;
  size_t esize_;
  int64_t t0_ = 0, t1_ = 0;
};

// o = acc / sum (0 for a row that saw no keys).
void write_output(const float* acc, float sum, float* o, int64_t d) {
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int64_t i = 0; i < d; ++i) o[i] = acc[i] * inv;
}

// Runs one item: writes its rows' outputs, or (a split item) its segments' partial results
// into `partials` at its unit's place.
void run_item(const WorkItem& it, const float* q, const TensorView& k_cache,
              const TensorView& v_cache, const Scales& scales, const AttentionBatch& batch,
              const Geometry& g, float scale, float* out, const SplitUnit* unit, float* partials,
              const cpu::VecOps& ops, Scratch& sc) {
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
  // chunk_keys from key 0 and segments at multiples of segment_keys, whatever the item, so a
  // row's arithmetic is the same in every item and batch it is part of (a decode row equals its
  // row in a prefill).
  const int64_t chunk_keys = g.chunk_keys;

  sc.acc.assign(static_cast<size_t>(rows * d), 0.0f);
  sc.row_max.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
  sc.row_sum.assign(static_cast<size_t>(rows), 0.0f);
  if (unit == nullptr) {
    sc.folded_acc.assign(static_cast<size_t>(rows * d), 0.0f);
    sc.folded_max.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
    sc.folded_sum.assign(static_cast<size_t>(rows), 0.0f);
  }
  // Ends segment `seg` for every row: folds it (or stores it, for a split item) and starts afresh.
  auto close_segment = [&](int64_t seg) {
    for (int64_t r = 0; r < rows; ++r) {
      float* acc = sc.acc.data() + r * d;
      if (unit != nullptr) {
        float* p = partial_at(partials, *unit, g.group, d, it.q_begin + r / heads, it.h_begin + r % heads, seg);
        p[0] = sc.row_max[r];
        p[1] = sc.row_sum[r];
        std::copy(acc, acc + d, p + kPartialHeader);
      } else {
        fold_segment(sc.row_max[r], sc.row_sum[r], acc, sc.folded_max[r], sc.folded_sum[r],
                     sc.folded_acc.data() + r * d, d);
      }
      std::fill(acc, acc + d, 0.0f);
      sc.row_max[r] = -std::numeric_limits<float>::infinity();
      sc.row_sum[r] = 0.0f;
    }
  };
  sc.scores.resize(static_cast<size_t>(kHeadsPerPass * chunk_keys));
  if (!direct) {
    sc.k.resize(static_cast<size_t>(chunk_keys * d));
    sc.v.resize(static_cast<size_t>(chunk_keys * d));
  }
  const int32_t* table =
      batch.block_tables + static_cast<int64_t>(it.seq) * batch.max_blocks_per_seq;
  std::vector<KeyRun>& runs = sc.runs;
  ChunkPrefetch fetch(table, bs, g.num_kv_heads, it.kv_head, d, esize);

  const int64_t c_begin =
      std::max(first_key(it.q_begin) / chunk_keys, it.seg_begin * kSegmentChunks);
  const int64_t c_end = std::min(ceil_div(n_keys, chunk_keys), std::min(it.seg_end, n_keys) * kSegmentChunks);
  for (int64_t c = c_begin; c < c_end; ++c) {
    if (c > c_begin && c % kSegmentChunks == 0) close_segment(c / kSegmentChunks - 1);
    const int64_t t0 = c * chunk_keys;
    const int64_t nt = std::min(chunk_keys, n_keys - t0);
    if (c == c_begin) {
      // The item's first chunk has no chunk before it to fetch it: its K rows are asked for at
      // once, its V rows are left to the loads (16 x 2048 keys, kernels_bench: 980 -> 900-910
      // us; no change in the cache).
      fetch.set_keys(std::max(t0, first_key(it.q_begin)), t0 + nt);
      fetch.slice(k_cache, 0, 1);
    }
    fetch.set_keys(std::max(t0 + chunk_keys, first_key(it.q_begin)),
                   c + 1 < c_end ? std::min(n_keys, t0 + 2 * chunk_keys) : 0);
    runs.clear();
    // Blocks wholly before the item's first window are never read (their KV may be freed).
    const int64_t b_first = std::max(t0, first_key(it.q_begin)) / bs, b_end = ceil_div(t0 + nt, bs);
    for (int64_t b = b_first; b < b_end; ++b) {
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
      fetch.slice(k_cache, b - b_first, b_end - b_first);
      fetch.slice(v_cache, b - b_first, b_end - b_first);
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
    const bool widened = !direct && !in_place_16;
    if (widened) runs.assign(1, KeyRun{sc.k.data(), sc.v.data(), d, 0, nt});  // one run
    const int64_t num_runs = static_cast<int64_t>(runs.size());
    // Runs that read the cache in place (one per block) fetch ahead in the chunk's first pass.
    bool fetch_ahead = !widened;

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
        for (int64_t ri = 0; ri < num_runs; ++ri) {
          const KeyRun& run = runs[static_cast<size_t>(ri)];
          if (fetch_ahead) fetch.slice(k_cache, ri, num_runs);
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
        for (int64_t ri = 0; ri < num_runs; ++ri) {
          const KeyRun& run = runs[static_cast<size_t>(ri)];
          if (fetch_ahead) fetch.slice(v_cache, ri, num_runs);
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
        fetch_ahead = false;
      }
    }
  }

  if (c_end > c_begin) close_segment((c_end - 1) / kSegmentChunks);
  if (unit != nullptr) return;  // merge_split_units writes the outputs

  for (int64_t j = it.q_begin; j < it.q_end; ++j) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t r = (j - it.q_begin) * heads + h;
      const int64_t head = it.kv_head * g.group + it.h_begin + h;
      write_output(sc.folded_acc.data() + r * d, sc.folded_sum[r],
                   out + ((q_row0 + j) * g.num_heads + head) * d, d);
      if (float* w = recorded_row(batch, g, q_row0 + j, head)) {
        // Keys [first_key(j), position]: exp(score - max) / sum, the weights the output mixed.
        const float inv = sc.folded_sum[r] > 0.0f ? 1.0f / sc.folded_sum[r] : 0.0f;
        for (int64_t t = first_key(j); t <= first_pos + j; ++t) w[t] = std::exp(w[t] - sc.folded_max[r]) * inv;
      }
    }
  }
}

// Folds each split unit's partial results, in segment order, into its rows' outputs.
void merge_split_units(const Plan& plan, float* partials, const AttentionBatch& batch,
                       const Geometry& g, float* out, ThreadPool& pool) {
  const int64_t d = g.head_dim;
  pool.parallel_for(static_cast<int64_t>(plan.units.size()), [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(d));
    for (int64_t u = begin; u < end; ++u) {
      const SplitUnit& unit = plan.units[static_cast<size_t>(u)];
      for (int64_t j = unit.q_begin; j < unit.q_end; ++j) {
        for (int64_t h = 0; h < g.group; ++h) {
          float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
          for (int64_t s = unit.first_segment; s < unit.end_segment; ++s) {
            const float* p = partial_at(partials, unit, g.group, d, j, h, s);
            fold_segment(p[0], p[1], p + kPartialHeader, max, sum, acc.data(), d);
          }
          const int64_t head = unit.kv_head * g.group + h;
          write_output(acc.data(), sum, out + ((batch.query_start[unit.seq] + j) * g.num_heads + head) * d, d);
        }
      }
    }
  });
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

  g.chunk_keys = std::max<int64_t>(1, kChunkKeys / g.block_size) * g.block_size;
  g.segment_keys = kSegmentChunks * g.chunk_keys;

  const Plan plan = plan_items(batch, g, pool.num_threads());
  // Segments no item reaches (a row's keys end before its unit's last segment) stay empty.
  std::vector<float> partials(static_cast<size_t>(plan.partial_floats), 0.0f);
  const cpu::VecOps& ops = cpu::vec_ops();
  const float* qp = q.as<const float>();
  float* op = out.as<float>();
  pool.parallel_for(static_cast<int64_t>(plan.items.size()), [&](int64_t begin, int64_t end) {
    // Kept per thread across calls: a decode step runs attention once per layer, each call a few
    // microseconds of work per item, which fresh buffers (eight allocations) would add to.
    thread_local Scratch sc;
    for (int64_t i = begin; i < end; ++i) {
      const WorkItem& it = plan.items[static_cast<size_t>(i)];
      run_item(it, qp, k_cache, v_cache, scales, batch, g, scale, op,
               it.unit >= 0 ? &plan.units[static_cast<size_t>(it.unit)] : nullptr, partials.data(), ops, sc);
    }
  });
  if (!plan.units.empty()) merge_split_units(plan, partials.data(), batch, g, op, pool);
}

}  // namespace

}  // namespace weft::kernels
