#include "weft/kernels/linear.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>
#include <new>
#include <functional>
#include <memory>
#include <vector>

#include "core/cpu_features.h"

#include "cpu/isa.h"
#include "cpu/linear_block.h"
#include "cpu/linear_impl.h"

namespace weft::kernels {
namespace {

// Weight rows one task reads: a block that fits comfortably in L2 next to the x rows, so every
// row tile of x re-reads it from cache rather than memory.
constexpr int64_t kWeightBlockBytes = 256 * 1024;
// Rows of x per task when m is large: tasks then also split over m.
constexpr int64_t kRowBlock = 64;
// Below this many multiply-adds the thread hand-off costs more than it saves.
constexpr int64_t kMinParallelMacs = int64_t{1} << 17;

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::kF32};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// Uninitialised scratch for a call's converted activations, 64-byte aligned: the micro-kernels
// load every x row in whole vectors, and a 512-bit load that straddles two cache lines costs two
// loads (measured on a Xeon: the BF16-pairs GEMM at m = 128 ran at half speed from a 16-byte
// aligned buffer). Rows must keep the alignment (their byte length a multiple of 64) where the
// kernels rely on it.
template <typename T>
std::unique_ptr<T[], FreeDeleter> aligned_scratch(int64_t count) {
  constexpr size_t kAlign = 64;
  const size_t bytes = (static_cast<size_t>(count) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, std::max(bytes, kAlign));
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

}  // namespace

namespace cpu {

void run_linear_tiles(int64_t m, int64_t n, int64_t k, int64_t weight_row_bytes, ThreadPool& pool,
                      const LinearBlockFn& block) {
  // Column blocks: small enough to stay in L2, and at least a few per thread so the pool can
  // balance; multiples of 8 keep the micro-kernels on their widest tiles.
  const int64_t threads = pool.num_threads();
  const int64_t cache_cols = kWeightBlockBytes / std::max<int64_t>(1, weight_row_bytes);
  const int64_t balance_cols = (n + threads * 4 - 1) / (threads * 4);
  int64_t nb = std::min(cache_cols, balance_cols);
  nb = std::max<int64_t>(8, (nb + 7) / 8 * 8);
  const int64_t mb = m <= kRowBlock ? m : kRowBlock;
  const int64_t n_blocks = (n + nb - 1) / nb;
  const int64_t m_blocks = (m + mb - 1) / mb;
  const int64_t tasks = n_blocks * m_blocks;
  const int64_t macs_per_task = mb * nb * k;
  const int64_t min_chunk =
      std::max<int64_t>(1, kMinParallelMacs / std::max<int64_t>(1, macs_per_task));

  // Consecutive task ids share a weight block (m varies fastest), so a chunk of tasks that one
  // thread takes reuses that block from cache.
  pool.parallel_for(
      tasks,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t jb = t / m_blocks, ib = t % m_blocks;
          const int64_t j0 = jb * nb, i0 = ib * mb;
          block(i0, std::min(m, i0 + mb), j0, std::min(n, j0 + nb));
        }
      },
      min_chunk);
}

const float* f32_bias(const TensorView* bias, int64_t n, std::vector<float>& storage) {
  if (bias == nullptr || bias->data == nullptr) return nullptr;
  if (bias->dtype == DType::kF32) return bias->as<const float>();
  storage.resize(static_cast<size_t>(n));
  vec_ops().widen(bias->dtype, bias->data, storage.data(), n);
  return storage.data();
}

void deinterleave_bf16_pairs(const float* x, int64_t k, int64_t chunk, float* out) {
  const int64_t half = chunk / 2;
  for (int64_t c = 0; c + chunk <= k; c += chunk) {
    for (int64_t t = 0; t < half; ++t) {
      out[c + t] = x[c + 2 * t];
      out[c + half + t] = x[c + 2 * t + 1];
    }
  }
}

}  // namespace cpu

void set_matmul_precision(MatmulPrecision precision) { g_precision.store(precision); }
MatmulPrecision matmul_precision() { return g_precision.load(); }

MatmulPrecision auto_matmul_precision() {
#if defined(__x86_64__)
  const CpuFeatures& f = cpu_features();
  if (cpu::current_isa() == cpu::Isa::kAvx512 && f.avx512bf16 && (f.amd || f.amx_bf16)) {
    return MatmulPrecision::kBf16;
  }
#endif
  return MatmulPrecision::kF32;
}

bool linear_uses_bf16_activations(DType w_dtype) {
#if defined(__x86_64__)
  return w_dtype == DType::kBF16 && g_precision.load() == MatmulPrecision::kBf16 &&
         cpu::current_isa() == cpu::Isa::kAvx512 && cpu_features().avx512bf16;
#else
  (void)w_dtype;
  return false;
#endif
}

namespace {

void linear_any(const TensorView& x, const TensorView& w, const float* w_scale,
                const TensorView* bias, const TensorView& y, ThreadPool& pool) {
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  const int64_t m = n > 0 ? y.numel() / n : 0;
  assert(x.dtype == DType::kF32 && y.dtype == DType::kF32);
  assert(w.shape.rank() == 2 && x.numel() == m * k && y.numel() == m * n);
  assert(is_float_dtype(w.dtype) || (w.dtype == DType::kI8 && w_scale != nullptr));
  assert(bias == nullptr || bias->numel() == n);
  if (m == 0 || n == 0) return;

  cpu::LinearProblem p;
  p.x = x.as<const float>();
  p.w = w.data;
  p.w_dtype = w.dtype;
  p.w_scale = w_scale;
  p.y = y.as<float>();
  p.m = m;
  p.n = n;
  p.k = k;
  std::vector<float> bias_f32;
  p.bias = cpu::f32_bias(bias, n, bias_f32);
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) p.y[i * n + j] = p.bias ? p.bias[j] : 0.0f;
    }
    return;
  }

  if (linear_uses_bf16_activations(w.dtype)) {
    const auto x_bf16 = aligned_scratch<uint16_t>(m * k);
    pool.parallel_for(m, [&](int64_t r0, int64_t r1) {
      cpu::vec_ops().narrow(p.x + r0 * k, DType::kBF16, x_bf16.get() + r0 * k, (r1 - r0) * k);
    });
    if (cpu_features().amx_bf16 && k % cpu::kAmxBf16TileK == 0) {
      // AMX for every m (one summation order per output, whatever the batch).
      const int64_t m_tiles = (m + 15) / 16;
      const auto x_tiles = aligned_scratch<uint32_t>(m_tiles * (k / 2) * 16);
      pool.parallel_for(m_tiles, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) cpu::pack_amx_bf16_x(x_bf16.get(), m, k, t, x_tiles.get());
      });
      const cpu::AmxBf16LinearProblem ap{x_tiles.get(), static_cast<const uint16_t*>(w.data),
                                         p.bias, p.y, m, n, k};
      cpu::run_linear_tiles(m, n, k, 2 * k, pool, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
        cpu::linear_block_amx_bf16(ap, i0, i1, j0, j1);
      });
      return;
    }
    const cpu::Bf16LinearProblem bp{x_bf16.get(), static_cast<const uint16_t*>(w.data), p.bias,
                                    p.y, m, n, k};
    cpu::run_linear_tiles(m, n, k, 2 * k, pool, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      cpu::linear_block_avx512bf16(bp, i0, i1, j0, j1);
    });
    return;
  }

#if defined(__x86_64__)
  // BF16 weights on AVX2 and AVX-512: the even/odd-pairs kernels, whatever m. They sum every
  // output in one order, so a sequence's result does not depend on its batch; switching kernels
  // by m would break that (the engine relies on it: a recompute after preemption or a banned
  // phrase's rollback must reproduce the tokens and logprobs of decode).
  const bool avx512 = cpu::current_isa() == cpu::Isa::kAvx512;
  if (w.dtype == DType::kBF16 && (cpu::current_isa() == cpu::Isa::kAvx2 || avx512)) {
    const int64_t chunk = avx512 ? cpu::kBf16PairsChunkAvx512 : cpu::kBf16PairsChunkAvx2;
    const int64_t row_floats = cpu::bf16_pairs_row_floats(k, chunk);
    // Every element is written before it is read; rows of whole chunks keep the alignment.
    const auto x_pairs = aligned_scratch<float>(m * row_floats);
    pool.parallel_for(m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        cpu::deinterleave_bf16_pairs(p.x + r * k, k, chunk, x_pairs.get() + r * row_floats);
      }
    });
    const cpu::Bf16PairsLinearProblem bp{x_pairs.get(), p.x, static_cast<const uint16_t*>(w.data),
                                         p.bias, p.y, m, n, k};
    const auto block = avx512 ? cpu::linear_block_avx512_bf16_pairs : cpu::linear_block_avx2_bf16;
    cpu::run_linear_tiles(m, n, k, 2 * k, pool, [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      block(bp, i0, i1, j0, j1);
    });
    return;
  }
#endif

  const auto block =
      cpu::isa_choice(&cpu::linear_block_portable, WEFT_X86_PATH(cpu::linear_block_avx2),
                      WEFT_X86_PATH(cpu::linear_block_avx512));

  cpu::run_linear_tiles(m, n, k, k * static_cast<int64_t>(dtype_size(w.dtype)), pool,
            [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) { block(p, i0, i1, j0, j1); });
}

}  // namespace

void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y,
            ThreadPool& pool) {
  if (w.dtype == DType::kF8B64) return linear_f8(x, w, bias, y, pool);
  if (is_block_quantized(w.dtype)) return linear_block_quantized(x, w, bias, y, pool);
  linear_any(x, w, nullptr, bias, y, pool);
}

void linear_int8(const TensorView& x, const TensorView& w, const TensorView& w_scale,
                 const TensorView* bias, const TensorView& y, ThreadPool& pool) {
  assert(w.dtype == DType::kI8 && w_scale.dtype == DType::kF32 && w_scale.numel() == w.shape[0]);
  if (matmul_precision() == MatmulPrecision::kInt8 &&
      cpu::linear_i8_int8_activations(x, w, w_scale.as<const float>(), bias, y, pool)) {
    return;
  }
  linear_any(x, w, w_scale.as<const float>(), bias, y, pool);
}

}  // namespace weft::kernels
