#include "model/moe_config.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace weft {
namespace {

absl::StatusOr<int64_t> positive_or_default(const JsonFields& fields, std::string_view key,
                                            int64_t default_value) {
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> value, fields.optional_int(key));
  if (!value) return default_value;
  if (*value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field '", fields.field_name(key),
                                                   "' must be positive, got ", *value));
  }
  return *value;
}

// The expert count, from whichever of the two names the file uses.
absl::StatusOr<int64_t> expert_count(const JsonFields& fields, int64_t default_value) {
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> experts, fields.optional_int("num_experts"));
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> local, fields.optional_int("num_local_experts"));
  if (experts && local && *experts != *local) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": fields 'num_experts' (", *experts, ") and 'num_local_experts' (",
        *local, ") disagree"));
  }
  const std::string_view key = experts ? "num_experts" : "num_local_experts";
  return positive_or_default(fields, key, default_value);
}

// Qwen: the layers whose block is sparse.
absl::Status parse_sparse_layers(const JsonFields& fields, const nlohmann::json& root,
                                 ModelConfig& config) {
  const int64_t layers = config.num_hidden_layers;
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> step, fields.optional_int("decoder_sparse_step"));
  if (step && *step < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field 'decoder_sparse_step' must be at least 1, got ", *step));
  }
  const int64_t every = step.value_or(1);
  std::vector<bool>& sparse = config.moe.sparse_layers;
  sparse.assign(static_cast<size_t>(layers), false);
  for (int64_t i = 0; i < layers; ++i) sparse[static_cast<size_t>(i)] = (i + 1) % every == 0;
  auto dense = root.find("mlp_only_layers");
  if (dense == root.end() || dense->is_null()) return absl::OkStatus();
  if (!dense->is_array()) return fields.type_error("mlp_only_layers", "a list of layer indices");
  for (const nlohmann::json& entry : *dense) {
    if (!entry.is_number_integer() || entry.get<int64_t>() < 0 || entry.get<int64_t>() >= layers) {
      return absl::InvalidArgumentError(absl::StrCat(
          fields.source(), ": field 'mlp_only_layers' holds ", entry.dump(),
          ", expected layer indices in [0, ", layers, ") (num_hidden_layers)"));
    }
    sparse[static_cast<size_t>(entry.get<int64_t>())] = false;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status parse_moe_config(const JsonFields& fields, const nlohmann::json& root,
                              ModelConfig& config) {
  MoeConfig& moe = config.moe;
  moe = MoeConfig{};
  const std::string& type = config.model_type;
  if (type == "mixtral") {
    moe.naming = MoeConfig::Naming::kMixtral;
    WEFT_ASSIGN_OR_RETURN(moe.num_experts, expert_count(fields, 8));
    WEFT_ASSIGN_OR_RETURN(moe.experts_per_token, positive_or_default(fields, "num_experts_per_tok", 2));
    moe.expert_intermediate_size = config.intermediate_size;
    moe.normalize_topk = true;  // MixtralTopKRouter always renormalises
    moe.sparse_layers.assign(static_cast<size_t>(config.num_hidden_layers), true);
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    const bool qwen2 = type == "qwen2_moe";
    moe.naming = MoeConfig::Naming::kQwen;
    WEFT_ASSIGN_OR_RETURN(moe.num_experts, expert_count(fields, qwen2 ? 60 : 128));
    WEFT_ASSIGN_OR_RETURN(moe.experts_per_token,
                          positive_or_default(fields, "num_experts_per_tok", qwen2 ? 4 : 8));
    WEFT_ASSIGN_OR_RETURN(moe.expert_intermediate_size,
                          positive_or_default(fields, "moe_intermediate_size", qwen2 ? 1408 : 768));
    WEFT_ASSIGN_OR_RETURN(std::optional<bool> normalize, fields.optional_bool("norm_topk_prob"));
    moe.normalize_topk = normalize.value_or(false);
    if (qwen2) {
      WEFT_ASSIGN_OR_RETURN(moe.shared_expert_intermediate_size,
                            positive_or_default(fields, "shared_expert_intermediate_size", 5632));
    }
    WEFT_RETURN_IF_ERROR(parse_sparse_layers(fields, root, config));
  } else {
    return absl::OkStatus();
  }
  if (moe.experts_per_token > moe.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field 'num_experts_per_tok' (", moe.experts_per_token,
        ") is larger than the number of experts (", moe.num_experts, ")"));
  }
  return absl::OkStatus();
}

}  // namespace weft
