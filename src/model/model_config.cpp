#include "model/model_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "model/gemma_config.h"
#include "model/json_reader.h"
#include "model/model_files.h"
#include "model/moe_config.h"

namespace weft {
namespace {

struct ArchitectureInfo {
  const char* architecture;
  const char* model_type;
};

constexpr ArchitectureInfo kArchitectures[] = {
    {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3"}, {"Phi3ForCausalLM", "phi3"},
    {"MixtralForCausalLM", "mixtral"}, {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"}, {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma3ForCausalLM", "gemma3_text"},
};

std::string supported_architectures() {
  std::vector<std::string> names;
  for (const ArchitectureInfo& info : kArchitectures) names.push_back(info.architecture);
  return absl::StrJoin(names, ", ");
}

absl::Status resolve_architecture(const JsonFields& fields, const nlohmann::json& root,
                                  ModelConfig& config) {
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> model_type,
                        fields.optional_string("model_type"));
  auto it = root.find("architectures");
  if (it != root.end() && !it->is_null()) {
    if (!it->is_array() || it->empty() || !(*it)[0].is_string()) {
      return fields.type_error("architectures", "a non-empty list of strings");
    }
    const std::string name = (*it)[0].get<std::string>();
    for (const ArchitectureInfo& info : kArchitectures) {
      if (name == info.architecture) {
        config.architecture = info.architecture;
        config.model_type = info.model_type;
        return absl::OkStatus();
      }
    }
    return absl::InvalidArgumentError(
        absl::StrCat(fields.source(), ": unsupported architecture '", name,
                     "' in field 'architectures' (supported: ", supported_architectures(), ")"));
  }
  if (!model_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": neither 'architectures' nor 'model_type' is set (supported: ",
        supported_architectures(), ")"));
  }
  for (const ArchitectureInfo& info : kArchitectures) {
    if (*model_type == info.model_type) {
      config.architecture = info.architecture;
      config.model_type = info.model_type;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": unsupported model_type '",
                                                 *model_type,
                                                 "' (supported: ", supported_architectures(), ")"));
}

absl::StatusOr<int64_t> positive_int(const JsonFields& fields, std::string_view key) {
  WEFT_ASSIGN_OR_RETURN(int64_t value, fields.required_int(key));
  if (value <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field '", fields.field_name(key), "' must be positive, got ", value));
  }
  return value;
}

absl::StatusOr<double> positive_number(const JsonFields& fields, std::string_view key,
                                       double default_value) {
  WEFT_ASSIGN_OR_RETURN(std::optional<double> value, fields.optional_number(key));
  if (!value) return default_value;
  if (!(*value > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field '", fields.field_name(key), "' must be positive, got ", *value));
  }
  return *value;
}

// A list of numbers of `expected` entries (longrope's short_factor / long_factor).
absl::StatusOr<std::vector<double>> number_list(const JsonFields& params,
                                                const nlohmann::json& object, std::string_view key,
                                                int64_t expected, std::string_view type_name) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return absl::InvalidArgumentError(absl::StrCat(params.source(), ": missing field '",
                                                   params.field_name(key), "' for rope type ",
                                                   std::string(type_name)));
  }
  if (!it->is_array()) return params.type_error(key, "a list of numbers");
  std::vector<double> values;
  for (const nlohmann::json& v : *it) {
    if (!v.is_number()) return params.type_error(key, "a list of numbers");
    values.push_back(v.get<double>());
  }
  if (static_cast<int64_t>(values.size()) != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(params.source(), ": field '", params.field_name(key), "' has ", values.size(),
                     " entries, expected rotary_dim / 2 = ", expected));
  }
  return values;
}

// rotary_dim = int(head_dim * partial_rotary_factor), the factor read as transformers does: from
// the RoPE parameters, else the top-level key, else 1. Only Phi3's modeling code rotates part of
// a head; Llama/Mistral/Qwen rotate all of it whatever the factor says (or fail), so there any
// value other than 1 is refused rather than guessed at.
absl::Status parse_rotary_dim(const JsonFields& fields, const std::optional<JsonFields>& params,
                              ModelConfig& config) {
  config.rotary_dim = config.head_dim;
  std::optional<double> partial;
  std::string name = "partial_rotary_factor";
  if (params && params->has("partial_rotary_factor")) {
    WEFT_ASSIGN_OR_RETURN(partial, params->optional_number("partial_rotary_factor"));
    name = params->field_name("partial_rotary_factor");
  } else {
    WEFT_ASSIGN_OR_RETURN(partial, fields.optional_number("partial_rotary_factor"));
  }
  if (!partial || *partial == 1.0) return absl::OkStatus();
  if (config.model_type != "phi3") {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field '", name, "' is ",
                                                   *partial, " (weft rotates the whole head for ",
                                                   config.architecture, ": 1.0)"));
  }
  if (!(*partial > 0.0 && *partial <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field '", name, "' is ",
                                                   *partial, ", expected a value in (0, 1]"));
  }
  const int64_t dim = static_cast<int64_t>(static_cast<double>(config.head_dim) * *partial);
  if (dim < 2 || dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field '", name, "' is ", *partial, ": int(head_dim ", config.head_dim,
        " * ", *partial, ") = ", dim, " rotary dimensions, expected an even number >= 2"));
  }
  config.rotary_dim = dim;
  return absl::OkStatus();
}

// Phi3's longrope, as Phi3Config and _compute_longrope_parameters resolve it.
absl::Status parse_longrope(const JsonFields& fields, const JsonFields& params,
                            const nlohmann::json& params_json, ModelConfig& config) {
  RopeScaling& rope = config.rope_scaling;
  rope.type = RopeScalingType::kLongRope;
  // Phi3Config always has original_max_position_embeddings (class default 4096) and
  // standardize_rope_params writes it over any value inside the RoPE parameters.
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> original,
                        fields.optional_int("original_max_position_embeddings"));
  if (original && *original <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field 'original_max_position_embeddings' must be positive, got ",
        *original));
  }
  rope.original_max_position_embeddings = original.value_or(4096);
  const int64_t pairs = config.rotary_dim / 2;
  WEFT_ASSIGN_OR_RETURN(rope.short_factor,
                        number_list(params, params_json, "short_factor", pairs, "longrope"));
  WEFT_ASSIGN_OR_RETURN(rope.long_factor,
                        number_list(params, params_json, "long_factor", pairs, "longrope"));
  for (const auto* list : {&rope.short_factor, &rope.long_factor}) {
    for (double f : *list) {
      if (!(f > 0.0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            fields.source(), ": field '",
            params.field_name(list == &rope.short_factor ? "short_factor" : "long_factor"),
            "' holds ", f, ", expected positive factors"));
      }
    }
  }
  // An absent factor is the ratio of the context lengths (transformers' NOTE on Phi3).
  WEFT_ASSIGN_OR_RETURN(
      rope.factor, positive_number(params, "factor",
                                   static_cast<double>(config.max_position_embeddings) /
                                       static_cast<double>(rope.original_max_position_embeddings)));
  const double default_attention =
      rope.factor <= 1.0
          ? 1.0
          : std::sqrt(1.0 + std::log(rope.factor) / std::log(static_cast<double>(
                                                        rope.original_max_position_embeddings)));
  WEFT_ASSIGN_OR_RETURN(rope.attention_factor,
                        positive_number(params, "attention_factor", default_attention));
  return absl::OkStatus();
}

// llama3 and yarn: the pre-training context, as standardize_rope_params resolves it: a top-level
// original_max_position_embeddings wins over the one inside the RoPE parameters, and without
// either it is max_position_embeddings (already in rope.original_max_position_embeddings).
absl::Status parse_original_context(const JsonFields& fields, const JsonFields& params,
                                    RopeScaling& rope) {
  const JsonFields* source = &fields;
  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> original,
                        fields.optional_int("original_max_position_embeddings"));
  if (!original) {
    source = &params;
    WEFT_ASSIGN_OR_RETURN(original, params.optional_int("original_max_position_embeddings"));
  }
  if (!original) return absl::OkStatus();
  if (*original <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field '", source->field_name("original_max_position_embeddings"),
        "' must be positive, got ", *original));
  }
  rope.original_max_position_embeddings = *original;
  return absl::OkStatus();
}

// mscale of YaRN (transformers' get_mscale).
double yarn_mscale(double factor, double mscale) {
  return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

absl::Status parse_yarn(const JsonFields& fields, const JsonFields& params, RopeScaling& rope) {
  // `beta_fast or 32`: an explicit 0 or null takes the default too.
  WEFT_ASSIGN_OR_RETURN(std::optional<double> fast, params.optional_number("beta_fast"));
  WEFT_ASSIGN_OR_RETURN(std::optional<double> slow, params.optional_number("beta_slow"));
  rope.beta_fast = fast && *fast != 0.0 ? *fast : 32.0;
  rope.beta_slow = slow && *slow != 0.0 ? *slow : 1.0;
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> truncate, params.optional_bool("truncate"));
  rope.truncate = truncate.value_or(true);
  WEFT_ASSIGN_OR_RETURN(std::optional<double> attention, params.optional_number("attention_factor"));
  WEFT_ASSIGN_OR_RETURN(std::optional<double> mscale, params.optional_number("mscale"));
  WEFT_ASSIGN_OR_RETURN(std::optional<double> mscale_all_dim, params.optional_number("mscale_all_dim"));
  if (attention) {
    rope.attention_factor = *attention;
  } else if (mscale && mscale_all_dim && *mscale != 0.0 && *mscale_all_dim != 0.0) {
    rope.attention_factor =
        yarn_mscale(rope.factor, *mscale) / yarn_mscale(rope.factor, *mscale_all_dim);
  } else {
    rope.attention_factor = yarn_mscale(rope.factor, 1.0);
  }
  if (!(rope.attention_factor > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": field '", params.field_name("attention_factor"), "' must be positive, got ",
        rope.attention_factor));
  }
  return absl::OkStatus();
}

// transformers >= 5 writes `rope_parameters` {rope_type, rope_theta, factor, ...}; older files
// write `rope_scaling` {type|rope_type, factor, ...} (or null) and a top-level `rope_theta`.
absl::Status parse_rope(const JsonFields& fields, const nlohmann::json& root, ModelConfig& config) {
  // MixtralConfig's default base is 1e6; the others' 10000.
  const double default_theta = config.model_type == "mixtral" ? 1e6 : 10000.0;
  WEFT_ASSIGN_OR_RETURN(config.rope_theta, positive_number(fields, "rope_theta", default_theta));
  std::string_view params_key = "rope_parameters";
  WEFT_ASSIGN_OR_RETURN(std::optional<JsonFields> params, fields.optional_object(params_key));
  if (!params) {
    params_key = "rope_scaling";
    WEFT_ASSIGN_OR_RETURN(params, fields.optional_object(params_key));
  }
  RopeScaling& rope = config.rope_scaling;
  rope = RopeScaling{};
  rope.original_max_position_embeddings = config.max_position_embeddings;
  WEFT_RETURN_IF_ERROR(parse_rotary_dim(fields, params, config));
  if (!params) return absl::OkStatus();

  WEFT_ASSIGN_OR_RETURN(config.rope_theta,
                        positive_number(*params, "rope_theta", config.rope_theta));
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> type, params->optional_string("rope_type"));
  std::string_view type_key = "rope_type";
  if (!type) {
    type_key = "type";
    WEFT_ASSIGN_OR_RETURN(type, params->optional_string("type"));
  }
  const std::string type_name = type.value_or("default");
  if (config.model_type == "phi3") {
    // Phi3Config renames the old "su" and "yarn" to longrope and accepts nothing else.
    if (type_name == "default") return absl::OkStatus();
    if (type_name == "longrope" || type_name == "su" || type_name == "yarn") {
      return parse_longrope(fields, *params, root.at(std::string(params_key)), config);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        fields.source(), ": unknown rope type '", type_name, "' in field '",
        params->field_name(type_key), "' (supported for Phi3ForCausalLM: default, longrope)"));
  }
  if (type_name == "default") {
    rope.type = RopeScalingType::kDefault;
    return absl::OkStatus();
  }
  if (type_name == "linear") {
    rope.type = RopeScalingType::kLinear;
  } else if (type_name == "llama3") {
    rope.type = RopeScalingType::kLlama3;
  } else if (type_name == "yarn") {
    rope.type = RopeScalingType::kYarn;
  } else if (type_name == "dynamic") {
    rope.type = RopeScalingType::kDynamic;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.source(), ": unknown rope type '", type_name, "' in field '",
                     params->field_name(type_key),
                     "' (supported: default, linear, dynamic, llama3, yarn)"));
  }
  if (!params->has("factor")) {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": missing field '",
                                                   params->field_name("factor"), "' for rope type ",
                                                   type_name));
  }
  WEFT_ASSIGN_OR_RETURN(rope.factor, positive_number(*params, "factor", 1.0));
  if (rope.type == RopeScalingType::kLinear) return absl::OkStatus();
  if (rope.type == RopeScalingType::kDynamic) {
    // Below 1 the formula would shrink the base as sequences grow (transformers only warns).
    if (rope.factor < 1.0) {
      return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field '",
                                                     params->field_name("factor"), "' is ",
                                                     rope.factor, ", expected >= 1 for rope type dynamic"));
    }
    return absl::OkStatus();
  }
  WEFT_RETURN_IF_ERROR(parse_original_context(fields, *params, rope));
  if (rope.type == RopeScalingType::kYarn) return parse_yarn(fields, *params, rope);
  for (std::string_view key : {"low_freq_factor", "high_freq_factor"}) {
    if (!params->has(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          fields.source(), ": missing field '", params->field_name(key), "' for rope type llama3"));
    }
  }
  WEFT_ASSIGN_OR_RETURN(rope.low_freq_factor, positive_number(*params, "low_freq_factor", 1.0));
  WEFT_ASSIGN_OR_RETURN(rope.high_freq_factor, positive_number(*params, "high_freq_factor", 4.0));
  if (!(rope.high_freq_factor > rope.low_freq_factor)) {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.source(), ": field '", params->field_name("high_freq_factor"), "' (",
                     rope.high_freq_factor, ") must be greater than '",
                     params->field_name("low_freq_factor"), "' (", rope.low_freq_factor, ")"));
  }
  return absl::OkStatus();
}

absl::Status parse_dtype(const JsonFields& fields, ModelConfig& config) {
  std::string_view key = "dtype";
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> name, fields.optional_string(key));
  if (!name) {
    key = "torch_dtype";
    WEFT_ASSIGN_OR_RETURN(name, fields.optional_string(key));
  }
  if (!name) return absl::OkStatus();
  auto dtype = dtype_from_string(*name);
  if (!dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field '", std::string(key),
                                                   "' is '", *name,
                                                   "' (expected float32, float16 or bfloat16)"));
  }
  config.torch_dtype = *dtype;
  return absl::OkStatus();
}

// Fields that change what the model computes and that weft does not implement are refused by
// name, never read past: a checkpoint that relies on them would otherwise run and answer wrong.
absl::Status refuse_unimplemented_fields(const JsonFields& fields, const ModelConfig& config) {
  // transformers' ACT2FN: "silu" and "swish" are the same function, the one weft's MLP computes.
  // (Gemma reads hidden_activation instead: model/gemma_config.cpp.)
  WEFT_ASSIGN_OR_RETURN(std::optional<std::string> act, fields.optional_string("hidden_act"));
  if (act && *act != "silu" && *act != "swish" && !is_gemma(config.model_type)) {
    return absl::InvalidArgumentError(absl::StrCat(fields.source(), ": field 'hidden_act' is '", *act,
                                                   "' (weft implements silu)"));
  }
  // partial_rotary_factor: parse_rotary_dim (implemented for Phi3, refused elsewhere).
  return absl::OkStatus();
}

// The window of each layer (ModelConfig::layer_window), as transformers 5 resolves it: Mistral
// applies sliding_window (class default 4096, null: none) to every layer; Phi3 too (class default
// none: Phi3Model builds its mask with create_sliding_window_causal_mask whenever the config has
// a window); Qwen2/Qwen3 keep it only with use_sliding_window and apply it to the layers
// `layer_types` marks sliding_attention, derived when absent as the layers >= max_window_layers
// (class default 28).
absl::Status parse_attention_windows(const JsonFields& fields, const nlohmann::json& root,
                                     ModelConfig& config) {
  const int64_t layers = config.num_hidden_layers;
  config.layer_window.assign(static_cast<size_t>(layers), 0);
  const std::string& type = config.model_type;
  const bool is_phi3 = type == "phi3";
  // Qwen3-MoE builds one sliding mask for every layer whenever the window is kept.
  const bool every_layer = type == "mistral" || is_phi3 || type == "mixtral" || type == "qwen3_moe";
  const bool is_qwen = type == "qwen2" || type == "qwen3" || type == "qwen2_moe" || type == "qwen3_moe";
  if (!every_layer && !is_qwen) return absl::OkStatus();  // Llama attends over the full context

  WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> window, fields.optional_int("sliding_window"));
  const bool absent = root.find("sliding_window") == root.end();
  if (absent && !is_phi3 && type != "mixtral") window = 4096;
  // Qwen2MoeConfig stores 0 for "no window" when use_sliding_window is false.
  if (type == "qwen2_moe" && window == 0) window.reset();
  if (is_qwen) {
    WEFT_ASSIGN_OR_RETURN(std::optional<bool> use_window, fields.optional_bool("use_sliding_window"));
    if (!use_window.value_or(false)) window.reset();
  }
  if (window && *window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.source(), ": field 'sliding_window' must be positive, got ", *window));
  }
  config.sliding_window = window;

  std::vector<bool> sliding(static_cast<size_t>(layers), every_layer && window.has_value());
  if (is_qwen && !every_layer) {
    auto types = root.find("layer_types");
    if (types != root.end() && !types->is_null()) {
      if (!types->is_array() || static_cast<int64_t>(types->size()) != layers) {
        return fields.type_error("layer_types", absl::StrCat("a list of ", layers, " layer types (num_hidden_layers)"));
      }
      for (int64_t i = 0; i < layers; ++i) {
        const nlohmann::json& t = (*types)[static_cast<size_t>(i)];
        if (t == "sliding_attention") {
          sliding[static_cast<size_t>(i)] = true;
        } else if (t != "full_attention") {
          return absl::InvalidArgumentError(absl::StrCat(
              fields.source(), ": field 'layer_types[", i, "]' is ", t.dump(),
              " (supported: \"full_attention\", \"sliding_attention\")"));
        }
      }
      if (!window && std::find(sliding.begin(), sliding.end(), true) != sliding.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            fields.source(), ": field 'layer_types' marks sliding_attention layers but no window is set "
            "('sliding_window' with 'use_sliding_window': true)"));
      }
    } else if (window) {
      WEFT_ASSIGN_OR_RETURN(std::optional<int64_t> bound, fields.optional_int("max_window_layers"));
      const int64_t max_window_layers = bound.value_or(28);
      for (int64_t i = 0; i < layers; ++i) {
        // Qwen2/3: the layers from max_window_layers on; Qwen2-MoE: the even layers below it.
        sliding[static_cast<size_t>(i)] =
            type == "qwen2_moe" ? (i % 2 == 0 && i < max_window_layers) : i >= max_window_layers;
      }
    }
  }
  for (int64_t i = 0; i < layers; ++i) {
    if (!sliding[static_cast<size_t>(i)]) continue;
    // Phi-3.5 / Phi-4-mini ship a window of 262144 over 131072 positions: transformers applies
    // it (it never excludes a key within max_position_embeddings), so weft does too.
    if (*window > config.max_position_embeddings && !is_phi3) {
      return absl::InvalidArgumentError(absl::StrCat(
          fields.source(), ": field 'sliding_window' (", *window, ") is larger than 'max_position_embeddings' (",
          config.max_position_embeddings, ")"));
    }
    config.layer_window[static_cast<size_t>(i)] = *window;
  }
  return absl::OkStatus();
}

absl::Status require_object(const nlohmann::json& root, const std::string& source) {
  if (root.is_object()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": expected a JSON object, got ", json_type_name(root)));
}

}  // namespace

absl::StatusOr<ModelConfig> parse_model_config(const std::string& json_text,
                                               const std::string& source) {
  WEFT_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(json_text, source));
  WEFT_RETURN_IF_ERROR(require_object(root, source));
  const JsonFields fields(root, source);
  ModelConfig config;
  WEFT_RETURN_IF_ERROR(resolve_architecture(fields, root, config));
  WEFT_RETURN_IF_ERROR(refuse_unimplemented_fields(fields, config));
  if (auto qc = root.find("quantization_config"); qc != root.end() && !qc->is_null()) {
    WEFT_ASSIGN_OR_RETURN(config.checkpoint_quantization,
                          parse_checkpoint_quantization(*qc, source));
  }
  const std::string& type = config.model_type;
  // The MoE architectures share their dense relatives' attention (Mixtral: Mistral's).
  const bool is_qwen3 = type == "qwen3" || type == "qwen3_moe";
  const bool is_mistral = type == "mistral" || type == "mixtral";
  const bool is_phi3 = type == "phi3";
  const bool is_gemma_type = is_gemma(type);

  WEFT_ASSIGN_OR_RETURN(config.vocab_size, positive_int(fields, "vocab_size"));
  WEFT_ASSIGN_OR_RETURN(config.hidden_size, positive_int(fields, "hidden_size"));
  WEFT_ASSIGN_OR_RETURN(config.intermediate_size, positive_int(fields, "intermediate_size"));
  WEFT_ASSIGN_OR_RETURN(config.num_hidden_layers, positive_int(fields, "num_hidden_layers"));
  WEFT_ASSIGN_OR_RETURN(config.num_attention_heads, positive_int(fields, "num_attention_heads"));
  WEFT_ASSIGN_OR_RETURN(config.max_position_embeddings,
                        positive_int(fields, "max_position_embeddings"));
  // An absent key takes the transformers class default (sized for the architecture's 7B model);
  // an explicit null means one KV head per attention head, as in transformers.
  if (fields.has("num_key_value_heads")) {
    WEFT_ASSIGN_OR_RETURN(config.num_key_value_heads, positive_int(fields, "num_key_value_heads"));
  } else if (root.find("num_key_value_heads") == root.end() && type != "llama" && !is_phi3) {
    config.num_key_value_heads = is_mistral               ? 8
                                 : is_gemma_type          ? kGemmaNumKeyValueHeads
                                 : type == "qwen2_moe"    ? 16
                                 : type == "qwen3_moe"    ? 4
                                                          : 32;
  } else {
    config.num_key_value_heads = config.num_attention_heads;
  }
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": field 'num_attention_heads' (", config.num_attention_heads,
        ") must be a multiple of 'num_key_value_heads' (", config.num_key_value_heads, ")"));
  }

  // Qwen3Config declares head_dim = 128 when the key is absent; the others derive it, as does an
  // explicit null everywhere (modeling code uses `getattr(config, "head_dim", None) or ...`).
  const bool head_dim_absent = root.find("head_dim") == root.end();
  if (fields.has("head_dim")) {
    WEFT_ASSIGN_OR_RETURN(config.head_dim, positive_int(fields, "head_dim"));
  } else if (type == "qwen3" && head_dim_absent) {
    config.head_dim = 128;
  } else if (is_gemma_type && head_dim_absent) {
    config.head_dim = kGemmaHeadDim;
  } else {
    if (config.hidden_size % config.num_attention_heads != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": field 'hidden_size' (", config.hidden_size,
                       ") must be divisible by 'num_attention_heads' (", config.num_attention_heads,
                       ") when 'head_dim' is not given"));
    }
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }
  if (config.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": head dimension ", config.head_dim,
                                                   " must be even for rotary embeddings"));
  }

  WEFT_ASSIGN_OR_RETURN(config.rms_norm_eps,
                        positive_number(fields, "rms_norm_eps",
                                        is_phi3 || type == "mixtral" ? 1e-5 : 1e-6));
  // Gemma 3 keeps RoPE parameters per layer type (model/gemma_config.cpp).
  if (type != "gemma3_text") WEFT_RETURN_IF_ERROR(parse_rope(fields, root, config));

  WEFT_ASSIGN_OR_RETURN(std::optional<bool> tie, fields.optional_bool("tie_word_embeddings"));
  config.tie_word_embeddings = tie.value_or(is_gemma_type);

  WEFT_ASSIGN_OR_RETURN(std::optional<bool> attention_bias, fields.optional_bool("attention_bias"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> mlp_bias, fields.optional_bool("mlp_bias"));
  if (type == "qwen2") {
    config.attention_bias = true;  // Qwen2Attention hard-codes q/k/v bias=True, o_proj bias=False.
  } else if (type == "qwen2_moe") {
    WEFT_ASSIGN_OR_RETURN(std::optional<bool> qkv_bias, fields.optional_bool("qkv_bias"));
    config.attention_bias = qkv_bias.value_or(true);  // o_proj never has one
  } else if (!is_mistral && !is_phi3) {  // Mistral and Phi3 hard-code bias=False
    config.attention_bias = attention_bias.value_or(false);
    config.o_proj_bias = config.attention_bias;
  }
  config.mlp_bias = config.model_type == "llama" && mlp_bias.value_or(false);
  config.qk_norm = is_qwen3;
  config.fused_qkv_proj = is_phi3;
  config.fused_gate_up_proj = is_phi3;

  WEFT_RETURN_IF_ERROR(parse_attention_windows(fields, root, config));
  WEFT_RETURN_IF_ERROR(parse_moe_config(fields, root, config));

  WEFT_RETURN_IF_ERROR(parse_dtype(fields, config));
  WEFT_ASSIGN_OR_RETURN(config.eos_token_ids, fields.int_or_int_list("eos_token_id"));
  WEFT_ASSIGN_OR_RETURN(config.bos_token_id, fields.optional_int("bos_token_id"));
  if (type == "mixtral") {
    if (root.find("eos_token_id") == root.end()) config.eos_token_ids = {2};
    if (root.find("bos_token_id") == root.end()) config.bos_token_id = 1;
  }
  if (is_phi3) {
    // Phi3Config's class defaults, for absent keys only (null means none, as in transformers).
    if (root.find("eos_token_id") == root.end()) config.eos_token_ids = {32000};
    if (root.find("bos_token_id") == root.end()) config.bos_token_id = 1;
  }
  if (is_gemma_type) WEFT_RETURN_IF_ERROR(parse_gemma_config(fields, root, config));
  return config;
}

int64_t kv_window(const ModelConfig& config) {
  if (config.layer_window.empty()) return 0;
  int64_t widest = 0;
  for (int64_t w : config.layer_window) {
    if (w <= 0) return 0;
    widest = std::max(widest, w);
  }
  return widest;
}

int64_t default_max_model_len(const ModelConfig& config) {
  if (config.rope_scaling.type != RopeScalingType::kDynamic) return config.max_position_embeddings;
  return static_cast<int64_t>(static_cast<double>(config.max_position_embeddings) *
                              config.rope_scaling.factor);
}

int64_t prompt_dependent_kv_above(const ModelConfig& config) {
  switch (config.rope_scaling.type) {
    case RopeScalingType::kDynamic:
      return config.max_position_embeddings;
    case RopeScalingType::kLongRope:
      return config.rope_scaling.original_max_position_embeddings;
    default:
      return 0;
  }
}

absl::StatusOr<ModelConfig> load_model_config(const std::filesystem::path& model_dir) {
  if (gguf_model_file(model_dir)) {
    WEFT_ASSIGN_OR_RETURN(std::optional<std::string> text,
                          read_model_file(model_dir, "config.json"));
    return parse_model_config(text.value_or("{}"), model_file_label(model_dir, "config.json"));
  }
  const std::filesystem::path path = model_dir / "config.json";
  WEFT_ASSIGN_OR_RETURN(std::string text, read_json_file(path));
  return parse_model_config(text, path.string());
}

absl::StatusOr<GenerationConfig> parse_generation_config(const std::string& json_text,
                                                         const std::string& source) {
  WEFT_ASSIGN_OR_RETURN(nlohmann::json root, parse_json_strict(json_text, source));
  WEFT_RETURN_IF_ERROR(require_object(root, source));
  const JsonFields fields(root, source);
  GenerationConfig config;
  WEFT_ASSIGN_OR_RETURN(config.eos_token_ids, fields.int_or_int_list("eos_token_id"));
  WEFT_ASSIGN_OR_RETURN(config.bos_token_id, fields.optional_int("bos_token_id"));
  WEFT_ASSIGN_OR_RETURN(config.pad_token_id, fields.optional_int("pad_token_id"));
  WEFT_ASSIGN_OR_RETURN(config.temperature, fields.optional_number("temperature"));
  WEFT_ASSIGN_OR_RETURN(config.top_p, fields.optional_number("top_p"));
  WEFT_ASSIGN_OR_RETURN(config.top_k, fields.optional_int("top_k"));
  WEFT_ASSIGN_OR_RETURN(config.min_p, fields.optional_number("min_p"));
  WEFT_ASSIGN_OR_RETURN(config.repetition_penalty, fields.optional_number("repetition_penalty"));
  WEFT_ASSIGN_OR_RETURN(config.max_new_tokens, fields.optional_int("max_new_tokens"));
  WEFT_ASSIGN_OR_RETURN(std::optional<bool> do_sample, fields.optional_bool("do_sample"));
  config.do_sample = do_sample.value_or(false);
  return config;
}

absl::StatusOr<GenerationConfig> load_generation_config(const std::filesystem::path& model_dir,
                                                        const ModelConfig& config) {
  const std::filesystem::path path = model_dir / "generation_config.json";
  GenerationConfig generation;
  std::error_code ec;
  if (gguf_model_file(model_dir)) {
    WEFT_ASSIGN_OR_RETURN(std::optional<std::string> text,
                          read_model_file(model_dir, "generation_config.json"));
    WEFT_ASSIGN_OR_RETURN(generation,
                          parse_generation_config(text.value_or("{}"),
                                                  model_file_label(model_dir, path.filename())));
  } else if (std::filesystem::exists(path, ec)) {
    WEFT_ASSIGN_OR_RETURN(std::string text, read_json_file(path));
    WEFT_ASSIGN_OR_RETURN(generation, parse_generation_config(text, path.string()));
  }
  if (generation.eos_token_ids.empty()) generation.eos_token_ids = config.eos_token_ids;
  if (!generation.bos_token_id) generation.bos_token_id = config.bos_token_id;
  return generation;
}

}  // namespace weft
