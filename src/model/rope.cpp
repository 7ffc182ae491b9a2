#include "model/rope.h"

#include <cmath>

namespace weft {
namespace {

// Every intermediate is rounded to float32 because torch evaluates these formulas on float32
// tensors (python scalars are cast to the tensor's dtype at each op).
std::vector<float> default_inv_freq(const ModelConfig& config) {
  const int64_t dim = config.head_dim;
  const float base = static_cast<float>(config.rope_theta);
  std::vector<float> inv_freq(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    const float power =
        static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    inv_freq[static_cast<size_t>(i)] = 1.0f / power;
  }
  return inv_freq;
}

void apply_llama3(const RopeScaling& rope, std::vector<float>& inv_freq) {
  const float factor = static_cast<float>(rope.factor);
  const float low_freq_factor = static_cast<float>(rope.low_freq_factor);
  const float old_context_len = static_cast<float>(rope.original_max_position_embeddings);
  // These two are python floats in transformers, compared against a float32 tensor.
  const float low_freq_wavelen = static_cast<float>(
      static_cast<double>(rope.original_max_position_embeddings) / rope.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(
      static_cast<double>(rope.original_max_position_embeddings) / rope.high_freq_factor);
  const float two_pi = static_cast<float>(2.0 * M_PI);
  const float band = static_cast<float>(rope.high_freq_factor - rope.low_freq_factor);
  for (float& f : inv_freq) {
    const float wavelen = two_pi / f;
    const float scaled = wavelen > low_freq_wavelen ? f / factor : f;
    const bool is_medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (!is_medium) {
      f = scaled;
      continue;
    }
    const float smooth = (old_context_len / wavelen - low_freq_factor) / band;
    const float keep = (1.0f - smooth) * scaled;
    f = keep / factor + smooth * scaled;
  }
}

}  // namespace

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  std::vector<float> inv_freq = default_inv_freq(config);
  switch (config.rope_scaling.type) {
    case RopeScalingType::kDefault:
      break;
    case RopeScalingType::kLinear: {
      const float factor = static_cast<float>(config.rope_scaling.factor);
      for (float& f : inv_freq) f /= factor;
      break;
    }
    case RopeScalingType::kLlama3:
      apply_llama3(config.rope_scaling, inv_freq);
      break;
  }
  return inv_freq;
}

float rope_attention_scaling(const ModelConfig&) { return 1.0f; }

}  // namespace weft
