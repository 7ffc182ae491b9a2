// RMSNorm as in Llama: y = x / sqrt(mean(x^2) + eps) * weight, computed in F32.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// x, out: F32 [rows, h] (out may alias x). weight: [h], any float dtype.
void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& out,
              ThreadPool& pool);

// Fused residual add + norm: residual += x; out = rms_norm(residual).
// residual, x, out: F32 [rows, h]; out may alias x but not residual.
void add_rms_norm(const TensorView& residual, const TensorView& x, const TensorView& weight,
                  float eps, const TensorView& out, ThreadPool& pool);

// Per-head RMSNorm (Qwen3 q/k norm): x is F32 [tokens, heads, head_dim], normalised in place over
// head_dim with weight [head_dim].
void head_rms_norm(const TensorView& x, const TensorView& weight, float eps, ThreadPool& pool);

}  // namespace weft::kernels
