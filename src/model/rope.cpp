#include "model/rope.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace weft {
namespace {

// theta^(2i / rotary_dim) for each rotary pair. Every intermediate is rounded to float32 because
// torch evaluates these formulas on float32 tensors (python scalars are cast to the tensor's
// dtype at each op).
std::vector<float> theta_powers(const ModelConfig& config) {
  const int64_t dim = rope_rotary_dim(config);
  const float base = static_cast<float>(config.rope_theta);
  std::vector<float> powers(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    powers[static_cast<size_t>(i)] =
        static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  return powers;
}

std::vector<float> default_inv_freq(const ModelConfig& config) {
  std::vector<float> inv_freq = theta_powers(config);
  for (float& f : inv_freq) f = 1.0f / f;
  return inv_freq;
}

// _compute_longrope_parameters: 1.0 / (ext_factors * base ** inv_freq_shape), ext_factors a
// float32 tensor of the configured factors.
std::vector<float> longrope_inv_freq(const ModelConfig& config,
                                     const std::vector<double>& factors) {
  std::vector<float> inv_freq = theta_powers(config);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float ext = i < factors.size() ? static_cast<float>(factors[i]) : 1.0f;
    inv_freq[i] = 1.0f / (ext * inv_freq[i]);
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

// _compute_yarn_parameters, in its float32 / python-float order of operations.
std::vector<float> yarn_inv_freq(const ModelConfig& config) {
  const std::vector<float> pos_freqs = theta_powers(config);
  std::vector<float> inv_freq(pos_freqs.size());
  const RopeScaling& rope = config.rope_scaling;
  const double dim = static_cast<double>(rope_rotary_dim(config));
  const double base = config.rope_theta;
  const double original = static_cast<double>(rope.original_max_position_embeddings);
  // The rotary dimension at which a pair turns `rotations` times over the original context.
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  double low = correction_dim(rope.beta_fast), high = correction_dim(rope.beta_slow);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  const float factor = static_cast<float>(rope.factor);
  const float ramp_low = static_cast<float>(low);
  const float ramp_width = static_cast<float>(high - low);
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    const float pos_freq = pos_freqs[i];
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (factor * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - ramp_low) / ramp_width, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // inv_freq_extrapolation_factor
    inv_freq[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  return inv_freq;
}

}  // namespace

int64_t rope_rotary_dim(const ModelConfig& config) {
  return config.rotary_dim > 0 ? config.rotary_dim : config.head_dim;
}

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  std::vector<float> inv_freq = default_inv_freq(config);
  switch (config.rope_scaling.type) {
    case RopeScalingType::kDefault:
    case RopeScalingType::kDynamic:  // the set of every length up to max_position_embeddings
      break;
    case RopeScalingType::kLongRope:
      inv_freq = longrope_inv_freq(config, config.rope_scaling.short_factor);
      break;
    case RopeScalingType::kLinear: {
      const float factor = static_cast<float>(config.rope_scaling.factor);
      for (float& f : inv_freq) f /= factor;
      break;
    }
    case RopeScalingType::kLlama3:
      apply_llama3(config.rope_scaling, inv_freq);
      break;
    case RopeScalingType::kYarn:
      inv_freq = yarn_inv_freq(config);
      break;
  }
  return inv_freq;
}

ModelConfig sliding_rope_config(const ModelConfig& config) {
  ModelConfig out = config;
  if (config.sliding_rope) {
    out.rope_theta = config.sliding_rope->rope_theta;
    out.rope_scaling = config.sliding_rope->rope_scaling;
  }
  return out;
}

std::vector<std::vector<float>> rope_inv_freq_tables(const ModelConfig& config) {
  std::vector<std::vector<float>> tables{rope_inv_freq(config)};
  if (config.rope_scaling.type == RopeScalingType::kLongRope) {
    tables.push_back(longrope_inv_freq(config, config.rope_scaling.long_factor));
  }
  return tables;
}

float rope_attention_scaling(const ModelConfig& config) {
  if (config.rope_scaling.type == RopeScalingType::kLongRope ||
      config.rope_scaling.type == RopeScalingType::kYarn) {
    return static_cast<float>(config.rope_scaling.attention_factor);
  }
  return 1.0f;
}

std::vector<float> dynamic_ntk_inv_freq(const ModelConfig& config, int64_t seq_len) {
  const int64_t max_positions = config.max_position_embeddings;
  if (seq_len <= max_positions) return default_inv_freq(config);
  // transformers: base * ((factor * L / M) - (factor - 1)) ** (d / (d - 2)) with L an int64
  // tensor, so every step is a float32 tensor op with the python numbers rounded to float32;
  // then 1 / base ** (arange(0, d, 2) / d), a float32 pow.
  const int64_t dim = rope_rotary_dim(config);
  const double factor = config.rope_scaling.factor;
  const float stretched = static_cast<float>(factor) * static_cast<float>(seq_len);
  const float ratio = stretched / static_cast<float>(max_positions);
  const float shifted = ratio - static_cast<float>(factor - 1.0);
  // The pows in double, rounded once, as theta_powers does (torch's float pow is within an ulp).
  const float grown = static_cast<float>(std::pow(
      static_cast<double>(shifted), static_cast<double>(dim) / static_cast<double>(dim - 2)));
  const float base = static_cast<float>(config.rope_theta) * grown;
  std::vector<float> inv_freq(static_cast<size_t>(dim / 2));
  for (int64_t i = 0; i < dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    inv_freq[static_cast<size_t>(i)] =
        1.0f / static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
  return inv_freq;
}

int64_t dynamic_ntk_seq_len(int64_t position, int64_t prompt_len) {
  return position < prompt_len ? prompt_len : position + 1;
}

TokenRopeTables dynamic_ntk_token_tables(const ModelConfig& config, const ForwardBatch& batch) {
  TokenRopeTables out;
  out.rows = Tensor::empty(DType::kI32, Shape{batch.num_tokens});
  int32_t* rows = out.rows.data_as<int32_t>();
  const int32_t* positions = batch.positions.data_as<int32_t>();
  // Every length up to max_position_embeddings shares the default row 0.
  const int64_t max_positions = config.max_position_embeddings;
  std::map<int64_t, int32_t> row_of_length{{max_positions, 0}};
  for (int s = 0; s < batch.num_seqs(); ++s) {
    const int64_t prompt_len =
        batch.prompt_len.empty() ? 0 : batch.prompt_len[static_cast<size_t>(s)];
    for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) {
      const int64_t length = std::max(max_positions, dynamic_ntk_seq_len(positions[t], prompt_len));
      auto [it, added] =
          row_of_length.emplace(length, static_cast<int32_t>(row_of_length.size()));
      rows[t] = it->second;
    }
  }
  const int64_t pairs = rope_rotary_dim(config) / 2;
  out.inv_freq =
      Tensor::empty(DType::kF32, Shape{static_cast<int64_t>(row_of_length.size()), pairs});
  for (const auto& [length, row] : row_of_length) {
    const std::vector<float> inv_freq = dynamic_ntk_inv_freq(config, length);
    std::memcpy(out.inv_freq.data_as<float>() + row * pairs, inv_freq.data(),
                static_cast<size_t>(pairs) * sizeof(float));
  }
  return out;
}

int32_t longrope_table(const RopeScaling& rope, int64_t position, int64_t seq_len) {
  return std::max(seq_len, position + 1) > rope.original_max_position_embeddings ? 1 : 0;
}

Tensor longrope_token_tables(const ModelConfig& config, const ForwardBatch& batch) {
  Tensor tables = Tensor::zeros(DType::kI32, Shape{batch.num_tokens});
  int32_t* out = tables.data_as<int32_t>();
  const int32_t* positions = batch.positions.data_as<int32_t>();
  for (int s = 0; s < batch.num_seqs(); ++s) {
    const int64_t seq_len = batch.prompt_len.empty() ? 0 : batch.prompt_len[static_cast<size_t>(s)];
    for (int32_t t = batch.query_start[s]; t < batch.query_start[s + 1]; ++t) {
      out[t] = longrope_table(config.rope_scaling, positions[t], seq_len);
    }
  }
  return tables;
}

}  // namespace weft
