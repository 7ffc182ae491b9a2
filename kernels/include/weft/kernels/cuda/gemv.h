#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// The decode-shaped linear: y[m, n] = x[m, k] @ w[n, k]^T (+ bias[n]) for a handful of rows
// (m <= kGemvMaxRows), F16 or BF16, products accumulated in F32 and y rounded once (bias added
// before). Each weight row is streamed once with 128-bit loads by one to eight warps.
// Opt-in (CublasGemm::set_use_gemv): on an H200 (Nsight Compute, batch-1 decode of a 1B Llama)
// cuBLAS's kernels read the weights at 26-72% of the bandwidth and this one at 30-63%, 3-9% slower
// per step; it is kept, tested against the CPU, as the base for fusing the RMSNorm and SiLU
// around the decode projections, where it can pay.
inline constexpr int64_t kGemvMaxRows = 8;

// True when gemv() takes this problem: 1 <= m <= kGemvMaxRows, k a multiple of 8 and x, w, y
// 16-byte aligned (bias may have any alignment).
bool gemv_supported(int64_t m, int64_t k, const void* x, const void* w, const void* y);

// Enqueues the product on `stream`. InvalidArgument when !gemv_supported(...), for another dtype
// or sizes past 2^31; Internal for a failed launch.
absl::Status gemv(const void* x, const void* w, const void* bias, void* y, int64_t m, int64_t n,
                  int64_t k, DType dtype, cudaStream_t stream);

}  // namespace weft::kernels::cuda
