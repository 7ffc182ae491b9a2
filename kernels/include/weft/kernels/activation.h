// Gated activations of the MLP.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// SwiGLU: out[r, j] = silu(gate_up[r, j]) * gate_up[r, i + j] for j < i.
// gate_up: F32 [rows, 2 * i] (gate columns first, then up); out: F32 [rows, i].
void silu_and_mul(const TensorView& gate_up, const TensorView& out, ThreadPool& pool);

// y += x elementwise, F32, same shapes.
void add_inplace(const TensorView& y, const TensorView& x, ThreadPool& pool);

}  // namespace weft::kernels
