#include "weft/kernels/linear.h"

#include <algorithm>
#include <cassert>
#include <vector>

#include "cpu/isa.h"
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

}  // namespace

void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y,
            ThreadPool& pool) {
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  const int64_t m = n > 0 ? y.numel() / n : 0;
  assert(x.dtype == DType::kF32 && y.dtype == DType::kF32);
  assert(w.shape.rank() == 2 && x.numel() == m * k && y.numel() == m * n);
  assert(is_float_dtype(w.dtype));
  assert(bias == nullptr || bias->numel() == n);
  if (m == 0 || n == 0) return;

  cpu::LinearProblem p;
  p.x = x.as<const float>();
  p.w = w.data;
  p.w_dtype = w.dtype;
  p.y = y.as<float>();
  p.m = m;
  p.n = n;
  p.k = k;
  std::vector<float> bias_f32;
  if (bias != nullptr && bias->data != nullptr) {
    if (bias->dtype == DType::kF32) {
      p.bias = bias->as<const float>();
    } else {
      bias_f32.resize(static_cast<size_t>(n));
      cpu::vec_ops().widen(bias->dtype, bias->data, bias_f32.data(), n);
      p.bias = bias_f32.data();
    }
  }
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) p.y[i * n + j] = p.bias ? p.bias[j] : 0.0f;
    }
    return;
  }

  void (*block)(const cpu::LinearProblem&, int64_t, int64_t, int64_t, int64_t) =
      cpu::linear_block_portable;
#if defined(__x86_64__)
  switch (cpu::current_isa()) {
    case cpu::Isa::kAvx512:
      block = cpu::linear_block_avx512;
      break;
    case cpu::Isa::kAvx2:
      block = cpu::linear_block_avx2;
      break;
    case cpu::Isa::kPortable:
      break;
  }
#endif

  // Column blocks: small enough to stay in L2, and at least a few per thread so the pool can
  // balance; multiples of 8 keep the micro-kernels on their widest tiles.
  const int64_t threads = pool.num_threads();
  const int64_t cache_cols = kWeightBlockBytes / (k * static_cast<int64_t>(dtype_size(w.dtype)));
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
          block(p, i0, std::min(m, i0 + mb), j0, std::min(n, j0 + nb));
        }
      },
      min_chunk);
}

}  // namespace weft::kernels
