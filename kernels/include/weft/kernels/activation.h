// Gated activations of the MLP, and elementwise F32 ops on activations.
#pragma once

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// SwiGLU: out[r, j] = silu(gate_up[r, j]) * gate_up[r, i + j] for j < i.
// gate_up: F32 [rows, 2 * i] (gate columns first, then up); out: F32 [rows, i].
void silu_and_mul(const TensorView& gate_up, const TensorView& out, ThreadPool& pool);

// GeGLU with the tanh approximation of GELU (Gemma's gelu_pytorch_tanh): out[r, j] =
// gelu_tanh(gate_up[r, j]) * gate_up[r, i + j], gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))) in torch's order of operations. Shapes as silu_and_mul.
void gelu_tanh_and_mul(const TensorView& gate_up, const TensorView& out, ThreadPool& pool);

// Soft-capping in place: x = cap * tanh(x / cap) (Gemma 2's final logits). x: F32, cap > 0.
void softcap_inplace(const TensorView& x, float cap, ThreadPool& pool);

// x *= s elementwise in place, F32.
void scale_inplace(const TensorView& x, float s, ThreadPool& pool);

// y += x elementwise, F32, same shapes.
void add_inplace(const TensorView& y, const TensorView& x, ThreadPool& pool);

}  // namespace weft::kernels
