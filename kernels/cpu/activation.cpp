#include "weft/kernels/activation.h"

#include <algorithm>
#include <cassert>
#include <functional>

#include "cpu/isa.h"

namespace weft::kernels {

namespace {

using GatedOp = void (*)(const float* g, const float* u, float* out, int64_t n);

// out[r, :] = op(gate_up[r, :i], gate_up[r, i:]) for every row: the shared body of the gated
// activations.
void gated_and_mul(const TensorView& gate_up, const TensorView& out, GatedOp op, ThreadPool& pool) {
  const int64_t inter = out.shape[out.shape.rank() - 1];
  assert(gate_up.dtype == DType::kF32 && out.dtype == DType::kF32 && inter > 0);
  assert(gate_up.numel() == 2 * out.numel());
  const int64_t rows = out.numel() / inter;
  const float* g = gate_up.as<const float>();
  float* o = out.as<float>();
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          op(g + r * 2 * inter, g + r * 2 * inter + inter, o + r * inter, inter);
        }
      },
      std::max<int64_t>(1, 8192 / inter));
}

}  // namespace

void silu_and_mul(const TensorView& gate_up, const TensorView& out, ThreadPool& pool) {
  gated_and_mul(gate_up, out, cpu::vec_ops().silu_mul, pool);
}

void gelu_tanh_and_mul(const TensorView& gate_up, const TensorView& out, ThreadPool& pool) {
  gated_and_mul(gate_up, out, cpu::vec_ops().gelu_tanh_mul, pool);
}

namespace {

// fn(i0, i1) over [0, n) in chunks of 4096 elements, at least `min_chunks` chunks per task: the
// shared loop of the elementwise in-place kernels.
void for_each_chunk(int64_t n, int64_t min_chunks, ThreadPool& pool,
                    const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kChunk = 4096;
  pool.parallel_for(
      (n + kChunk - 1) / kChunk,
      [&](int64_t begin, int64_t end) { fn(begin * kChunk, std::min(n, end * kChunk)); },
      min_chunks);
}

}  // namespace

void softcap_inplace(const TensorView& x, float cap, ThreadPool& pool) {
  assert(x.dtype == DType::kF32 && cap > 0.0f);
  const cpu::VecOps& ops = cpu::vec_ops();
  float* xp = x.as<float>();
  for_each_chunk(x.numel(), 2, pool,
                 [&](int64_t i0, int64_t i1) { ops.softcap(xp + i0, i1 - i0, cap); });
}

void scale_inplace(const TensorView& x, float s, ThreadPool& pool) {
  assert(x.dtype == DType::kF32);
  float* xp = x.as<float>();
  for_each_chunk(x.numel(), 8, pool, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) xp[i] *= s;
  });
}

void add_inplace(const TensorView& y, const TensorView& x, ThreadPool& pool) {
  assert(y.dtype == DType::kF32 && x.dtype == DType::kF32 && y.numel() == x.numel());
  float* yp = y.as<float>();
  const float* xp = x.as<const float>();
  for_each_chunk(y.numel(), 8, pool, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) yp[i] += xp[i];
  });
}

}  // namespace weft::kernels
