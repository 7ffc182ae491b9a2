#include "model/gemma_config.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"

namespace weft {
namespace {

constexpr char kFull[] = "full_attention";
constexpr char kSliding[] = "sliding_attention";

absl::Status config_error(const JsonFields& fields, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": ", std::string(message)));
}

bool present(const nlohmann::json& root, std::string_view key) {
  return root.find(std::string(key)) != root.end();
}

bool explicit_null(const nlohmann::json& root, std::string_view key) {
  auto it = root.find(std::string(key));
  return it != root.end() && it->is_null();
}

// Gemma2Config / Gemma3TextConfig are strict dataclasses: these integer fields refuse null, and
// validate_architecture wants hidden_size divisible by the heads even with an explicit head_dim.
absl::Status check_strict_fields(const JsonFields& fields, const nlohmann::json& root,
                                 const ModelConfig& config) {
  for (std::string_view key : {"num_key_value_heads", "head_dim", "query_pre_attn_scalar"}) {
    if (explicit_null(root, key)) {
      return config_error(
          fields, absl::StrCat("field '", std::string(key), "' is null (", config.architecture,
                               " needs an integer; leave the key out for the "
                               "class default)"));
    }
  }
  if (config.hidden_size % config.num_attention_heads != 0) {
    return config_error(fields,
                        absl::StrCat("field 'hidden_size' (", config.hidden_size,
                                     ") must be a multiple of 'num_attention_heads' (",
                                     config.num_attention_heads, ") for ", config.architecture));
  }
  return absl::OkStatus();
}

// transformers reads `hidden_activation` for Gemma (ACT2FN[config.hidden_activation]); the
// `hidden_act` some checkpoints also carry is not read, so a different value there is ambiguous.
absl::Status parse_activation(const JsonFields& fields, const nlohmann::json& root,
                              ModelConfig& config) {
  if (explicit_null(root, "hidden_activation")) {
    return config_error(fields, "field 'hidden_activation' is null (expected gelu_pytorch_tanh)");
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> act,
                        fields.optional_string("hidden_activation"));
  const std::string name = act.value_or("gelu_pytorch_tanh");
  if (name != "gelu_pytorch_tanh") {
    return config_error(fields, absl::StrCat("field 'hidden_activation' is '", name,
                                             "' (weft implements gelu_pytorch_tanh for ",
                                             config.architecture, ")"));
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> legacy, fields.optional_string("hidden_act"));
  if (legacy && *legacy != name) {
    return config_error(
        fields, absl::StrCat("field 'hidden_act' is '", *legacy, "' but 'hidden_activation' is '",
                             name, "': transformers computes ", config.architecture,
                             "'s MLP with hidden_activation; make them agree"));
  }
  config.mlp_activation = MlpActivation::kGeluTanh;
  return absl::OkStatus();
}

// Absent: the class default; null: no capping; else a positive number.
absl::StatusOr<std::optional<double>> soft_cap(const JsonFields& fields, const nlohmann::json& root,
                                               std::string_view key,
                                               std::optional<double> class_default) {
  if (!present(root, key)) return class_default;
  WEFT_ASSIGN_OR_RETURN(std::optional<double> cap, fields.optional_number(key));
  if (cap && !(*cap > 0.0)) {
    return config_error(fields, absl::StrCat("field '", std::string(key),
                                             "' must be positive or null, got ", *cap));
  }
  return cap;
}

absl::Status parse_attention_fields(const JsonFields& fields, const nlohmann::json& root,
                                    bool gemma3, ModelConfig& config) {
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> scalar,
                        fields.optional_int("query_pre_attn_scalar"));
  config.query_pre_attn_scalar = scalar.value_or(256);
  if (*config.query_pre_attn_scalar <= 0) {
    return config_error(fields, absl::StrCat("field 'query_pre_attn_scalar' must be positive, got ",
                                             *config.query_pre_attn_scalar));
  }
  WEFT_ASSIGN_OR_RETURN(config.attn_logit_softcapping,
                        soft_cap(fields, root, "attn_logit_softcapping",
                                 gemma3 ? std::nullopt : std::optional<double>(50.0)));
  if (gemma3 && config.attn_logit_softcapping) {
    // Gemma3Attention keeps the value but never passes it to the attention function, so
    // transformers runs without it: weft cannot tell which the checkpoint means.
    return config_error(
        fields, absl::StrCat("field 'attn_logit_softcapping' is ", *config.attn_logit_softcapping,
                             ": transformers' Gemma3ForCausalLM does not apply it "
                             "(set it to null)"));
  }
  WEFT_ASSIGN_OR_RETURN(config.final_logit_softcapping,
                        soft_cap(fields, root, "final_logit_softcapping",
                                 gemma3 ? std::nullopt : std::optional<double>(30.0)));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> bidirectional,
                        fields.optional_bool("use_bidirectional_attention"));
  if (bidirectional.value_or(false)) {
    return config_error(fields,
                        "field 'use_bidirectional_attention' is true: weft implements "
                        "causal attention only");
  }
  return absl::OkStatus();
}

// layer_types as given, or derived as the config classes' __post_init__ does.
absl::Status parse_windows(const JsonFields& fields, const nlohmann::json& root, bool gemma3,
                           ModelConfig& config) {
  const int64_t layers = config.num_hidden_layers;
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> window, fields.optional_int("sliding_window"));
  if (!present(root, "sliding_window")) window = 4096;
  if (window && *window <= 0) {
    return config_error(fields,
                        absl::StrCat("field 'sliding_window' must be positive, got ", *window));
  }
  config.sliding_window = window;

  std::vector<bool> sliding(static_cast<size_t>(layers));
  std::string source = "layer_types";
  auto types = root.find("layer_types");
  if (types != root.end() && !types->is_null()) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != layers) {
      return fields.type_error(
          "layer_types", absl::StrCat("a list of ", layers, " layer types (num_hidden_layers)"));
    }
    for (int64_t i = 0; i < layers; ++i) {
      const nlohmann::json& t = (*types)[static_cast<size_t>(i)];
      if (t != kFull && t != kSliding) {
        return config_error(
            fields, absl::StrCat("field 'layer_types[", i, "]' is ", t.dump(),
                                 " (supported: \"full_attention\", \"sliding_attention\")"));
      }
      sliding[static_cast<size_t>(i)] = t == kSliding;
    }
  } else {
    int64_t pattern = 2;  // Gemma2Config: sliding if (i + 1) % 2, i.e. layers 0, 2, 4, ...
    source = "the default layer pattern";
    if (gemma3) {
      WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> p,
                            fields.optional_int("sliding_window_pattern"));
      pattern = p.value_or(6);
      if (pattern <= 0) {
        return config_error(
            fields, absl::StrCat("field 'sliding_window_pattern' must be positive, got ", pattern));
      }
      source = absl::StrCat("sliding_window_pattern ", pattern);
    }
    for (int64_t i = 0; i < layers; ++i) sliding[static_cast<size_t>(i)] = (i + 1) % pattern != 0;
  }
  config.layer_window.assign(static_cast<size_t>(layers), 0);
  for (int64_t i = 0; i < layers; ++i) {
    if (!sliding[static_cast<size_t>(i)]) continue;
    if (!window) {
      return config_error(fields, absl::StrCat("layer ", i, " is sliding_attention (", source,
                                               ") but field 'sliding_window' is null"));
    }
    if (*window > config.max_position_embeddings) {
      return config_error(fields, absl::StrCat("field 'sliding_window' (", *window,
                                               ") is larger than 'max_position_embeddings' (",
                                               config.max_position_embeddings, ")"));
    }
    config.layer_window[static_cast<size_t>(i)] = *window;
  }
  return absl::OkStatus();
}

// One layer type's RoPE parameters after transformers' merging, remembering where each key came
// from so errors name the field the user wrote.
struct MergedRope {
  explicit MergedRope(std::string layer_type)
      : default_prefix(absl::StrCat("rope_parameters.", layer_type, ".")) {}
  nlohmann::json params = nlohmann::json::object();
  std::string default_prefix;                 // where an absent key would go
  std::map<std::string, std::string> prefix;  // key -> "rope_parameters.full_attention." etc.

  void set(const std::string& key, const nlohmann::json& value, const std::string& from) {
    params[key] = value;
    prefix[key] = from;
  }
  JsonFields fields_for(const std::string& source, const std::string& key) const {
    auto it = prefix.find(key);
    return JsonFields(params, source, it == prefix.end() ? default_prefix : it->second);
  }
};

absl::Status parse_layer_rope(const JsonFields& fields, const MergedRope& merged,
                              const std::string& layer_type, double default_theta,
                              ModelConfig::LayerRope& out) {
  const std::string& source = fields.source();
  const JsonFields theta = merged.fields_for(source, "rope_theta");
  WEFT_ASSIGN_OR_RETURN(std::optional<double> base, theta.optional_number("rope_theta"));
  out.rope_theta = base.value_or(default_theta);
  if (!(out.rope_theta > 0.0)) {
    return config_error(fields, absl::StrCat("field '", theta.field_name("rope_theta"),
                                             "' must be positive, got ", out.rope_theta));
  }
  // standardize_rope_params: rope_type, else the legacy "type", else default.
  const JsonFields rope_type = merged.fields_for(source, "rope_type");
  const JsonFields legacy_type = merged.fields_for(source, "type");
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> type, rope_type.optional_string("rope_type"));
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> legacy, legacy_type.optional_string("type"));
  const std::string name = type ? *type : legacy.value_or("default");
  if (legacy && *legacy != name) {
    return config_error(fields,
                        absl::StrCat("field '", legacy_type.field_name("type"), "' is '", *legacy,
                                     "' but the ", layer_type, " layers' rope type is '", name,
                                     "' (transformers reads rope_type, default when "
                                     "rope_parameters has no ",
                                     layer_type, " entry, and ignores 'type'); set rope_type"));
  }
  const JsonFields partial = merged.fields_for(source, "partial_rotary_factor");
  WEFT_ASSIGN_OR_RETURN(std::optional<double> factor_part,
                        partial.optional_number("partial_rotary_factor"));
  if (factor_part && *factor_part != 1.0) {
    return config_error(
        fields, absl::StrCat("field '", partial.field_name("partial_rotary_factor"), "' is ",
                             *factor_part, " (Gemma3ForCausalLM rotates the whole head: 1.0)"));
  }
  const JsonFields factor = merged.fields_for(source, "factor");
  out.rope_scaling = RopeScaling{};
  if (name == "default") {
    if (factor.has("factor")) {
      return config_error(fields, absl::StrCat("field '", factor.field_name("factor"),
                                               "' is set but the ", layer_type,
                                               " layers' rope type is default, so transformers "
                                               "ignores it; set rope_type (e.g. linear)"));
    }
    return absl::OkStatus();
  }
  if (name != "linear") {
    return config_error(
        fields,
        absl::StrCat("unknown rope type '", name, "' in field '",
                     (type ? rope_type.field_name("rope_type") : legacy_type.field_name("type")),
                     "' (supported for Gemma3ForCausalLM: default, linear)"));
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<double> f, factor.optional_number("factor"));
  if (!f) {
    return config_error(fields, absl::StrCat("missing field '", factor.field_name("factor"),
                                             "' for rope type linear"));
  }
  if (!(*f > 0.0)) {
    return config_error(fields, absl::StrCat("field '", factor.field_name("factor"),
                                             "' must be positive, got ", *f));
  }
  out.rope_scaling.type = RopeScalingType::kLinear;
  out.rope_scaling.factor = *f;
  return absl::OkStatus();
}

// Gemma3TextConfig.convert_rope_params_to_dict: rope_parameters per layer type (absent entries
// {"rope_type": "default"}), the legacy rope_scaling written over the full_attention entry, and
// rope_theta set by default from the top-level rope_theta (class default 1e6) for full layers and
// from rope_local_base_freq (1e4) for sliding layers.
absl::Status parse_gemma3_rope(const JsonFields& fields, const nlohmann::json& root,
                               ModelConfig& config) {
  MergedRope full(kFull), sliding(kSliding);
  bool given[2] = {false, false};  // full_attention, sliding_attention
  auto params = root.find("rope_parameters");
  if (params != root.end() && !params->is_null()) {
    if (!params->is_object()) {
      return fields.type_error("rope_parameters", "an object of per-layer-type RoPE parameters");
    }
    for (const auto& [key, value] : params->items()) {
      if (key != kFull && key != kSliding) {
        return config_error(
            fields,
            absl::StrCat("field 'rope_parameters' has key '", key, "': ", config.architecture,
                         " reads RoPE parameters per layer type ({\"full_attention\": {...}, "
                         "\"sliding_attention\": {...}}) and transformers ignores any other key"));
      }
      if (value.is_null()) continue;
      if (!value.is_object()) {
        return fields.type_error(absl::StrCat("rope_parameters.", key), "an object");
      }
      MergedRope& target = key == kFull ? full : sliding;
      for (const auto& [k, v] : value.items()) target.set(k, v, target.default_prefix);
      given[key == kFull ? 0 : 1] = true;
    }
  }
  // An entry the file does not give starts as {"rope_type": "default"}.
  if (!given[0]) full.set("rope_type", "default", full.default_prefix);
  if (!given[1]) sliding.set("rope_type", "default", sliding.default_prefix);
  auto scaling = root.find("rope_scaling");
  if (scaling != root.end() && !scaling->is_null()) {
    if (!scaling->is_object()) return fields.type_error("rope_scaling", "an object or null");
    for (const auto& [k, v] : scaling->items()) full.set(k, v, "rope_scaling.");
  }
  WEFT_ASSIGN_OR_RETURN(std::optional<double> theta, fields.optional_number("rope_theta"));
  WEFT_ASSIGN_OR_RETURN(std::optional<double> local,
                        fields.optional_number("rope_local_base_freq"));
  WEFT_ASSIGN_OR_RETURN(std::optional<double> partial,
                        fields.optional_number("partial_rotary_factor"));
  if (partial && *partial != 1.0) {
    return config_error(fields, absl::StrCat("field 'partial_rotary_factor' is ", *partial,
                                             " (Gemma3ForCausalLM rotates the whole head: 1.0)"));
  }
  ModelConfig::LayerRope full_rope, sliding_rope;
  WEFT_RETURN_IF_ERROR(parse_layer_rope(fields, full, kFull, theta.value_or(1e6), full_rope));
  WEFT_RETURN_IF_ERROR(
      parse_layer_rope(fields, sliding, kSliding, local.value_or(1e4), sliding_rope));
  config.rope_theta = full_rope.rope_theta;
  config.rope_scaling = full_rope.rope_scaling;
  config.rope_scaling.original_max_position_embeddings = config.max_position_embeddings;
  sliding_rope.rope_scaling.original_max_position_embeddings = config.max_position_embeddings;
  config.sliding_rope = sliding_rope;
  config.rotary_dim = config.head_dim;
  return absl::OkStatus();
}

// transformers: embed_scale = hidden_size ** 0.5 as a float32 tensor, cast to the embedding
// weights' dtype before the multiply (Gemma3TextScaledWordEmbedding), so a bfloat16 checkpoint
// scales by bf16(sqrt(hidden_size)) (sqrt(3072) = 55.43 becomes 55.5).
float embedding_multiplier(const ModelConfig& config) {
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(config.hidden_size)));
  switch (config.torch_dtype) {
    case DType::kBF16:
      return bf16_to_float(float_to_bf16(scale));
    case DType::kF16:
      return f16_to_float(float_to_f16(scale));
    default:
      return scale;
  }
}

}  // namespace

bool is_gemma(std::string_view model_type) {
  return model_type == "gemma2" || model_type == "gemma3_text";
}

absl::Status parse_gemma_config(const JsonFields& fields, const nlohmann::json& root,
                                ModelConfig& config) {
  const bool gemma3 = config.model_type == "gemma3_text";
  WEFT_RETURN_IF_ERROR(check_strict_fields(fields, root, config));
  WEFT_RETURN_IF_ERROR(parse_activation(fields, root, config));
  WEFT_RETURN_IF_ERROR(parse_attention_fields(fields, root, gemma3, config));
  WEFT_RETURN_IF_ERROR(parse_windows(fields, root, gemma3, config));
  if (gemma3) WEFT_RETURN_IF_ERROR(parse_gemma3_rope(fields, root, config));
  config.norm_weight_plus_one = true;
  config.sandwich_norms = true;
  config.qk_norm = gemma3;
  config.embedding_multiplier = embedding_multiplier(config);
  // Both classes' token ids, for absent keys only (null means none, as in transformers).
  if (!present(root, "eos_token_id")) config.eos_token_ids = {1};
  if (!present(root, "bos_token_id")) config.bos_token_id = 2;
  return absl::OkStatus();
}

}  // namespace weft
