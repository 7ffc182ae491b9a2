// Reads the mixture-of-experts fields of config.json into ModelConfig::moe (see MoeConfig), as
// transformers 5 resolves them for MixtralConfig, Qwen2MoeConfig and Qwen3MoeConfig.
#pragma once

#include "absl/status/status.h"
#include "model/json_reader.h"
#include "model/model_config.h"

namespace weft {

// For model_type mixtral, qwen2_moe and qwen3_moe (a no-op for dense types). Needs
// config.model_type, num_hidden_layers and intermediate_size already set.
//
// Class defaults for absent keys: Mixtral num_local_experts 8, num_experts_per_tok 2, experts of
// intermediate_size, always renormalised, every layer sparse. Qwen2-MoE num_experts 60, top 4,
// moe_intermediate_size 1408, shared_expert_intermediate_size 5632; Qwen3-MoE num_experts 128,
// top 8, moe_intermediate_size 768; both norm_topk_prob false, decoder_sparse_step 1,
// mlp_only_layers []. The expert count is read from num_experts or num_local_experts (Qwen3MoeConfig
// maps one to the other; both set and different is an error). Errors name the field: a
// non-positive count or size, num_experts_per_tok above the expert count, decoder_sparse_step < 1,
// an mlp_only_layers entry that is not a layer index.
absl::Status parse_moe_config(const JsonFields& fields, const nlohmann::json& root,
                              ModelConfig& config);

}  // namespace weft
