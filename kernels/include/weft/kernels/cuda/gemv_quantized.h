#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"
#include "weft/kernels/cuda/gemv.h"

namespace weft::kernels::cuda {

// The CUDA twins of the CPU's quantized products for decode-shaped problems (m <= kGemvMaxRows):
//   y[m, n] = x[m, k] @ dequant(w)[n, k]^T (+ bias[n])
// x, bias and y F16 or BF16 (`dtype`); products accumulated in F32, y rounded once (bias added
// before). The weights stay quantized in memory and are decoded in registers as they stream in:
//   - kI8 (W8A16, --quantize int8): w int8 [n, k] and w_scale F32 [n]; y_j = w_scale[j] *
//     sum_t x_t q_jt (+ bias), as linear_int8() computes it on the CPU (each product exact in F32).
//   - the 4-bit group types (--quantize int4[-gN][-sym], GGUF Q4_0 / Q4_1, GPTQ / AWQ /
//     compressed-tensors int4): kQ4_0, kQ4_1, kI4G64, kI4G128, kI4G32F, kI4G64F, kI4G128F
//     (core/dtype.h layouts); each weight is a * (u - zero) + c with the CPU decoder's two
//     roundings (kernels/cpu/block_unpack.h), so the dequantized weights are the CPU's bit for bit
//     and only the order of the F32 sums differs.
// Status: written and tested against the CPU twins (tests/gpu/cuda_gemv_quantized_test.cpp) but,
// as of Dec 2026, never run on a GPU and not yet used by the CUDA executor.

// Whether gemv_quantized() takes this problem: a w_dtype listed above, 1 <= m <= kGemvMaxRows,
// k a multiple of the type's block (16 for kI8), x 16-byte aligned, w 16-byte aligned for kI8
// and 4-byte aligned for the others.
bool gemv_quantized_supported(DType w_dtype, int64_t m, int64_t k, const void* x, const void* w);

// Enqueues the product on `stream`. w_scale: kI8's F32 row scales (device memory), else null.
// InvalidArgument when !gemv_quantized_supported(...), for another dtype, a missing w_scale or
// sizes past 2^31; Internal for a failed launch.
absl::Status gemv_quantized(const void* x, const void* w, const float* w_scale, const void* bias,
                            void* y, int64_t m, int64_t n, int64_t k, DType dtype, DType w_dtype,
                            cudaStream_t stream);

}  // namespace weft::kernels::cuda
