#include "model/model_config.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/json_reader.h"
#include "model_test_util.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::write_bytes;

nlohmann::json load_reference() {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/tests/unit/model/model_config_reference.json");
  EXPECT_TRUE(in.good())
      << "model_config_reference.json missing; run gen_model_config_reference.py";
  return nlohmann::json::parse(in);
}

// Each case is a config.json text and what transformers resolved from it (defaults included).
TEST(ModelConfigTest, MatchesTransformersResolution) {
  const nlohmann::json reference = load_reference();
  ASSERT_GE(reference["cases"].size(), 8u);
  for (const auto& [name, c] : reference["cases"].items()) {
    SCOPED_TRACE(name);
    auto config = parse_model_config(c["config_json"].get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->architecture, c["architecture"].get<std::string>());
    EXPECT_EQ(config->head_dim, c["head_dim"].get<int64_t>());
    EXPECT_EQ(config->num_key_value_heads, c["num_key_value_heads"].get<int64_t>());
    EXPECT_EQ(config->rope_theta, c["rope_theta"].get<double>());
    const std::string rope_type = c["rope_type"];
    const RopeScalingType expected_type = rope_type == "llama3"     ? RopeScalingType::kLlama3
                                          : rope_type == "linear"   ? RopeScalingType::kLinear
                                          : rope_type == "longrope" ? RopeScalingType::kLongRope
                                          : rope_type == "yarn"     ? RopeScalingType::kYarn
                                          : rope_type == "dynamic"  ? RopeScalingType::kDynamic
                                                                    : RopeScalingType::kDefault;
    EXPECT_EQ(config->rope_scaling.type, expected_type);
    if (c.contains("rope_factor")) {
      EXPECT_EQ(config->rope_scaling.factor, c["rope_factor"].get<double>());
    }
    EXPECT_EQ(config->rms_norm_eps, c["rms_norm_eps"].get<double>());
    EXPECT_EQ(config->rotary_dim, c["rotary_dim"].get<int64_t>());
    EXPECT_EQ(config->fused_qkv_proj, c["fused_qkv_gate_up"].get<bool>());
    EXPECT_EQ(config->fused_gate_up_proj, c["fused_qkv_gate_up"].get<bool>());
    if (c.contains("original_max_position_embeddings")) {
      EXPECT_EQ(config->rope_scaling.original_max_position_embeddings,
                c["original_max_position_embeddings"].get<int64_t>());
    }
    if (c["sliding_window"].is_null()) {
      EXPECT_FALSE(config->sliding_window.has_value());
    } else {
      ASSERT_TRUE(config->sliding_window.has_value());
      EXPECT_EQ(*config->sliding_window, c["sliding_window"].get<int64_t>());
    }
    EXPECT_EQ(config->layer_window, c["layer_window"].get<std::vector<int64_t>>());
    EXPECT_EQ(config->tie_word_embeddings, c["tie_word_embeddings"].get<bool>());
    EXPECT_EQ(config->attention_bias, c["attention_bias"].get<bool>());
    EXPECT_EQ(config->o_proj_bias, c["o_proj_bias"].get<bool>());
    EXPECT_EQ(config->mlp_bias, c["mlp_bias"].get<bool>());
    EXPECT_EQ(config->qk_norm, c["qk_norm"].get<bool>());
    const nlohmann::json& moe = c["moe"];
    EXPECT_EQ(config->moe.num_experts, moe["num_experts"].get<int64_t>());
    if (config->moe.enabled() && moe["num_experts"].get<int64_t>() > 0) {
      EXPECT_EQ(config->moe.experts_per_token, moe["experts_per_token"].get<int64_t>());
      EXPECT_EQ(config->moe.normalize_topk, moe["normalize_topk"].get<bool>());
      EXPECT_EQ(config->moe.expert_intermediate_size, moe["expert_intermediate_size"].get<int64_t>());
      EXPECT_EQ(config->moe.shared_expert_intermediate_size,
                moe["shared_expert_intermediate_size"].get<int64_t>());
      EXPECT_EQ(config->moe.sparse_layers, moe["sparse_layers"].get<std::vector<bool>>());
    }
  }
}

TEST(ModelConfigTest, ReadsLlama3FieldsDtypeAndTokenIds) {
  const nlohmann::json reference = load_reference();
  auto config = parse_model_config(
      reference["cases"]["llama_llama3_rope_parameters"]["config_json"].get<std::string>());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model_type, "llama");
  EXPECT_EQ(config->vocab_size, 128256);
  EXPECT_EQ(config->hidden_size, 256);
  EXPECT_EQ(config->intermediate_size, 96);
  EXPECT_EQ(config->num_hidden_layers, 1);
  EXPECT_EQ(config->max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(config->rms_norm_eps, 1e-5);
  EXPECT_EQ(config->rope_scaling.factor, 8.0);
  EXPECT_EQ(config->rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(config->rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(config->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(config->torch_dtype, DType::kBF16);
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(config->bos_token_id, 128000);

  auto mistral = parse_model_config(
      reference["cases"]["mistral_explicit_head_dim"]["config_json"].get<std::string>());
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_EQ(mistral->torch_dtype, DType::kBF16);  // the newer "dtype" key
  EXPECT_TRUE(mistral->eos_token_ids.empty());
}

TEST(ModelConfigTest, Llama3OriginalContextDefaultsToMaxPositions) {
  auto config = parse_model_config(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 8,
      "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
      "max_position_embeddings": 2048, "rope_scaling": {"type": "llama3", "factor": 2,
      "low_freq_factor": 1, "high_freq_factor": 4}})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rope_scaling.original_max_position_embeddings, 2048);
}

// A minimal valid Llama config with `patch` merged in (null values delete keys).
std::string llama_config(const nlohmann::json& patch) {
  nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                           {"model_type", "llama"},
                           {"vocab_size", 32},
                           {"hidden_size", 16},
                           {"intermediate_size", 32},
                           {"num_hidden_layers", 2},
                           {"num_attention_heads", 4},
                           {"num_key_value_heads", 2},
                           {"max_position_embeddings", 128}};
  config.merge_patch(patch);
  return config.dump();
}

absl::Status parse_error(const nlohmann::json& patch) {
  return parse_model_config(llama_config(patch), "/models/x/config.json").status();
}

TEST(ModelConfigErrorTest, UnsupportedArchitectureListsSupported) {
  const absl::Status status = parse_error({{"architectures", {"GPT2LMHeadModel"}}});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("/models/x/config.json"));
  EXPECT_THAT(status.message(), HasSubstr("GPT2LMHeadModel"));
  EXPECT_THAT(status.message(), HasSubstr("architectures"));
  EXPECT_THAT(status.message(),
              HasSubstr("LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                        "Phi3ForCausalLM"));
  const absl::Status by_type = parse_error({{"architectures", nullptr}, {"model_type", "gpt2"}});
  EXPECT_THAT(by_type.message(), HasSubstr("unsupported model_type 'gpt2'"));
}

TEST(ModelConfigErrorTest, MissingField) {
  const absl::Status status = parse_error({{"hidden_size", nullptr}});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("/models/x/config.json"));
  EXPECT_THAT(status.message(), HasSubstr("missing required field 'hidden_size'"));
}

TEST(ModelConfigErrorTest, WrongTypeNamesFieldAndExpectedType) {
  absl::Status status = parse_error({{"hidden_size", "16"}});
  EXPECT_THAT(status.message(), HasSubstr("field 'hidden_size' must be an integer, got string"));
  status = parse_error({{"num_attention_heads", 4.0}});
  EXPECT_THAT(status.message(),
              HasSubstr("field 'num_attention_heads' must be an integer, got number"));
  status = parse_error({{"tie_word_embeddings", "false"}});
  EXPECT_THAT(status.message(), HasSubstr("field 'tie_word_embeddings' must be a boolean"));
  status = parse_error({{"rms_norm_eps", "1e-5"}});
  EXPECT_THAT(status.message(), HasSubstr("field 'rms_norm_eps' must be a number"));
  status = parse_error({{"eos_token_id", {1, "2"}}});
  EXPECT_THAT(status.message(),
              HasSubstr("field 'eos_token_id' must be an integer or a list of integers"));
  status = parse_error({{"rope_scaling", "linear"}});
  EXPECT_THAT(status.message(), HasSubstr("field 'rope_scaling' must be an object"));
  status = parse_error({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", "1e4"}}}});
  EXPECT_THAT(status.message(), HasSubstr("field 'rope_parameters.rope_theta' must be a number"));
  status = parse_error({{"architectures", "LlamaForCausalLM"}});
  EXPECT_THAT(status.message(),
              HasSubstr("field 'architectures' must be a non-empty list of strings"));
  status = parse_error({{"torch_dtype", "float64"}});
  EXPECT_THAT(status.message(), HasSubstr("field 'torch_dtype' is 'float64'"));
  EXPECT_THAT(parse_model_config("[1, 2]", "c.json").status().message(),
              HasSubstr("c.json: expected a JSON object, got array"));
}

TEST(ModelConfigErrorTest, NonPositiveSizes) {
  absl::Status status = parse_error({{"num_hidden_layers", 0}});
  EXPECT_THAT(status.message(), HasSubstr("field 'num_hidden_layers' must be positive, got 0"));
  status = parse_error({{"vocab_size", -5}});
  EXPECT_THAT(status.message(), HasSubstr("field 'vocab_size' must be positive, got -5"));
  status = parse_error({{"head_dim", 0}});
  EXPECT_THAT(status.message(), HasSubstr("field 'head_dim' must be positive"));
}

TEST(ModelConfigErrorTest, HeadsNotDivisible) {
  const absl::Status status = parse_error({{"num_key_value_heads", 3}});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("'num_attention_heads' (4) must be a multiple of "
                                          "'num_key_value_heads' (3)"));
  const absl::Status hidden = parse_error({{"hidden_size", 18}});
  EXPECT_THAT(hidden.message(),
              HasSubstr("'hidden_size' (18) must be divisible by 'num_attention_heads' (4)"));
  // With an explicit head_dim the hidden size need not divide.
  EXPECT_TRUE(parse_error({{"hidden_size", 18}, {"head_dim", 8}}).ok());
}

TEST(ModelConfigErrorTest, UnknownRopeType) {
  absl::Status status = parse_error({{"rope_scaling", {{"rope_type", "ntk-by-parts"}, {"factor", 4.0}}}});
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(),
              HasSubstr("unknown rope type 'ntk-by-parts' in field 'rope_scaling.rope_type'"));
  EXPECT_THAT(status.message(), HasSubstr("default, linear, dynamic, llama3, yarn"));
  status = parse_error({{"rope_parameters", {{"type", "dynamic"}}}});
  EXPECT_THAT(status.message(), HasSubstr("missing field 'rope_parameters.factor' for rope type dynamic"));
  status = parse_error({{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 0.5}}}});
  EXPECT_THAT(status.message(),
              HasSubstr("field 'rope_scaling.factor' is 0.5, expected >= 1 for rope type dynamic"));
  status = parse_error({{"rope_scaling", {{"rope_type", "yarn"}}}});
  EXPECT_THAT(status.message(), HasSubstr("missing field 'rope_scaling.factor' for rope type yarn"));
  status = parse_error({{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}, {"attention_factor", -1}}}});
  EXPECT_THAT(status.message(), HasSubstr("field 'rope_scaling.attention_factor' must be positive"));
  status = parse_error({{"rope_scaling", {{"rope_type", "linear"}}}});
  EXPECT_THAT(status.message(),
              HasSubstr("missing field 'rope_scaling.factor' for rope type linear"));
  status = parse_error(
      {{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0}}}});
  EXPECT_THAT(status.message(), HasSubstr("missing field 'rope_scaling.low_freq_factor'"));
  status = parse_error({{"rope_scaling",
                         {{"rope_type", "llama3"},
                          {"factor", 8.0},
                          {"low_freq_factor", 4.0},
                          {"high_freq_factor", 4.0}}}});
  EXPECT_THAT(status.message(), HasSubstr("must be greater than"));
}

// Regression (issue 18): `"hidden_act": "swish_of_doom"` loaded and answered. Fields that change
// the computation and are not implemented are refused by name.
TEST(ModelConfigErrorTest, UnimplementedComputationFieldsAreRefusedByName) {
  EXPECT_THAT(parse_error({{"hidden_act", "swish_of_doom"}}).message(),
              HasSubstr("config.json: field 'hidden_act' is 'swish_of_doom' (weft implements silu)"));
  EXPECT_THAT(parse_error({{"hidden_act", "gelu_pytorch_tanh"}}).message(), HasSubstr("hidden_act"));
  EXPECT_TRUE(parse_error({{"hidden_act", "silu"}}).ok());
  EXPECT_TRUE(parse_error({{"hidden_act", "swish"}}).ok());  // the same function in transformers
  EXPECT_THAT(parse_error({{"hidden_act", 3}}).message(), HasSubstr("field 'hidden_act' must be a string"));
  EXPECT_THAT(parse_error({{"quantization_config", {{"quant_method", "bitsandbytes"}}}}).message(),
              HasSubstr("quantization_config field 'quant_method' is 'bitsandbytes'"));
  EXPECT_THAT(parse_error({{"quantization_config", 3}}).message(),
              HasSubstr("field 'quantization_config' must be an object"));
  EXPECT_THAT(parse_error({{"partial_rotary_factor", 0.5}}).message(), HasSubstr("partial_rotary_factor"));
  EXPECT_TRUE(parse_error({{"partial_rotary_factor", 1.0}}).ok());
}

TEST(ModelConfigErrorTest, BadAttentionWindowsNameTheField) {
  EXPECT_THAT(parse_error({{"architectures", {"MistralForCausalLM"}}, {"sliding_window", 4096},
                           {"max_position_embeddings", 128}}).message(),
              HasSubstr("field 'sliding_window' (4096) is larger than 'max_position_embeddings' (128)"));
  EXPECT_THAT(parse_error({{"architectures", {"MistralForCausalLM"}}, {"sliding_window", 0}}).message(),
              HasSubstr("field 'sliding_window' must be positive"));
  const nlohmann::json qwen = {{"architectures", {"Qwen2ForCausalLM"}}, {"use_sliding_window", true},
                               {"sliding_window", 16}};
  nlohmann::json bad_type = qwen;
  bad_type["layer_types"] = {"full_attention", "chunked_attention"};
  EXPECT_THAT(parse_error(bad_type).message(), HasSubstr("field 'layer_types[1]' is \"chunked_attention\""));
  nlohmann::json bad_length = qwen;
  bad_length["layer_types"] = {"full_attention"};
  EXPECT_THAT(parse_error(bad_length).message(), HasSubstr("field 'layer_types' must be a list of 2 layer types"));
  nlohmann::json no_window = qwen;
  no_window["use_sliding_window"] = false;
  no_window["layer_types"] = {"sliding_attention", "full_attention"};
  EXPECT_THAT(parse_error(no_window).message(), HasSubstr("marks sliding_attention layers but no window is set"));
  // A window only the unused config holds is not an error (Qwen2.5 ships 131072 > 32768 unused).
  nlohmann::json unused = qwen;
  unused["use_sliding_window"] = false;
  unused["sliding_window"] = 100000;
  EXPECT_TRUE(parse_error(unused).ok());
}

TEST(ModelConfigErrorTest, BadMixtureOfExpertsFieldsNameTheField) {
  const nlohmann::json qwen = {{"architectures", {"Qwen3MoeForCausalLM"}}, {"num_key_value_heads", 2},
                               {"num_experts", 4}, {"num_experts_per_tok", 2}};
  nlohmann::json too_many = qwen;
  too_many["num_experts_per_tok"] = 5;
  EXPECT_THAT(parse_error(too_many).message(),
              HasSubstr("field 'num_experts_per_tok' (5) is larger than the number of experts (4)"));
  nlohmann::json zero = qwen;
  zero["num_experts"] = 0;
  EXPECT_THAT(parse_error(zero).message(), HasSubstr("field 'num_experts' must be positive"));
  nlohmann::json disagree = qwen;
  disagree["num_local_experts"] = 8;
  EXPECT_THAT(parse_error(disagree).message(),
              HasSubstr("fields 'num_experts' (4) and 'num_local_experts' (8) disagree"));
  nlohmann::json step = qwen;
  step["decoder_sparse_step"] = 0;
  EXPECT_THAT(parse_error(step).message(), HasSubstr("field 'decoder_sparse_step' must be at least 1"));
  nlohmann::json dense = qwen;
  dense["mlp_only_layers"] = {0, 7};
  EXPECT_THAT(parse_error(dense).message(),
              HasSubstr("field 'mlp_only_layers' holds 7, expected layer indices in [0, 2)"));
  dense["mlp_only_layers"] = "0";
  EXPECT_THAT(parse_error(dense).message(), HasSubstr("field 'mlp_only_layers' must be a list of layer indices"));
  const nlohmann::json mixtral = {{"architectures", {"MixtralForCausalLM"}}, {"num_key_value_heads", 2},
                                  {"num_local_experts", 2}, {"num_experts_per_tok", 3}};
  EXPECT_THAT(parse_error(mixtral).message(),
              HasSubstr("field 'num_experts_per_tok' (3) is larger than the number of experts (2)"));
}

// A minimal valid Phi3 config (head_dim 4, rotary_dim 4 unless patched) with `patch` merged in.
absl::StatusOr<ModelConfig> parse_phi3(const nlohmann::json& patch) {
  nlohmann::json config = nlohmann::json::parse(
      llama_config({{"architectures", {"Phi3ForCausalLM"}}, {"model_type", "phi3"}}));
  config.merge_patch(patch);
  return parse_model_config(config.dump(), "/models/phi/config.json");
}

nlohmann::json longrope(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json rope = {
      {"type", "longrope"}, {"short_factor", {1.0, 2.0}}, {"long_factor", {3.0, 4.0}}};
  rope.merge_patch(extra);
  return rope;
}

TEST(ModelConfigTest, Phi3LayoutDefaultsAndLongRope) {
  auto config = parse_phi3({{"num_key_value_heads", nullptr},
                            {"max_position_embeddings", 256},
                            {"original_max_position_embeddings", 64},
                            {"rope_scaling", longrope()}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "Phi3ForCausalLM");
  EXPECT_TRUE(config->fused_qkv_proj);
  EXPECT_TRUE(config->fused_gate_up_proj);
  EXPECT_FALSE(config->attention_bias);
  EXPECT_EQ(config->num_key_value_heads, 4);
  EXPECT_EQ(config->rms_norm_eps, 1e-5);
  EXPECT_EQ(config->rotary_dim, 4);
  EXPECT_EQ(config->eos_token_ids, std::vector<int64_t>{32000});  // Phi3Config's defaults
  EXPECT_EQ(config->bos_token_id, 1);
  EXPECT_FALSE(config->sliding_window.has_value());
  EXPECT_EQ(config->layer_window, (std::vector<int64_t>{0, 0}));
  const RopeScaling& rope = config->rope_scaling;
  EXPECT_EQ(rope.type, RopeScalingType::kLongRope);
  EXPECT_EQ(rope.original_max_position_embeddings, 64);
  EXPECT_EQ(rope.factor, 4.0);  // max_position_embeddings / original
  EXPECT_DOUBLE_EQ(rope.attention_factor, std::sqrt(1.0 + std::log(4.0) / std::log(64.0)));
  EXPECT_EQ(rope.short_factor, (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(rope.long_factor, (std::vector<double>{3.0, 4.0}));
  // Phi3Config's class default for the original length is 4096, whatever the dict says.
  config = parse_phi3({{"rope_scaling", longrope({{"original_max_position_embeddings", 32}})}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rope_scaling.original_max_position_embeddings, 4096);
  EXPECT_EQ(config->rope_scaling.attention_factor, 1.0);  // 128 / 4096 < 1
  // Every layer takes the window, even one larger than the context (Phi-3.5 ships 262144).
  config = parse_phi3({{"sliding_window", 1000}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->layer_window, (std::vector<int64_t>{1000, 1000}));
  // An explicit null is no token, as in transformers.
  nlohmann::json no_eos =
      nlohmann::json::parse(llama_config({{"architectures", {"Phi3ForCausalLM"}}}));
  no_eos["eos_token_id"] = nullptr;
  config = parse_model_config(no_eos.dump());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->eos_token_ids.empty());
}

TEST(ModelConfigErrorTest, Phi3RopeAndPartialRotaryErrorsNameTheField) {
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}}).status().message(),
      HasSubstr("unknown rope type 'linear' in field 'rope_scaling.type' (supported for "
                "Phi3ForCausalLM: default, longrope)"));
  EXPECT_TRUE(parse_phi3({{"rope_scaling", longrope({{"type", "su"}})}}).ok());
  EXPECT_TRUE(parse_phi3({{"rope_scaling", longrope({{"type", "yarn"}})}}).ok());
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", longrope({{"short_factor", nullptr}})}}).status().message(),
      HasSubstr("missing field 'rope_scaling.short_factor' for rope type longrope"));
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", longrope({{"long_factor", {1.0, 2.0, 3.0}}})}})
          .status()
          .message(),
      HasSubstr("field 'rope_scaling.long_factor' has 3 entries, expected rotary_dim / 2 = 2"));
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", longrope({{"long_factor", {1.0, "x"}}})}}).status().message(),
      HasSubstr("field 'rope_scaling.long_factor' must be a list of numbers"));
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", longrope({{"short_factor", {1.0, 0.0}}})}}).status().message(),
      HasSubstr("expected positive factors"));
  EXPECT_THAT(
      parse_phi3({{"rope_scaling", longrope({{"attention_factor", -1.0}})}}).status().message(),
      HasSubstr("field 'rope_scaling.attention_factor' must be positive"));
  // head_dim 4: 0.5 rotates 2 dims; 0.25 would rotate 1; 1.5 is out of range.
  auto half =
      parse_phi3({{"partial_rotary_factor", 0.5},
                  {"rope_scaling", longrope({{"short_factor", {1.0}}, {"long_factor", {2.0}}})}});
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->rotary_dim, 2);
  EXPECT_THAT(
      parse_phi3({{"partial_rotary_factor", 0.25}}).status().message(),
      HasSubstr("int(head_dim 4 * 0.25) = 1 rotary dimensions, expected an even number >= 2"));
  EXPECT_THAT(parse_phi3({{"partial_rotary_factor", 1.5}}).status().message(),
              HasSubstr("field 'partial_rotary_factor' is 1.5, expected a value in (0, 1]"));
  EXPECT_THAT(
      parse_phi3({{"rope_parameters", {{"rope_type", "default"}, {"partial_rotary_factor", 0.0}}}})
          .status()
          .message(),
      HasSubstr("field 'rope_parameters.partial_rotary_factor' is 0"));
  // Other architectures rotate the whole head in transformers: refused wherever it is written.
  EXPECT_THAT(
      parse_error({{"rope_parameters", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}}})
          .message(),
      HasSubstr("field 'rope_parameters.partial_rotary_factor' is 0.5 (weft rotates the whole "
                "head for LlamaForCausalLM: 1.0)"));
  EXPECT_THAT(parse_error({{"rope_scaling", longrope()}}).message(),
              HasSubstr("unknown rope type 'longrope'"));
}

TEST(ModelConfigErrorTest, MalformedJsonNamesFile) {
  TempDir dir;
  write_bytes(dir / "config.json", "{\"architectures\": [\"LlamaForCausalLM\",");
  const absl::Status status = load_model_config(dir.path()).status();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr((dir / "config.json").string()));
  EXPECT_THAT(status.message(), HasSubstr("not valid JSON"));
  const absl::Status missing = load_model_config(dir / "nope").status();
  EXPECT_THAT(missing.message(), HasSubstr("nope/config.json"));
}

TEST(ModelConfigErrorTest, DuplicateKey) {
  const absl::Status status =
      parse_model_config(R"({"hidden_size": 16, "hidden_size": 32})", "dup.json").status();
  EXPECT_THAT(status.message(), HasSubstr("dup.json: duplicate key 'hidden_size'"));
}

TEST(GenerationConfigTest, ParsesFields) {
  auto config = parse_generation_config(R"({"bos_token_id": 1, "eos_token_id": [2, 7],
      "pad_token_id": 0, "temperature": 0.6, "top_p": 0.9, "top_k": 20, "repetition_penalty": 1.1,
      "max_new_tokens": 64, "do_sample": true, "transformers_version": "5.0"})");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(config->bos_token_id, 1);
  EXPECT_EQ(config->pad_token_id, 0);
  EXPECT_EQ(config->temperature, 0.6);
  EXPECT_EQ(config->top_p, 0.9);
  EXPECT_EQ(config->top_k, 20);
  EXPECT_EQ(config->repetition_penalty, 1.1);
  EXPECT_EQ(config->max_new_tokens, 64);
  EXPECT_TRUE(config->do_sample);

  auto single = parse_generation_config(R"({"eos_token_id": 5, "temperature": 1})");
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->eos_token_ids, (std::vector<int64_t>{5}));
  EXPECT_EQ(single->temperature, 1.0);
  EXPECT_FALSE(single->top_k.has_value());
  EXPECT_FALSE(single->do_sample);

  const absl::Status bad = parse_generation_config(R"({"top_k": 0.5})", "gen.json").status();
  EXPECT_THAT(bad.message(), HasSubstr("gen.json: field 'top_k' must be an integer, got number"));
  const absl::Status bad_sample =
      parse_generation_config(R"({"do_sample": 1})", "gen.json").status();
  EXPECT_THAT(bad_sample.message(), HasSubstr("field 'do_sample' must be a boolean"));
}

TEST(GenerationConfigTest, MissingFileUsesModelConfigTokens) {
  TempDir dir;
  ModelConfig model;
  model.eos_token_ids = {3, 4};
  model.bos_token_id = 1;
  auto config = load_generation_config(dir.path(), model);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(config->bos_token_id, 1);
  EXPECT_FALSE(config->temperature.has_value());

  write_bytes(dir / "generation_config.json", R"({"eos_token_id": 9, "temperature": 0.7})");
  config = load_generation_config(dir.path(), model);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->eos_token_ids, (std::vector<int64_t>{9}));
  EXPECT_EQ(config->temperature, 0.7);

  write_bytes(dir / "generation_config.json", "{oops");
  const absl::Status status = load_generation_config(dir.path(), model).status();
  EXPECT_THAT(status.message(), HasSubstr((dir / "generation_config.json").string()));
}

}  // namespace
}  // namespace weft
