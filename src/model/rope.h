// Rotary position embedding frequencies, computed as transformers' ROPE_INIT_FUNCTIONS do
// (modeling_rope_utils.py) for the rope types ModelConfig supports.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace weft {

// inv_freq[i] for i in [0, head_dim / 2): the angle of position p in rotary pair i is
// p * inv_freq[i]. default: 1 / theta^(2i / head_dim); linear: that / factor; llama3: low
// frequencies divided by factor, high ones kept, the band between smoothly interpolated.
// Arithmetic follows torch's float32 order of operations so values match transformers to within
// an ulp or so (the pow is computed in double and rounded).
std::vector<float> rope_inv_freq(const ModelConfig& config);

// The factor transformers multiplies cos and sin by; 1.0 for default, linear and llama3.
float rope_attention_scaling(const ModelConfig& config);

}  // namespace weft
