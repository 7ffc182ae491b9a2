// Gemma2ForCausalLM / Gemma3ForCausalLM config.json parsing (model/gemma_config.h): the fields
// transformers' Gemma2Config / Gemma3TextConfig resolve (model_config_reference.json, cases with
// a "gemma" entry; the shared fields are checked by model_config_test.cpp), and the refusals.
#include "model/gemma_config.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/model_config.h"
#include "model/rope.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

using ::testing::HasSubstr;

nlohmann::json load_reference() {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/tests/unit/model/model_config_reference.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

std::optional<double> optional_number(const nlohmann::json& v) {
  if (v.is_null()) return std::nullopt;
  return v.get<double>();
}

TEST(GemmaConfigTest, MatchesTransformersResolution) {
  const nlohmann::json reference = load_reference();
  int gemma_cases = 0, gemma3_cases = 0;
  for (const auto& [name, c] : reference["cases"].items()) {
    if (!c.contains("gemma")) continue;
    SCOPED_TRACE(name);
    ++gemma_cases;
    const nlohmann::json& g = c["gemma"];
    auto config = parse_model_config(c["config_json"].get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(is_gemma(config->model_type));
    EXPECT_TRUE(config->norm_weight_plus_one);
    EXPECT_TRUE(config->sandwich_norms);
    EXPECT_EQ(config->mlp_activation, MlpActivation::kGeluTanh);
    EXPECT_EQ(g["hidden_activation"], "gelu_pytorch_tanh");
    std::vector<int64_t> eos;
    if (g["eos_token_id"].is_array()) {
      eos = g["eos_token_id"].get<std::vector<int64_t>>();
    } else {
      eos = {g["eos_token_id"].get<int64_t>()};
    }
    EXPECT_EQ(config->eos_token_ids, eos);
    EXPECT_EQ(config->bos_token_id, g["bos_token_id"].get<int64_t>());
    ASSERT_TRUE(config->query_pre_attn_scalar.has_value());
    EXPECT_EQ(std::pow(static_cast<double>(*config->query_pre_attn_scalar), -0.5),
              g["attention_scale"].get<double>());
    EXPECT_EQ(config->attn_logit_softcapping, optional_number(g["attn_logit_softcapping"]));
    EXPECT_EQ(config->final_logit_softcapping, optional_number(g["final_logit_softcapping"]));
    EXPECT_EQ(config->embedding_multiplier,
              static_cast<float>(g["embedding_multiplier"].get<double>()));
    const auto layer_types = g["layer_types"].get<std::vector<std::string>>();
    ASSERT_EQ(layer_types.size(), config->layer_window.size());
    for (size_t i = 0; i < layer_types.size(); ++i) {
      EXPECT_EQ(config->layer_window[i] > 0, layer_types[i] == "sliding_attention")
          << "layer " << i;
    }
    if (!g.contains("sliding_rope_theta")) {
      EXPECT_FALSE(config->sliding_rope.has_value());
      continue;
    }
    ++gemma3_cases;
    ASSERT_TRUE(config->sliding_rope.has_value());
    EXPECT_EQ(config->sliding_rope->rope_theta, g["sliding_rope_theta"].get<double>());
    EXPECT_EQ(config->sliding_rope->rope_scaling.type, g["sliding_rope_type"] == "linear"
                                                           ? RopeScalingType::kLinear
                                                           : RopeScalingType::kDefault);
    const std::vector<float> sliding = rope_inv_freq(sliding_rope_config(*config));
    const auto& want = g["sliding_inv_freq"];
    ASSERT_EQ(sliding.size(), want.size());
    for (size_t i = 0; i < sliding.size(); ++i) {
      EXPECT_LE(ulp_distance(sliding[i], static_cast<float>(want[i].get<double>())), 1)
          << "[" << i << "]";
    }
  }
  EXPECT_GE(gemma_cases, 6);
  EXPECT_GE(gemma3_cases, 3);
}

// A minimal Gemma config with `patch` merged in (null values delete keys).
std::string gemma_config(const std::string& model_type, const nlohmann::json& patch) {
  nlohmann::json config = {
      {"architectures", {model_type == "gemma2" ? "Gemma2ForCausalLM" : "Gemma3ForCausalLM"}},
      {"model_type", model_type},
      {"vocab_size", 32},
      {"hidden_size", 16},
      {"intermediate_size", 32},
      {"num_hidden_layers", 2},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 2},
      {"head_dim", 8},
      {"max_position_embeddings", 128},
      {"sliding_window", 16}};
  config.merge_patch(patch);
  return config.dump();
}

absl::StatusOr<ModelConfig> parse(const std::string& model_type, const nlohmann::json& patch) {
  return parse_model_config(gemma_config(model_type, patch), "/models/g/config.json");
}

std::string error(const std::string& model_type, const nlohmann::json& patch) {
  auto config = parse(model_type, patch);
  EXPECT_FALSE(config.ok());
  if (config.ok()) return "";
  EXPECT_THAT(config.status().message(), HasSubstr("/models/g/config.json"));
  return std::string(config.status().message());
}

TEST(GemmaConfigTest, AbsentKeysTakeTheClassDefaults) {
  auto g2 = parse("gemma2", {{"num_key_value_heads", nullptr},
                             {"head_dim", nullptr},
                             {"sliding_window", nullptr},
                             {"max_position_embeddings", 8192}});
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(g2->num_key_value_heads, 4);
  EXPECT_EQ(g2->head_dim, 256);
  EXPECT_TRUE(g2->tie_word_embeddings);
  EXPECT_EQ(g2->query_pre_attn_scalar, 256);
  EXPECT_EQ(g2->attn_logit_softcapping, 50.0);
  EXPECT_EQ(g2->final_logit_softcapping, 30.0);
  EXPECT_EQ(g2->layer_window, (std::vector<int64_t>{4096, 0}));  // layers 0, 2, ... slide
  EXPECT_EQ(g2->sliding_window, 4096);
  EXPECT_EQ(g2->eos_token_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(g2->bos_token_id, 2);
  EXPECT_EQ(g2->embedding_multiplier, 4.0f);
  EXPECT_FALSE(g2->qk_norm);
  EXPECT_FALSE(g2->sliding_rope.has_value());

  auto g3 = parse("gemma3_text", {{"num_hidden_layers", 7}});
  ASSERT_TRUE(g3.ok()) << g3.status();
  EXPECT_TRUE(g3->qk_norm);
  EXPECT_FALSE(g3->attn_logit_softcapping.has_value());
  EXPECT_FALSE(g3->final_logit_softcapping.has_value());
  EXPECT_EQ(g3->layer_window, (std::vector<int64_t>{16, 16, 16, 16, 16, 0, 16}));
  EXPECT_EQ(g3->rope_theta, 1e6);
  ASSERT_TRUE(g3->sliding_rope.has_value());
  EXPECT_EQ(g3->sliding_rope->rope_theta, 1e4);
  EXPECT_EQ(g3->rotary_dim, 8);
}

TEST(GemmaConfigTest, EmbeddingMultiplierIsRoundedToTheCheckpointDtype) {
  auto f32 = parse("gemma2", {{"hidden_size", 3072}});
  auto bf16 = parse("gemma2", {{"hidden_size", 3072}, {"torch_dtype", "bfloat16"}});
  ASSERT_TRUE(f32.ok() && bf16.ok());
  EXPECT_EQ(f32->embedding_multiplier, static_cast<float>(std::sqrt(3072.0)));
  EXPECT_EQ(bf16->embedding_multiplier, 55.5f);  // transformers' comment: 55.4256 becomes 55.5
}

TEST(GemmaConfigTest, Gemma3RopeLegacyAndPerLayerTypeForms) {
  auto legacy =
      parse("gemma3_text", {{"rope_theta", 5e5},
                            {"rope_local_base_freq", 2e4},
                            {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}});
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(legacy->rope_theta, 5e5);
  EXPECT_EQ(legacy->rope_scaling.type, RopeScalingType::kLinear);
  EXPECT_EQ(legacy->rope_scaling.factor, 8.0);
  EXPECT_EQ(legacy->sliding_rope->rope_theta, 2e4);
  EXPECT_EQ(legacy->sliding_rope->rope_scaling.type, RopeScalingType::kDefault);

  auto nested =
      parse("gemma3_text", {{"rope_parameters",
                             {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 3e5}}},
                              {"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}}}}},
                            {"rope_local_base_freq", 9e3}});
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->rope_theta, 3e5);
  EXPECT_EQ(nested->rope_scaling.type, RopeScalingType::kDefault);
  EXPECT_EQ(nested->sliding_rope->rope_theta, 9e3);
  EXPECT_EQ(nested->sliding_rope->rope_scaling.type, RopeScalingType::kLinear);
}

TEST(GemmaConfigTest, UnimplementedOrAmbiguousFieldsAreRefusedByName) {
  EXPECT_THAT(error("gemma2", {{"hidden_activation", "gelu"}}),
              HasSubstr("field 'hidden_activation' is 'gelu' (weft implements gelu_pytorch_tanh"));
  EXPECT_THAT(
      error("gemma2", {{"hidden_activation", nullptr}, {"hidden_act", "silu"}}),
      HasSubstr("field 'hidden_act' is 'silu' but 'hidden_activation' is 'gelu_pytorch_tanh'"));
  EXPECT_TRUE(parse("gemma2", {{"hidden_act", "gelu_pytorch_tanh"}}).ok());
  EXPECT_THAT(error("gemma3_text", {{"use_bidirectional_attention", true}}),
              HasSubstr("field 'use_bidirectional_attention' is true"));
  EXPECT_THAT(error("gemma2", {{"use_bidirectional_attention", true}}),
              HasSubstr("use_bidirectional_attention"));
  EXPECT_THAT(error("gemma3_text", {{"attn_logit_softcapping", 50.0}}),
              HasSubstr("field 'attn_logit_softcapping' is 50: transformers' Gemma3ForCausalLM "
                        "does not apply it"));
  EXPECT_TRUE(parse("gemma3_text", {{"final_logit_softcapping", 30.0}}).ok());
  EXPECT_THAT(error("gemma2", {{"final_logit_softcapping", 0.0}}),
              HasSubstr("field 'final_logit_softcapping' must be positive or null"));
  EXPECT_THAT(error("gemma2", {{"attn_logit_softcapping", -1.0}}),
              HasSubstr("field 'attn_logit_softcapping' must be positive or null"));
  EXPECT_THAT(error("gemma2", {{"query_pre_attn_scalar", 0}}),
              HasSubstr("'query_pre_attn_scalar' must be positive"));
  EXPECT_THAT(error("gemma2", {{"query_pre_attn_scalar", 168.5}}),
              HasSubstr("field 'query_pre_attn_scalar' must be an integer"));
}

TEST(GemmaConfigTest, StrictConfigClassErrorsNameTheField) {
  nlohmann::json null_kv = nlohmann::json::parse(gemma_config("gemma2", nlohmann::json::object()));
  null_kv["num_key_value_heads"] = nullptr;
  auto status = parse_model_config(null_kv.dump(), "c.json").status();
  EXPECT_THAT(status.message(), HasSubstr("field 'num_key_value_heads' is null"));
  nlohmann::json null_head =
      nlohmann::json::parse(gemma_config("gemma3_text", nlohmann::json::object()));
  null_head["head_dim"] = nullptr;
  EXPECT_THAT(parse_model_config(null_head.dump(), "c.json").status().message(),
              HasSubstr("field 'head_dim' is null"));
  // validate_architecture: hidden_size % heads even with an explicit head_dim.
  EXPECT_THAT(
      error("gemma2", {{"hidden_size", 18}}),
      HasSubstr("field 'hidden_size' (18) must be a multiple of 'num_attention_heads' (4)"));
}

TEST(GemmaConfigTest, WindowErrorsNameTheField) {
  EXPECT_THAT(error("gemma2", {{"sliding_window", 0}}),
              HasSubstr("field 'sliding_window' must be positive"));
  nlohmann::json null_window =
      nlohmann::json::parse(gemma_config("gemma2", nlohmann::json::object()));
  null_window["sliding_window"] = nullptr;
  EXPECT_THAT(parse_model_config(null_window.dump(), "c.json").status().message(),
              HasSubstr("layer 0 is sliding_attention (the default layer pattern) but field "
                        "'sliding_window' is null"));
  null_window["layer_types"] = {"full_attention", "full_attention"};
  EXPECT_TRUE(parse_model_config(null_window.dump(), "c.json").ok());
  EXPECT_THAT(
      error("gemma2", {{"sliding_window", 4096}}),
      HasSubstr("field 'sliding_window' (4096) is larger than 'max_position_embeddings' (128)"));
  EXPECT_THAT(error("gemma3_text", {{"layer_types", {"sliding_attention"}}}),
              HasSubstr("field 'layer_types' must be a list of 2 layer types"));
  EXPECT_THAT(error("gemma3_text", {{"layer_types", {"sliding_attention", "chunked_attention"}}}),
              HasSubstr("field 'layer_types[1]' is \"chunked_attention\""));
  EXPECT_THAT(error("gemma3_text", {{"sliding_window_pattern", 0}}),
              HasSubstr("field 'sliding_window_pattern' must be positive"));
  auto pattern = parse("gemma3_text", {{"num_hidden_layers", 4}, {"sliding_window_pattern", 2}});
  ASSERT_TRUE(pattern.ok()) << pattern.status();
  EXPECT_EQ(pattern->layer_window, (std::vector<int64_t>{16, 0, 16, 0}));
  EXPECT_EQ(kv_window(*pattern), 0);  // full layers read the whole context: nothing is freed
}

TEST(GemmaConfigTest, Gemma3RopeErrorsNameTheField) {
  EXPECT_THAT(
      error("gemma3_text", {{"rope_parameters", {{"rope_type", "linear"}, {"factor", 8.0}}}}),
      HasSubstr("field 'rope_parameters' has key"));
  EXPECT_THAT(error("gemma3_text", {{"rope_scaling", {{"type", "linear"}, {"factor", 8.0}}}}),
              HasSubstr("field 'rope_scaling.type' is 'linear' but the full_attention layers' rope "
                        "type is 'default'"));
  EXPECT_THAT(error("gemma3_text", {{"rope_scaling", {{"factor", 8.0}}}}),
              HasSubstr("field 'rope_scaling.factor' is set but the full_attention layers' rope "
                        "type is default"));
  EXPECT_THAT(
      error("gemma3_text", {{"rope_parameters",
                             {{"sliding_attention", {{"rope_type", "yarn"}, {"factor", 2.0}}}}}}),
      HasSubstr("unknown rope type 'yarn' in field 'rope_parameters.sliding_attention.rope_type' "
                "(supported for Gemma3ForCausalLM: default, linear)"));
  EXPECT_THAT(
      error("gemma3_text", {{"rope_parameters", {{"full_attention", {{"rope_type", "linear"}}}}}}),
      HasSubstr("missing field 'rope_parameters.full_attention.factor' for rope type linear"));
  EXPECT_THAT(error("gemma3_text",
                    {{"rope_parameters", {{"full_attention", {{"partial_rotary_factor", 0.5}}}}}}),
              HasSubstr("field 'rope_parameters.full_attention.partial_rotary_factor' is 0.5"));
  EXPECT_THAT(error("gemma3_text", {{"partial_rotary_factor", 0.5}}),
              HasSubstr("field 'partial_rotary_factor' is 0.5"));
  EXPECT_THAT(
      error("gemma3_text", {{"rope_parameters", {{"full_attention", {{"rope_theta", -1.0}}}}}}),
      HasSubstr("field 'rope_parameters.full_attention.rope_theta' must be positive"));
  EXPECT_THAT(error("gemma2", {{"partial_rotary_factor", 0.5}}),
              HasSubstr("partial_rotary_factor"));
}

}  // namespace
}  // namespace weft
