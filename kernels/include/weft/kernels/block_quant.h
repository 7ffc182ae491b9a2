// Block-quantized weights (core/dtype.h: GGUF's Q8_0 ... Q6_K and weft's I4G64 / I4G128): the
// scalar reference conversions of rows to and from F32.
//
// dequantize_row is bit-exact with ggml's dequantize_row_* (checked against the `gguf` Python
// package's gguf.quants.dequantize, tests/unit/kernels/data/). quantize_row is a round-to-nearest
// quantizer: for Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 bit-exact with ggml's quantize_row_*_ref; for the
// K-quants a simpler one than ggml's (which searches scales iteratively): each sub-block's scale
// and minimum from its range, rounded to the 6-bit (Q4_K, Q5_K) or int8 (Q6_K) sub-scale grid of
// the super-block scale, then each value rounded to the nearest level.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// dst[0..n) = the elements of n / dtype_block_elems(dtype) blocks at src.
// dtype: block-quantized; n a multiple of its block.
// F8B64 too (dequantize_f8b64_row).
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);

// FP8 E4M3 (float8_e4m3fn) to float, exactly (S.1111.111 is NaN). Inline: checkpoint loading
// (src/model) uses it without linking the kernels.
inline float fp8_e4m3_to_float(uint8_t v) {
  const int sign = v >> 7, exponent = (v >> 3) & 0xF, mantissa = v & 7;
  float magnitude;
  if (exponent == 0xF && mantissa == 7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m / 8 * 2^-6
  } else {
    magnitude = std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);  // 1.m * 2^(e-7)
  }
  return sign ? -magnitude : magnitude;
}
// The e4m3 code nearest to v, ties to the even code; magnitudes past 448 (and NaN) saturate to
// +-448 (0x7E / 0xFE), so no NaN code is ever written. Exactly inverse to fp8_e4m3_to_float on
// every finite code.
uint8_t float_to_fp8_e4m3(float v);
// dst[0..n) = e4m3 * scale of the n / 64 F8B64 blocks at src (n a multiple of 64).
void dequantize_f8b64_row(const void* src, float* dst, int64_t n);

// Quantizes src[0..n) into n / block blocks at dst (F8B64: each 64 with the scale max |x| / 448
// and the nearest e4m3 codes). `symmetric` is only for I4G64 / I4G128:
// the scale from the largest magnitude (as Q4_0: d = max / -8), values in [-8, 7], stored with
// minimum -8 d; otherwise those types take min and max of the group (as Q4_1). Non-finite input
// gives unspecified (but memory-safe) blocks.
void quantize_row(DType dtype, const float* src, void* dst, int64_t n, bool symmetric = false);

// w: F32, F16 or BF16 [n, k] with k a multiple of dtype's block -> a new [n, k] tensor of
// `dtype`, rows quantized in parallel.
Tensor quantize_rows(const TensorView& w, DType dtype, bool symmetric, ThreadPool& pool);

// The activation side of linear_block_quantized(): x[0..k) (k a multiple of 16) in groups of
// 16, each with scale[g] = max |x| / 127 and q[t] = nearbyint(x[t] * (127 / max |x|)) in
// [-127, 127] (an all-zero group: scale 0, zeros), so |x[t] - q[t] * scale[g]| <= scale[g] / 2.
// sums[g] = scale[g] * (the sum of the group's q).
void quantize_activation_groups(const float* x, int64_t k, int8_t* q, float* scale, float* sums);

}  // namespace weft::kernels
