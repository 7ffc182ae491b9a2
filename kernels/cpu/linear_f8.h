// Private to kernels/cpu: the per-ISA blocks of linear_f8() (linear_f8.cpp dispatches and tiles;
// linear_f8_rows.h is the loop every path shares).
#pragma once

#include <cstdint>

namespace weft::kernels::cpu {

// F8B64 (core/dtype.h): 64 elements per block, an F32 scale then 64 e4m3 bytes.
constexpr int64_t kF8Block = 64;
constexpr int64_t kF8BlockBytes = 4 + kF8Block;

struct F8LinearProblem {
  const float* x = nullptr;     // [m, k]
  const uint8_t* w = nullptr;   // n rows of k / 64 blocks
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [m, n]
  int64_t m = 0, n = 0, k = 0;  // k a multiple of 64
};

// y[i0:i1, j0:j1]. Every path sums each output in one order whatever i0, i1 (batch invariance):
// the weights of a block are dequantized exactly (e4m3 * scale, rounded once to F32, as the F32
// dequantized weights are), then multiplied into per-row F32 accumulators.
void linear_f8_portable(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void linear_f8_avx2(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void linear_f8_avx512(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

}  // namespace weft::kernels::cpu
