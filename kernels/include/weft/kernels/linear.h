// Dense matrix products of activations with weights, as in torch.nn.Linear.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// y[m, n] = x[m, k] @ w[n, k]^T (+ bias[n]).
//   x: F32, contiguous [m, k].
//   w: F32, F16 or BF16, contiguous [n, k] (the Hugging Face [out_features, in_features] layout;
//      16-bit weights are used as stored and widened to F32 in registers).
//   bias: null, or [n] of any float dtype.
//   y: F32 [m, n], overwritten. Must not alias x.
// Accumulates in F32. Threads split over n (and m for large m). Uses AVX-512 / AVX2+FMA paths
// where cpu_features() allows, and a portable path otherwise; all agree to float rounding.
void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& y,
            ThreadPool& pool);

}  // namespace weft::kernels
