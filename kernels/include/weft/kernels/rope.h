// Rotary position embedding, Hugging Face "rotate_half" layout (the first and second halves of
// each head are the pairs), applied in place.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// x: F32 [tokens, heads, head_dim]; positions: I32 [tokens]; inv_freq: F32 [head_dim / 2]
// (already scaled for the model's rope_scaling; see model/rope.h). For each token t, head h and
// i < head_dim/2 with angle a = positions[t] * inv_freq[i]:
//   x1 = x[t,h,i], x2 = x[t,h,i+d/2];  x[t,h,i] = x1 cos a - x2 sin a;  x[t,h,i+d/2] = x2 cos a + x1 sin a.
// `attention_scaling` multiplies cos and sin (1 except for some scaling types).
void apply_rope(const TensorView& x, const TensorView& positions, const TensorView& inv_freq,
                float attention_scaling, ThreadPool& pool);

}  // namespace weft::kernels
