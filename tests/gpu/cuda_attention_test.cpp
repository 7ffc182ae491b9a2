// The CUDA paged-attention kernels against their CPU twin, weft::kernels::paged_attention, run on
// host copies of the same (16-bit rounded) queries and caches. Covers decode batches of 1..33
// sequences with contexts 1..3000 (edges 255/256/257, 511/512/513 straddle the split-K
// partitions, 16..256 tokens by batch size, and the 16/32-token blocks), block sizes 16 and 32,
// GQA ratios 1/2/4/8, 7 and 3 (blocks of 7 and 3 heads) and MQA, head dims 64/80/128 (plus 96
// and 256, and the small 8/16/32 of the golden and default models, which take the kernels'
// fewer-lanes-per-row paths), F16 and BF16, float and I8 caches,
// and ragged batches mixing prefill chunks, whole prompts, decode tokens and idle sequences, plus
// the tensor-core prefill kernel's tile edges (PrefillTileEdgesMatchCpu). Every prefill case runs
// through both prefill kernels (tensor cores where they apply, and SIMT). Blocks are scattered
// over a shuffled pool; every cache slot no query may see (free blocks, the tail of
// each sequence's last block) holds NaN (or a NaN scale), unused block-table entries are -1 and
// the output starts as NaN, so a kernel reading past a context or skipping a row fails.
//
// Tolerance: |gpu - cpu| <= u * max(1, |cpu|) + 1e-4 with u = 2^-8 for BF16, 2^-10 for F16.
// Both sides compute in F32 from identical inputs; the GPU rounds its result once to the 16-bit
// dtype (relative error <= 2^-8 for BF16's 8 significant bits, <= 2^-11 for F16, given 2x slack
// here), and F32 reassociation plus exp2 vs exp differ by ~1e-6 relative on outputs whose size is
// bounded by max |v| (1 for float caches, ~2.5 for I8); 1e-4 absolute covers that.
// The tensor-core prefill kernel (F16 / BF16 caches at head_dim 64 and 128, the default) also
// rounds P = exp2(s - m) in [0, 1] to the 16-bit dtype for the P V product (l sums the unrounded
// p). Each p_i then errs by at most half an ulp, e_i <= min(2^-9, 2^-8 p_i) for BF16 (<= 2^-12
// for F16), the row's largest p is exactly 1, so the output errs by sum_{i != max} e_i |v_i| / l
// before its own rounding (<= 2^-9 for BF16, 2^-12 for F16, as |O| < 1). F16: at most
// 2^-11 + 2^-12 < 2^-10, within tolerance. BF16, with n visible keys: n = 2 gives at most
// 2^-9 / 1.5 + 2^-9, n = 3 at most 2 * 2^-9 / 2 + 2^-9 = 2^-8, both within; from n = 4 on the
// worst case exceeds 2^-8 (it tends to 2^-8 + 2^-9), but only if every e_i is maximal and has
// the sign of its v_i. A float64 simulation of these distributions (q in [-2, 2], k and v in
// [-1, 1], head_dim 128, 2.5 million outputs for each n in 2..23, where the error peaks) stayed
// at or below 0.85 of the tolerance (0.49 with P unrounded), so the tolerance is kept as is.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "cuda_attn_gemm_test_util.h"
#include "weft/kernels/attention.h"
#include "weft/kernels/cuda/paged_attention.h"

namespace weft::kernels::cuda {
namespace {

using gpu_test::from_bits;
using gpu_test::nan_bits;
using gpu_test::random_rounded;
using gpu_test::Rounded;
using gpu_test::to_device;
using gpu_test::to_host;

struct SeqSpec {
  int32_t context_len;
  int32_t query_len;
};

struct Case {
  std::vector<SeqSpec> seqs;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size = 0;
  DType dtype = DType::kBF16;
  bool int8 = false;
  uint32_t seed = 0;
};

std::string describe(const Case& c) {
  std::string s = absl::StrCat(dtype_name(c.dtype), c.int8 ? " i8-cache" : "", " heads ",
                               c.num_heads, "/", c.num_kv_heads, " d ", c.head_dim, " bs ",
                               c.block_size, " seed ", c.seed, " seqs (ctx:ql)");
  for (const SeqSpec& q : c.seqs) absl::StrAppend(&s, " ", q.context_len, ":", q.query_len);
  return s;
}

ThreadPool& cpu_pool() {
  static ThreadPool pool(0);
  return pool;
}

// One ragged batch on the host: paged caches, metadata, queries and the CPU twin's output.
struct Problem {
  int tokens = 0;
  int max_blocks = 0;
  int pool_blocks = 0;
  int max_query_len = 0;
  int max_context_len = 0;
  std::vector<int32_t> query_start, context_len, tables;
  std::vector<uint16_t> k16, v16;
  std::vector<int8_t> k8, v8;
  std::vector<float> k_scale, v_scale;
  Rounded q;
  std::vector<float> expected;
};

float softmax_scale(const Case& c) { return 1.0f / std::sqrt(static_cast<float>(c.head_dim)); }

Problem make_problem(const Case& c) {
  Problem p;
  const int num_seqs = static_cast<int>(c.seqs.size());
  const int bs = c.block_size;
  int total_blocks = 0;
  p.query_start.assign(num_seqs + 1, 0);
  for (int s = 0; s < num_seqs; ++s) {
    const int nb = (c.seqs[s].context_len + bs - 1) / bs;
    p.max_blocks = std::max(p.max_blocks, nb);
    total_blocks += nb;
    p.query_start[s + 1] = p.query_start[s] + c.seqs[s].query_len;
    p.context_len.push_back(c.seqs[s].context_len);
    p.max_query_len = std::max(p.max_query_len, c.seqs[s].query_len);
    p.max_context_len = std::max(p.max_context_len, c.seqs[s].context_len);
  }
  p.tokens = p.query_start[num_seqs];
  p.max_blocks += 2;  // trailing -1 entries that must never be read
  p.pool_blocks = total_blocks + 3;

  std::mt19937 rng(c.seed);
  std::vector<int32_t> free_ids(p.pool_blocks);
  std::iota(free_ids.begin(), free_ids.end(), 0);
  std::shuffle(free_ids.begin(), free_ids.end(), rng);
  p.tables.assign(static_cast<size_t>(num_seqs) * p.max_blocks, -1);
  const int64_t slots = static_cast<int64_t>(p.pool_blocks) * bs;
  std::vector<bool> visible(static_cast<size_t>(slots), false);
  int next = 0;
  for (int s = 0; s < num_seqs; ++s) {
    const int ctx = c.seqs[s].context_len;
    for (int b = 0; b < (ctx + bs - 1) / bs; ++b) {
      p.tables[static_cast<size_t>(s) * p.max_blocks + b] = free_ids[next++];
    }
    for (int t = 0; t < ctx; ++t) {
      const int64_t slot =
          static_cast<int64_t>(p.tables[static_cast<size_t>(s) * p.max_blocks + t / bs]) * bs +
          t % bs;
      visible[static_cast<size_t>(slot)] = true;
    }
  }

  const int64_t row = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
  const size_t cache_elems = static_cast<size_t>(slots * row);
  if (c.int8) {
    std::uniform_real_distribution<float> sdist(0.002f, 0.02f);
    p.k8.resize(cache_elems);
    p.v8.resize(cache_elems);
    for (size_t i = 0; i < cache_elems; ++i) {
      const uint32_t r = rng();  // two bytes in [-127, 127], as the quantizer produces
      p.k8[i] = static_cast<int8_t>(static_cast<int>(r & 0xffff) % 255 - 127);
      p.v8[i] = static_cast<int8_t>(static_cast<int>(r >> 16) % 255 - 127);
    }
    p.k_scale.resize(static_cast<size_t>(slots * c.num_kv_heads));
    p.v_scale.resize(p.k_scale.size());
    for (size_t i = 0; i < p.k_scale.size(); ++i) {
      const bool vis = visible[i / c.num_kv_heads];
      p.k_scale[i] = vis ? sdist(rng) : NAN;
      p.v_scale[i] = vis ? sdist(rng) : NAN;
    }
  } else {
    Rounded k = random_rounded(cache_elems, c.dtype, rng, -1.0f, 1.0f);
    Rounded v = random_rounded(cache_elems, c.dtype, rng, -1.0f, 1.0f);
    for (size_t slot = 0; slot < visible.size(); ++slot) {
      if (visible[slot]) continue;
      const size_t begin = slot * static_cast<size_t>(row);
      std::fill_n(k.bits.begin() + begin, row, nan_bits(c.dtype));
      std::fill_n(v.bits.begin() + begin, row, nan_bits(c.dtype));
    }
    p.k16 = std::move(k.bits);
    p.v16 = std::move(v.bits);
  }
  p.q = random_rounded(static_cast<size_t>(p.tokens) * c.num_heads * c.head_dim, c.dtype, rng,
                       -2.0f, 2.0f);

  // The CPU twin on host copies.
  const Shape cache_shape{p.pool_blocks, bs, c.num_kv_heads, c.head_dim};
  Tensor q =
      Tensor::wrap(p.q.values.data(), DType::kF32, {p.tokens, c.num_heads, c.head_dim}, nullptr);
  Tensor out = Tensor::zeros(DType::kF32, {p.tokens, c.num_heads, c.head_dim});
  AttentionBatch batch;
  batch.num_seqs = num_seqs;
  batch.query_start = p.query_start.data();
  batch.context_len = p.context_len.data();
  batch.block_tables = p.tables.data();
  batch.max_blocks_per_seq = p.max_blocks;
  batch.block_size = bs;
  if (c.int8) {
    Tensor k = Tensor::wrap(p.k8.data(), DType::kI8, cache_shape, nullptr);
    Tensor v = Tensor::wrap(p.v8.data(), DType::kI8, cache_shape, nullptr);
    const Shape scale_shape{p.pool_blocks, bs, c.num_kv_heads};
    Tensor ks = Tensor::wrap(p.k_scale.data(), DType::kF32, scale_shape, nullptr);
    Tensor vs = Tensor::wrap(p.v_scale.data(), DType::kF32, scale_shape, nullptr);
    paged_attention(q, k, v, ks, vs, batch, softmax_scale(c), out, cpu_pool());
  } else {
    Tensor k = Tensor::wrap(p.k16.data(), c.dtype, cache_shape, nullptr);
    Tensor v = Tensor::wrap(p.v16.data(), c.dtype, cache_shape, nullptr);
    paged_attention(q, k, v, batch, softmax_scale(c), out, cpu_pool());
  }
  p.expected.assign(out.data_as<float>(), out.data_as<float>() + out.numel());
  return p;
}

// kPrefill: paged_attention_prefill with its default (tensor-core) kernel where that applies;
// expect_matches_cpu checks the SIMT kernel (kPrefillSimt) on the same problem too.
enum class Kernel { kDecode, kPrefill, kPrefillSimt };

std::vector<float> run_gpu(const Case& c, const Problem& p, Kernel kernel) {
  DeviceBuffer q = to_device(p.q.bits);
  DeviceBuffer k = c.int8 ? to_device(p.k8) : to_device(p.k16);
  DeviceBuffer v = c.int8 ? to_device(p.v8) : to_device(p.v16);
  DeviceBuffer ks = to_device(p.k_scale);
  DeviceBuffer vs = to_device(p.v_scale);
  DeviceBuffer qs = to_device(p.query_start);
  DeviceBuffer ctx = to_device(p.context_len);
  DeviceBuffer tables = to_device(p.tables);
  const size_t out_elems = static_cast<size_t>(p.tokens) * c.num_heads * c.head_dim;
  DeviceBuffer out = to_device(std::vector<uint16_t>(out_elems, nan_bits(c.dtype)));

  CudaKvCache cache;
  cache.k = k.data();
  cache.v = v.data();
  cache.k_scale = c.int8 ? ks.as<float>() : nullptr;
  cache.v_scale = c.int8 ? vs.as<float>() : nullptr;
  cache.dtype = c.int8 ? DType::kI8 : c.dtype;
  cache.block_size = c.block_size;
  cache.num_kv_heads = c.num_kv_heads;
  cache.head_dim = c.head_dim;
  CudaAttentionBatch batch;
  batch.num_seqs = static_cast<int>(c.seqs.size());
  batch.query_start = qs.as<int32_t>();
  batch.context_len = ctx.as<int32_t>();
  batch.block_tables = tables.as<int32_t>();
  batch.max_blocks_per_seq = p.max_blocks;
  batch.max_query_len = p.max_query_len;
  batch.max_context_len = p.max_context_len;

  absl::Status st;
  if (kernel == Kernel::kDecode) {
    const size_t ws_bytes = paged_attention_decode_workspace_bytes(
        batch.num_seqs, c.num_heads, c.head_dim, batch.max_context_len);
    auto ws = DeviceBuffer::allocate(std::max<size_t>(ws_bytes, 16));
    EXPECT_TRUE(ws.ok()) << ws.status();
    if (!ws.ok()) return {};
    st = paged_attention_decode(q.data(), c.dtype, c.num_heads, cache, batch, softmax_scale(c),
                                out.data(), ws->data(), ws->size(), nullptr);
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_TRUE(cuda_check(cudaDeviceSynchronize(), "paged_attention_decode").ok());
  } else {
    const PrefillAttentionKernel which = kernel == Kernel::kPrefillSimt
                                             ? PrefillAttentionKernel::kSimt
                                             : PrefillAttentionKernel::kTensorCores;
    st = paged_attention_prefill(q.data(), c.dtype, c.num_heads, cache, batch, softmax_scale(c),
                                 out.data(), nullptr, which);
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_TRUE(cuda_check(cudaDeviceSynchronize(), "paged_attention_prefill").ok());
  }
  const std::vector<uint16_t> bits = to_host<uint16_t>(out, out_elems);
  std::vector<float> result(out_elems);
  for (size_t i = 0; i < out_elems; ++i) result[i] = from_bits(bits[i], c.dtype);
  return result;
}

void expect_gpu_matches(const Case& c, const Problem& p, Kernel kernel) {
  SCOPED_TRACE(kernel == Kernel::kDecode    ? "decode kernel"
               : kernel == Kernel::kPrefill ? "prefill kernel (tensor cores where they apply)"
                                            : "prefill SIMT kernel");
  const std::vector<float> got = run_gpu(c, p, kernel);
  ASSERT_EQ(got.size(), p.expected.size());
  const float u = c.dtype == DType::kBF16 ? 1.0f / 256.0f : 1.0f / 1024.0f;  // see file comment
  size_t bad = 0, worst = 0;
  float worst_err = 0.0f;
  for (size_t i = 0; i < got.size(); ++i) {
    const float err = std::fabs(got[i] - p.expected[i]);
    const float tol = u * std::max(1.0f, std::fabs(p.expected[i])) + 1e-4f;
    if (!(err <= tol)) {  // NaN fails
      if (bad == 0 || !(err <= worst_err)) {
        worst = i;
        worst_err = err;
      }
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0u) << bad << " of " << got.size() << " outputs off; worst at element " << worst
                     << " (token " << worst / (c.num_heads * c.head_dim) << ", head "
                     << worst / c.head_dim % c.num_heads << "): gpu " << got[worst] << " cpu "
                     << p.expected[worst];
}

void expect_matches_cpu(const Case& c, Kernel kernel) {
  SCOPED_TRACE(absl::StrCat(kernel == Kernel::kDecode ? "decode " : "prefill ", describe(c)));
  const Problem p = make_problem(c);
  expect_gpu_matches(c, p, kernel);
  if (kernel == Kernel::kPrefill) expect_gpu_matches(c, p, Kernel::kPrefillSimt);
}

int32_t random_context(std::mt19937& rng) {
  static constexpr int32_t kEdges[] = {1,   2,   15,  16,  17,  31,  32,   33,   255,  256,  257,
                                       511, 512, 513, 767, 768, 769, 1000, 2047, 2048, 2999, 3000};
  constexpr size_t kNumEdges = sizeof(kEdges) / sizeof(kEdges[0]);
  if (rng() % 3 == 0) return kEdges[rng() % kNumEdges];
  return 1 + static_cast<int32_t>(rng() % 3000);
}

using HeadLayout = std::pair<int, int>;  // (num_heads, num_kv_heads)

// A case's shape and dtype, with no sequences yet.
Case shaped_case(int head_dim, const HeadLayout& heads, DType dtype, int block_size, bool int8, uint32_t seed) {
  Case c;
  c.num_heads = heads.first;
  c.num_kv_heads = heads.second;
  c.head_dim = head_dim;
  c.block_size = block_size;
  c.dtype = dtype;
  c.int8 = int8;
  c.seed = seed;
  return c;
}

// Decode batches: one query row per sequence.
std::vector<Case> decode_cases(const std::vector<int>& dims, const std::vector<HeadLayout>& heads,
                               bool int8, uint32_t seed0) {
  static constexpr int kBatches[] = {1, 33, 5, 17, 2, 9, 24, 3};
  std::vector<Case> cases;
  uint32_t idx = 0;
  for (int d : dims) {
    for (const HeadLayout& h : heads) {
      for (DType dt : {DType::kF16, DType::kBF16}) {
        Case c = shaped_case(d, h, dt, idx % 2 == 0 ? 16 : 32, int8, seed0 + idx);
        std::mt19937 rng(c.seed);
        const int n = kBatches[idx % (sizeof(kBatches) / sizeof(kBatches[0]))];
        for (int s = 0; s < n; ++s) c.seqs.push_back({random_context(rng), 1});
        cases.push_back(std::move(c));
        ++idx;
      }
    }
  }
  return cases;
}

// Ragged batches of prefill chunks (query_len < context_len), whole prompts, decode tokens and
// the odd sequence with no query rows this step.
std::vector<Case> mixed_cases(const std::vector<int>& dims, const std::vector<HeadLayout>& heads,
                              bool int8, uint32_t seed0) {
  std::vector<Case> cases;
  uint32_t idx = 0;
  for (int d : dims) {
    for (const HeadLayout& h : heads) {
      for (DType dt : {DType::kF16, DType::kBF16}) {
        Case c = shaped_case(d, h, dt, idx % 2 == 0 ? 32 : 16, int8, seed0 + idx);
        std::mt19937 rng(c.seed);
        const int n = 1 + static_cast<int>(rng() % 8);
        for (int s = 0; s < n; ++s) {
          switch (rng() % 10) {
            case 0: {  // idle this step
              c.seqs.push_back({random_context(rng), 0});
              break;
            }
            case 1:
            case 2:
            case 3: {  // decode token
              c.seqs.push_back({random_context(rng), 1});
              break;
            }
            case 4:
            case 5:
            case 6: {  // whole prompt
              const int32_t len = 1 + static_cast<int32_t>(rng() % 300);
              c.seqs.push_back({len, len});
              break;
            }
            default: {  // a later chunk of a long prompt
              const int32_t ctx = 2 + static_cast<int32_t>(rng() % 1200);
              const int32_t ql = 1 + static_cast<int32_t>(rng() % std::min<int32_t>(ctx, 128));
              c.seqs.push_back({ctx, ql});
              break;
            }
          }
        }
        if (std::all_of(c.seqs.begin(), c.seqs.end(),
                        [](const SeqSpec& q) { return q.query_len == 0; })) {
          c.seqs.push_back({random_context(rng), 1});
        }
        cases.push_back(std::move(c));
        ++idx;
      }
    }
  }
  return cases;
}

class CudaAttentionTest : public gpu_test::GpuTest {};

const std::vector<HeadLayout> kDecodeHeads = {{8, 8}, {8, 4}, {16, 4}, {16, 2}, {8, 1}, {32, 4},
                                              {14, 2}, {6, 2}};
const std::vector<HeadLayout> kPrefillHeads = {{8, 8}, {8, 4}, {8, 2}, {8, 1}, {4, 1}};

TEST_F(CudaAttentionTest, DecodeMatchesCpu) {
  for (const Case& c : decode_cases({64, 80, 128}, kDecodeHeads, false, 100)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
}

// The prefill kernel must also handle batches of decode tokens (query_len 1 everywhere).
TEST_F(CudaAttentionTest, PrefillKernelOnDecodeBatchesMatchesCpu) {
  for (const Case& c : decode_cases({64, 80, 128}, kDecodeHeads, false, 300)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

TEST_F(CudaAttentionTest, DecodeInt8CacheMatchesCpu) {
  for (const Case& c :
       decode_cases({64, 80, 128}, {{8, 2}, {8, 1}, {16, 16}, {32, 4}}, true, 500)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
}

TEST_F(CudaAttentionTest, MixedPrefillDecodeMatchesCpu) {
  for (const Case& c : mixed_cases({64, 80, 128}, kPrefillHeads, false, 700)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

TEST_F(CudaAttentionTest, MixedPrefillDecodeInt8CacheMatchesCpu) {
  for (const Case& c : mixed_cases({64, 128}, {{8, 2}, {4, 1}}, true, 900)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

// head_dim 8, 16 and 32: decode packs 1, 2 or 4 lanes per cached row (16, 8 or 4 tokens per
// warp at once), prefill splits each warp's P V step into 4, 2 or 1 row groups. {16, 1} has a GQA
// group larger than the 8 heads a decode block holds; {8, 4} is the default model's layout.
TEST_F(CudaAttentionTest, SmallHeadDimsMatchCpu) {
  const std::vector<int> dims = {8, 16, 32};
  const std::vector<HeadLayout> heads = {{8, 8}, {8, 4}, {8, 2}, {4, 1}, {16, 1}, {32, 4}};
  for (const Case& c : decode_cases(dims, heads, false, 1700)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
  for (const Case& c : decode_cases(dims, heads, false, 1900)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
  for (const Case& c : decode_cases(dims, {{8, 2}, {16, 1}, {8, 8}}, true, 2100)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
  for (const Case& c : mixed_cases(dims, kPrefillHeads, false, 2300)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
  for (const Case& c : mixed_cases(dims, {{8, 2}, {4, 1}, {16, 1}}, true, 2500)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

// A long prompt at head_dim 8 and 32: many key tiles through the small-head-dim P V layout.
TEST_F(CudaAttentionTest, LongPromptSmallHeadDimsMatchCpu) {
  for (int d : {8, 32}) {
    for (DType dt : {DType::kF16, DType::kBF16}) {
      Case c;
      c.num_heads = 8;
      c.num_kv_heads = 4;
      c.head_dim = d;
      c.block_size = 16;
      c.dtype = dt;
      c.seed = 2700 + d;
      c.seqs = {{1500, 1500}, {2100, 700}};
      expect_matches_cpu(c, Kernel::kPrefill);
    }
  }
}

TEST_F(CudaAttentionTest, HeadDims96And256MatchCpu) {
  for (const Case& c : decode_cases({96, 256}, {{8, 2}, {4, 1}}, false, 1100)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
  for (const Case& c : decode_cases({256}, {{8, 2}}, true, 1200)) {
    expect_matches_cpu(c, Kernel::kDecode);
  }
  for (const Case& c : mixed_cases({96, 256}, {{8, 2}, {4, 1}}, false, 1300)) {
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

// A long single sequence: every query of a 3000-token prompt (many 32-row tiles, 47+ key tiles).
TEST_F(CudaAttentionTest, LongPromptMatchesCpu) {
  for (DType dt : {DType::kF16, DType::kBF16}) {
    Case c;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 64;
    c.block_size = 16;
    c.dtype = dt;
    c.seed = 1500;
    c.seqs = {{3000, 3000}};
    expect_matches_cpu(c, Kernel::kPrefill);
  }
}

// The tile edges of the tensor-core prefill kernel (F16 / BF16 caches, head_dim 64 and 128;
// 64-row tiles of 16-row warps, 64-key tiles of 16-key sub-tiles), and the SIMT kernel on the
// same cases. Prompts of 1, 63, 64, 65, 200 and 1031 tokens (short of, exactly and one past a
// 64-key tile, and of a 64-row tile at group 1; many tiles with a partial last one); later
// chunks starting mid-block (positions 831, 63, 1 and 648 with 16- and 32-token blocks) next to
// decode tokens and an idle sequence; GQA groups 1, 2, 4, 8 and also 3 and 6, whose query
// tokens straddle the 16-row warp strips and 64-row tiles.
TEST_F(CudaAttentionTest, PrefillTileEdgesMatchCpu) {
  const std::vector<HeadLayout> heads = {{8, 8}, {8, 4}, {8, 2}, {8, 1}, {6, 2}, {12, 2}};
  const std::vector<SeqSpec> prompts = {{1, 1},   {63, 63},   {64, 64},
                                        {65, 65}, {200, 200}, {1031, 1031}};
  const std::vector<SeqSpec> chunks = {{1031, 200}, {500, 1}, {100, 37}, {40, 0},
                                       {65, 64},    {1, 1},   {777, 129}};
  uint32_t seed = 3100;
  for (int d : {64, 128}) {
    for (size_t hi = 0; hi < heads.size(); ++hi) {
      for (int di = 0; di < 2; ++di) {
        for (int si = 0; si < 2; ++si) {
          // Block sizes 16 and 32 alternate over layouts, dtypes and batches.
          const int bs = (hi + di + si) % 2 == 0 ? 16 : 32;
          Case c = shaped_case(d, heads[hi], di == 0 ? DType::kF16 : DType::kBF16, bs, false,
                               seed++);
          c.seqs = si == 0 ? prompts : chunks;
          expect_matches_cpu(c, Kernel::kPrefill);
        }
      }
    }
  }
}

TEST_F(CudaAttentionTest, RejectsBadArguments) {
  alignas(16) int32_t dummy_storage[16] = {};
  void* dummy = dummy_storage;  // never dereferenced: validation fails first
  CudaKvCache cache;
  cache.k = cache.v = dummy;
  cache.dtype = DType::kBF16;
  cache.block_size = 16;
  cache.num_kv_heads = 2;
  cache.head_dim = 128;
  CudaAttentionBatch batch;
  batch.num_seqs = 1;
  batch.query_start = batch.context_len = batch.block_tables = dummy_storage;
  batch.max_blocks_per_seq = 1;
  batch.max_query_len = 1;
  batch.max_context_len = 1000;

  CudaKvCache bad_dim = cache;
  bad_dim.head_dim = 72;
  absl::Status st =
      paged_attention_prefill(dummy, DType::kBF16, 8, bad_dim, batch, 1.0f, dummy, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("head_dim 72"), std::string::npos) << st;
  for (int d : {4, 24, 48}) {  // multiples of 4 or 8 the kernels do not instantiate
    bad_dim.head_dim = d;
    st = paged_attention_decode(dummy, DType::kBF16, 8, bad_dim, batch, 1.0f, dummy, dummy, 1 << 20,
                                nullptr);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_NE(st.message().find(absl::StrCat("head_dim ", d)), std::string::npos) << st;
  }

  st = paged_attention_prefill(dummy, DType::kBF16, 7, cache, batch, 1.0f, dummy, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;

  st = paged_attention_prefill(dummy, DType::kF32, 8, cache, batch, 1.0f, dummy, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;

  CudaKvCache i8 = cache;
  i8.dtype = DType::kI8;  // without scales
  st = paged_attention_prefill(dummy, DType::kBF16, 8, i8, batch, 1.0f, dummy, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;

  // 1000 tokens need 4 partitions, hence a workspace.
  ASSERT_GT(paged_attention_decode_workspace_bytes(1, 8, 128, 1000), 0u);
  st = paged_attention_decode(dummy, DType::kBF16, 8, cache, batch, 1.0f, dummy, nullptr, 0,
                              nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("workspace"), std::string::npos) << st;
}

}  // namespace
}  // namespace weft::kernels::cuda
