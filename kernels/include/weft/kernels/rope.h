// Rotary position embedding, Hugging Face "rotate_half" layout (the first and second halves of
// the rotated dimensions are the pairs), applied in place.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// x: F32 [tokens, heads, head_dim]; positions: I32 [tokens]; inv_freq: F32 [rotary_dim / 2], or
// F32 [tables, rotary_dim / 2] with `table` choosing each token's row (already scaled for the
// model's rope_scaling; see model/rope.h). rotary_dim = 2 * inv_freq's last dimension: even and
// at most head_dim (partial rotary: dimensions [rotary_dim, head_dim) pass through unchanged).
// `table`: null (row 0 for every token) or I32 [tokens] of rows in [0, tables) (LongRoPE's short
// and long factors). For each token t, head h and i < r = rotary_dim / 2, with
// f = inv_freq[table[t], i] and angle a = float(positions[t]) * f (F32, as transformers):
//   x1 = x[t,h,i], x2 = x[t,h,i+r];  x[t,h,i] = x1 c - x2 s;  x[t,h,i+r] = x2 c + x1 s
// where c = cos(a) * attention_scaling and s = sin(a) * attention_scaling (the scaling is 1
// except for some rope types: LongRoPE's attention factor).
void apply_rope(const TensorView& x, const TensorView& positions, const TensorView& inv_freq,
                float attention_scaling, ThreadPool& pool, const TensorView* table = nullptr);

}  // namespace weft::kernels
