#include "weft/kernels/norm.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "cpu/isa.h"

namespace weft::kernels {
namespace {

// Rows per parallel chunk: enough elements that a chunk outweighs the hand-off.
int64_t min_rows(int64_t h) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, h)); }

std::vector<float> widened(const TensorView& weight, const cpu::VecOps& ops) {
  std::vector<float> w(static_cast<size_t>(weight.numel()));
  ops.widen(weight.dtype, weight.data, w.data(), weight.numel());
  return w;
}

// out[0..h) = x[0..h) * rsqrt(mean(x^2) + eps) * w; out may alias x.
inline void norm_row(const float* x, const float* w, int64_t h, float eps, float* out,
                     const cpu::VecOps& ops) {
  const float inv = 1.0f / std::sqrt(ops.sum_squares(x, h) / static_cast<float>(h) + eps);
  for (int64_t i = 0; i < h; ++i) out[i] = x[i] * inv * w[i];
}

}  // namespace

void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& out,
              ThreadPool& pool) {
  const int64_t h = weight.numel();
  assert(x.dtype == DType::kF32 && out.dtype == DType::kF32 && h > 0);
  assert(x.numel() % h == 0 && out.numel() == x.numel());
  const int64_t rows = x.numel() / h;
  const cpu::VecOps& ops = cpu::vec_ops();
  const std::vector<float> w = widened(weight, ops);
  const float* xp = x.as<const float>();
  float* op = out.as<float>();
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          norm_row(xp + r * h, w.data(), h, eps, op + r * h, ops);
      },
      min_rows(h));
}

void add_rms_norm(const TensorView& residual, const TensorView& x, const TensorView& weight,
                  float eps, const TensorView& out, ThreadPool& pool) {
  const int64_t h = weight.numel();
  assert(x.dtype == DType::kF32 && out.dtype == DType::kF32 && residual.dtype == DType::kF32);
  assert(h > 0 && x.numel() % h == 0 && out.numel() == x.numel() && residual.numel() == x.numel());
  const int64_t rows = x.numel() / h;
  const cpu::VecOps& ops = cpu::vec_ops();
  const std::vector<float> w = widened(weight, ops);
  const float* xp = x.as<const float>();
  float* rp = residual.as<float>();
  float* op = out.as<float>();
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          float* res = rp + r * h;
          const float* xr = xp + r * h;
          for (int64_t i = 0; i < h; ++i) res[i] += xr[i];
          norm_row(res, w.data(), h, eps, op + r * h, ops);
        }
      },
      min_rows(h));
}

void head_rms_norm(const TensorView& x, const TensorView& weight, float eps, ThreadPool& pool) {
  const int64_t d = weight.numel();
  assert(x.dtype == DType::kF32 && d > 0 && x.numel() % d == 0);
  const int64_t rows = x.numel() / d;
  const cpu::VecOps& ops = cpu::vec_ops();
  const std::vector<float> w = widened(weight, ops);
  float* xp = x.as<float>();
  pool.parallel_for(
      rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          norm_row(xp + r * d, w.data(), d, eps, xp + r * d, ops);
      },
      min_rows(d));
}

}  // namespace weft::kernels
