// CUDA RMSNorm family; CPU twins in weft/kernels/norm.h. y = x / sqrt(mean(x^2) + eps) * weight,
// computed in F32 and rounded once to the activation dtype. All pointers are device memory;
// launches are asynchronous on `stream`. Activation dtype `act` and `weight_dtype`: F32, F16 or
// BF16 (independently). InvalidArgument for other dtypes or non-positive sizes; Internal for a
// failed launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// x, out: [rows, hidden] (out may alias x). weight: [hidden].
absl::Status rms_norm(const void* x, const void* weight, void* out, int64_t rows, int64_t hidden,
                      float eps, DType act, DType weight_dtype, cudaStream_t stream);

// Fused residual add + norm: residual = round(residual + x); out = rms_norm(residual), the norm
// taken over the stored (rounded) residual so `out` is exactly rms_norm of what the next layer
// adds to. residual, x, out: [rows, hidden]; out may alias x but not residual.
absl::Status add_rms_norm(void* residual, const void* x, const void* weight, void* out,
                          int64_t rows, int64_t hidden, float eps, DType act, DType weight_dtype,
                          cudaStream_t stream);

// Per-head RMSNorm in place (Qwen3 q/k norm): x holds `tokens` rows of `heads` heads of
// `head_dim` values; token t's head h starts at x + t * token_stride + h * head_dim (elements), so
// q or k inside a fused qkv row can be normalised where it lies (token_stride >= heads * head_dim).
// weight: [head_dim].
absl::Status head_rms_norm(void* x, const void* weight, int64_t tokens, int heads, int head_dim,
                           int64_t token_stride, float eps, DType act, DType weight_dtype,
                           cudaStream_t stream);

}  // namespace weft::kernels::cuda
