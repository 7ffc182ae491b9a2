// CUDA MLP activation and elementwise adds; CPU twins in weft/kernels/activation.h. Element math
// in F32, one rounding to the activation dtype (F32, F16 or BF16). All pointers are device
// memory; launches are asynchronous on `stream`. InvalidArgument for other dtypes or bad sizes;
// Internal for a failed launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// SwiGLU: out[r, j] = silu(gate_up[r, j]) * gate_up[r, inter + j] for j < inter, with
// silu(g) = g / (1 + exp(-g)). gate_up: [rows, 2 * inter] (gate columns first, then up);
// out: [rows, inter].
absl::Status silu_and_mul(const void* gate_up, void* out, int64_t rows, int64_t inter, DType act,
                          cudaStream_t stream);

// y[r, c] += bias[c]. y: [rows, cols] of `act`; bias: [cols] of `bias_dtype`.
absl::Status bias_add(void* y, const void* bias, int64_t rows, int64_t cols, DType act,
                      DType bias_dtype, cudaStream_t stream);

// y += x elementwise over n elements of `act`.
absl::Status add_inplace(void* y, const void* x, int64_t n, DType act, cudaStream_t stream);

}  // namespace weft::kernels::cuda
