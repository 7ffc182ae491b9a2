// linear_f8(): F8B64 weights (FP8 E4M3 with an F32 scale per 64 elements of a row) times F32
// activations, tiled over the pool with the widest path the CPU allows (linear_f8_*.cpp); the
// portable path and the reference conversions live here.
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu/isa.h"
#include "cpu/linear_f8.h"
#include "cpu/linear_f8_rows.h"
#include "cpu/linear_impl.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/linear.h"

namespace weft::kernels {

namespace {

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = fp8_e4m3_to_float(static_cast<uint8_t>(v));
    return t;
  }();
  return table;
}

}  // namespace

void dequantize_f8b64_row(const void* src, float* dst, int64_t n) {
  const std::array<float, 256>& lut = e4m3_table();
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t blk = 0; blk < n / cpu::kF8Block; ++blk, b += cpu::kF8BlockBytes) {
    float s;
    std::memcpy(&s, b, 4);
    for (int64_t t = 0; t < cpu::kF8Block; ++t) dst[blk * cpu::kF8Block + t] = lut[b[4 + t]] * s;
  }
}

namespace cpu {
namespace {

// Four partial sums per output (element t into t % 4), added pairwise at the end.
struct PortableKernel {
  static void decode(const uint8_t* row, int64_t k, float* w) { dequantize_f8b64_row(row, w, k); }

  template <int MR, int NR>
  static void dot(const F8LinearProblem& p, const float* w, int64_t i, float (*out)[NR]) {
    for (int r = 0; r < MR; ++r) {
      const float* x = p.x + (i + r) * p.k;
      for (int c = 0; c < NR; ++c) {
        const float* wc = w + c * p.k;
        float acc[4] = {};
        for (int64_t t = 0; t < p.k; t += 4) {
          for (int q = 0; q < 4; ++q) acc[q] += wc[t + q] * x[t + q];
        }
        out[r][c] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
      }
    }
  }
};

}  // namespace

void linear_f8_portable(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  f8_rows<PortableKernel>(p, i0, i1, j0, j1);
}

}  // namespace cpu

void linear_f8(const TensorView& x, const TensorView& w, const TensorView* bias,
               const TensorView& y, ThreadPool& pool) {
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  const int64_t m = n > 0 ? y.numel() / n : 0;
  assert(w.dtype == DType::kF8B64 && w.shape.rank() == 2 && k % cpu::kF8Block == 0);
  assert(x.dtype == DType::kF32 && y.dtype == DType::kF32 && x.numel() == m * k);
  assert(bias == nullptr || bias->numel() == n);
  if (m == 0 || n == 0) return;
  std::vector<float> bias_f32;
  const cpu::F8LinearProblem p{x.as<const float>(), static_cast<const uint8_t*>(w.data),
                               cpu::f32_bias(bias, n, bias_f32), y.as<float>(), m, n, k};
  const auto block =
      cpu::isa_choice(&cpu::linear_f8_portable, WEFT_X86_PATH(cpu::linear_f8_avx2),
                      WEFT_X86_PATH(cpu::linear_f8_avx512));
  cpu::run_linear_tiles(m, n, k, static_cast<int64_t>(dtype_nbytes(w.dtype, k)), pool,
                        [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) { block(p, i0, i1, j0, j1); });
}

}  // namespace weft::kernels
