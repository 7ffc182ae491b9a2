// Private to kernels/cpu: the per-ISA blocks of linear_block_quantized() (linear_block.cpp
// quantizes the activations and tiles; linear_block_rows.h is the loop every path shares).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels::cpu {

// Activations are padded to k_pad (a multiple of 64) with zero values and zero group scales, and
// the kernels' decoded weight rows likewise, so no path needs a tail.
inline int64_t block_linear_padded_k(int64_t k) { return (k + 63) / 64 * 64; }

// A decode step reads each weight once, rows j, j + 1, ... adjacent; the kernels fetch the bytes
// this far ahead of the ones they read (2-4 KiB measured best, SmolLM2 at batch 1 on a Xeon).
constexpr int64_t kWeightPrefetchBytes = 4096;

struct BlockLinearProblem {
  const int8_t* xq = nullptr;  // [m, k_pad] activation values
  const float* xd = nullptr;   // [m, groups] scale per 16 elements
  const float* xs = nullptr;   // [m, groups] scale * sum of the group's values
  const uint8_t* w = nullptr;  // n rows of w_row_bytes
  DType w_dtype = DType::kQ8_0;
  const float* w_row_scale = nullptr;  // kI8 weights (W8A8): one F32 scale per weight row
  size_t w_row_bytes = 0;
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [m, n]
  int64_t m = 0, n = 0, k = 0, k_pad = 0, groups = 0;  // groups = k_pad / 16
};

// dequantize_row (block_quant.h) for the block-quantized dtypes on AVX-512: bit-identical to the
// reference loop (block_dequantize_avx512.cpp).
void dequantize_row_avx512(DType dtype, const void* src, float* dst, int64_t n);
// out[i][c] = the dot product of x[i][0..n) with the four block-quantized rows rows[c]
// dequantized, for i < rows_x (1 to 4), bit-identical to VecOps::dot_rows(x[i], those rows
// dequantized by dequantize_row, 4, n, n, 1.0f, out[i]) on AVX-512: the same products, summed lane
// by lane in element order, then reduce4. The rows are decoded in registers once for every x row
// and never stored.
constexpr int kDot4MaxRows = 4;
void dot4_dequantized_avx512(DType dtype, const uint8_t* const* rows, const float* const* x,
                             int rows_x, int64_t n, float* const* out);

// quantize_activation_groups (block_quant.h) on AVX-512, bit-identical to the portable loop
// (quantize_activations_avx512.cpp).
void quantize_activation_groups_avx512(const float* x, int64_t k, int8_t* q, float* scale, float* sums);

void linear_block_q_portable(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                             int64_t j1);
void linear_block_q_avx2(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                         int64_t j1);
// AVX-512BW without VNNI (vpmaddubsw + vpmaddwd) and with it (vpdpbusd).
void linear_block_q_avx512(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1);
void linear_block_q_avx512vnni(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                               int64_t j1);
// linear_int8() under MatmulPrecision::kInt8 (W8A8): x quantized as for block-quantized weights,
// the kI8 rows multiplied with VNNI in registers. False (nothing done) where that path does not
// exist (no VNNI, k not a multiple of 64): the caller then takes W8A16.
bool linear_i8_int8_activations(const TensorView& x, const TensorView& w, const float* w_scale,
                                const TensorView* bias, const TensorView& y, ThreadPool& pool);
// W8A8 on AVX512-VNNI: kI8 rows with their w_row_scale (k a multiple of 64), the VNNI block tiles.
void linear_i8_rows_avx512vnni(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                               int64_t j1);

}  // namespace weft::kernels::cpu
