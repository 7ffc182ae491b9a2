// Writes a Llama-architecture model directory with random weights (config.json,
// generation_config.json, model.safetensors): for benchmarks and tests that need a model of a
// given shape without shipping one. Deterministic for a given seed. With num_experts > 0 it is a
// Mixtral-architecture mixture instead: every layer's MLP replaced by num_experts SwiGLU experts
// of intermediate_size, top experts_per_token.
#pragma once

#include <cstdint>
#include <filesystem>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft {

struct RandomModelSpec {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 768;
  int64_t intermediate_size = 2048;
  int64_t num_layers = 12;
  int64_t num_heads = 12;
  int64_t num_kv_heads = 4;
  int64_t max_position_embeddings = 4096;
  bool tie_word_embeddings = false;
  int64_t num_experts = 0;  // 0: dense (Llama)
  int64_t experts_per_token = 2;
  DType dtype = DType::kBF16;
  uint64_t seed = 1;

  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t num_parameters() const;
  // Parameters one token's forward reads (num_parameters() for a dense model).
  int64_t active_parameters() const;
};

absl::Status write_random_model(const std::filesystem::path& dir, const RandomModelSpec& spec);

}  // namespace weft
