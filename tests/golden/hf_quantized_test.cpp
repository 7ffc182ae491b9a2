// Hugging Face quantized checkpoints (compressed-tensors pack-quantized int4 and int-quantized
// int8, written by hf_quant_generate.py with the compressed-tensors package's own compressors)
// in one process: weft's unpacking equals the package's own dequantization, the engine matches
// transformers' float32 forward over those weights (hf_quantized_checks.h states the
// tolerances), each rank holds the bytes its plan says, and every malformed checkpoint is a
// clear error naming file, tensor and field.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/half.h"
#include "golden_harness.h"
#include "hf_quantized_checks.h"
#include "model/json_reader.h"
#include "model/safetensors.h"
#include "model/weight_plan.h"
#include "model/weight_store.h"
#include "weft/kernels/block_quant.h"

namespace weft::golden {
namespace {

const std::vector<std::string> kModels = {"ct_int4_g32_asym",       "ct_int4_g64_sym",
                               "ct_int4_g128_asym",      "ct_int8_channel",
                               "gptq_int4_g64_sym",      "gptq_int4_g32_desc_act",
                               "gptq_int8_per_row_v2",   "awq_int4_g32",
                               "ct_fp8_channel",         "ct_fp8_tensor",
                               "fp8_block128",           "ct_mixed_groups"};

class HfQuantizedTest : public ::testing::TestWithParam<std::string> {};

// Quantized weights as weft holds them (three modules of each checkpoint: hf_quant_generate.py
// DUMPED_MODULES), dequantized, against the exact float32 scale * (q - zero) of the packing
// library's own decompression (compressed-tensors) or of the generator's (GPTQ, AWQ; checked
// there against gptqmodel's): equal, every one. F32 (dequantized at load) and int8 are exact;
// symmetric groups too (the scales are exact in f16, and so is -8 * scale); groups with zero points
// are held with an F32 scale and minimum (I4G*F), where scale * q - scale * zero is exact.
TEST_P(HfQuantizedTest, WeightsEqualThePackagesDequantization) {
  const std::string name = GetParam();
  auto store = WeightStore::open(model_dir(name));
  ASSERT_TRUE(store.ok()) << store.status();
  auto dense = SafetensorsFile::open(model_dir(name) / "dequantized.safetensors");
  ASSERT_TRUE(dense.ok()) << dense.status();
  auto packed = SafetensorsFile::open(model_dir(name) / "model.safetensors");
  ASSERT_TRUE(packed.ok()) << packed.status();
  const CheckpointQuantization& q = store->checkpoint_quantization();
  ASSERT_TRUE(q.enabled());
  int modules = 0;
  for (const auto& [tensor, entry] : (*dense)->entries()) {
    const Tensor expected = *(*dense)->tensor(tensor);
    const int64_t rows = expected.dim(0), cols = expected.dim(1);
    const std::string module = tensor.substr(0, tensor.size() - 7);  // without ".weight"
    ASSERT_TRUE(store->is_quantized_module(module)) << module;
    const CheckpointQuantization& scheme = q.scheme_for(module);
    auto got = store->get(tensor, expected.shape());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->dtype(), scheme.weft_dtype()) << tensor;
    if (got->dtype() == DType::kF8B64) {
      // FP8 held as stored: 1 byte per weight, plus an F32 scale per 64.
      EXPECT_EQ(static_cast<int64_t>(got->nbytes()), rows * cols + rows * cols / 64 * 4) << tensor;
    }
    std::vector<float> row(static_cast<size_t>(cols));
    Tensor row_scales;
    if (got->dtype() == DType::kI8) {
      auto s = store->get(module + ".weight_scale", Shape{rows});
      ASSERT_TRUE(s.ok()) << s.status();
      row_scales = *s;
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (got->dtype() == DType::kI8) {
        for (int64_t c = 0; c < cols; ++c) {
          row[c] = got->data_as<int8_t>()[r * cols + c] * row_scales.data_as<float>()[r];
        }
      } else if (got->dtype() == DType::kF32) {
        for (int64_t c = 0; c < cols; ++c) row[c] = got->data_as<float>()[r * cols + c];
      } else {
        kernels::dequantize_row(got->dtype(),
                                static_cast<const char*>(got->data()) + dtype_nbytes(got->dtype(), r * cols),
                                row.data(), cols);
      }
      for (int64_t c = 0; c < cols; ++c) {
        const float want = expected.data_as<float>()[r * cols + c];
        ASSERT_EQ(row[c], want) << tensor << " [" << r << ", " << c << "]";
      }
    }
    ++modules;
  }
  // hf_quant_generate.py DUMPED_MODULES (fp8_block128 keeps k_proj dense: 32 rows do not tile
  // into its 128 x 128 blocks).
  EXPECT_EQ(modules, name == "fp8_block128" ? 2 : 3);
  std::printf("%s (%s): dequantized weights equal the reference's\n", name.c_str(),
              q.group_schemes.empty() ? dtype_name(q.weft_dtype()) : "config groups");
}

TEST_P(HfQuantizedTest, MatchesTransformersAndHoldsThePlannedBytes) {
  const std::string name = GetParam();
  const Reference ref = load_reference(name);
  LocalEngineOptions options;
  options.model_dir = model_dir(name);
  options.num_threads = 2;
  options.kv.dtype = DType::kF32;
  options.kv.max_blocks = 64;
  auto engine = LocalEngine::create(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  const int64_t planned = planned_one_rank_weight_bytes(**engine, WeightQuantization::kNone);
  EXPECT_EQ(static_cast<int64_t>((*engine)->model().model->weight_bytes()), planned);
  ModelConfig dense_config = (*engine)->model().config;
  dense_config.checkpoint_quantization = CheckpointQuantization{};
  auto layout = stage_layout(static_cast<int>(dense_config.num_hidden_layers), 1, 0);
  // Fewer bytes than dense, unless dequantized at load (F32, more than the f16 / bf16 checkpoint).
  const CheckpointQuantization& stored = (*engine)->model().config.checkpoint_quantization;
  bool dequantized_at_load = false;
  for (const CheckpointQuantization* scheme : stored.schemes()) {
    dequantized_at_load = dequantized_at_load || scheme->weft_dtype() == DType::kF32;
  }
  if (!dequantized_at_load) {
    EXPECT_LT(planned, planned_weight_bytes(dense_config, 1, 1, *layout));
  }
  if (stored.group_schemes.empty() && stored.weft_dtype() == DType::kF8B64) {
    // FP8: every quantized linear weight 68 bytes per 64 (e4m3 + an F32 scale per 64) instead of
    // the dense checkpoint's 2 (bf16); fp8_block128's q_proj is fused with k / v_proj, which its
    // 128 x 128 blocks leave dense, so that fused weight is F32 (4 bytes) instead.
    const ModelConfig& c = dense_config;
    const int64_t h = c.hidden_size, qd = c.num_attention_heads * c.head_dim,
                  kvd = c.num_key_value_heads * c.head_dim;
    const int64_t qkv = h * (qd + 2 * kvd), rest = qd * h + 3 * c.intermediate_size * h;
    ASSERT_EQ(dtype_size(c.torch_dtype), 2u);
    const int64_t per_layer = rest * 68 / 64 - 2 * rest +
                              (name == "fp8_block128" ? 2 * qkv : qkv * 68 / 64 - 2 * qkv);
    EXPECT_EQ(planned, planned_weight_bytes(dense_config, 1, 1, *layout) +
                           c.num_hidden_layers * per_layer);
    std::printf("%s: %lld weight bytes (dense bf16 plan %lld)\n", name.c_str(),
                static_cast<long long>(planned),
                static_cast<long long>(planned_weight_bytes(dense_config, 1, 1, *layout)));
  }

  const QuantizedTolerance tolerance =
      quantized_tolerance((*engine)->model().config.checkpoint_quantization);
  const std::vector<Tensor> logits = score_prompts(**engine, ref.prompts, 7);
  const float worst_logit = max_abs_diff(logits, ref.prompt_logits);
  const GreedyRun run = greedy((*engine)->engine(), ref.prompts, kGreedyTokens);
  int compared = 0;
  float worst_logprob = 0;
  const std::vector<std::string> failures =
      compare_greedy_to_reference(run, ref, tolerance, &compared, &worst_logprob);
  std::printf("%s: max |logit diff| %.4g (bound %.3g), greedy steps compared %d of %d, max top-5 "
              "|logprob diff| %.4g (bound %.3g)\n",
              name.c_str(), worst_logit, tolerance.logits, compared, kNumPrompts * kGreedyTokens,
              worst_logprob, tolerance.logprobs);
  EXPECT_LT(worst_logit, tolerance.logits);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  // Each prompt compares at least its first steps (the first near-tie of these references comes
  // after several tokens), so a mis-decoded model cannot pass on an early stop.
  EXPECT_GE(compared, 4 * kNumPrompts);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, HfQuantizedTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// ct_mixed_groups: every module is held in the layout of the group compressed-tensors' own
// matching assigned it (reference.json module_groups, from match_targets and checked against
// apply_quantization_config): exact name over pattern over class, patterns and ignore entries
// matching from the start of a name. Its bytes are counted here from those layouts, apart from
// the weight plan.
TEST(HfQuantizedMixedGroups, EachModuleIsHeldInItsGroupsLayout) {
  const std::filesystem::path dir = model_dir("ct_mixed_groups");
  std::ifstream in(dir / "reference.json");
  const nlohmann::json info = nlohmann::json::parse(in);
  auto store = WeightStore::open(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  auto config = load_model_config(dir);
  ASSERT_TRUE(config.ok()) << config.status();
  const std::map<std::string, DType> held = {{"group_0", DType::kI4G64}, {"group_1", DType::kI8},
                                             {"group_2", DType::kF8B64}, {"dense", DType::kBF16}};
  int64_t linear_bytes = 0, dense_linear_bytes = 0;
  for (const auto& [module, group_json] : info.at("module_groups").items()) {
    const std::string group = group_json.get<std::string>();
    SCOPED_TRACE(module + " in " + group);
    EXPECT_EQ(store->is_quantized_module(module), group != "dense");
    EXPECT_EQ(config->checkpoint_quantization.quantizes(module), group != "dense");
    const bool attention = module.find("self_attn") != std::string::npos;
    const int64_t kv = config->num_key_value_heads * config->head_dim;
    const bool kv_proj = module.find("k_proj") != std::string::npos ||
                         module.find("v_proj") != std::string::npos;
    const int64_t rows = module.find("down_proj") != std::string::npos ? config->hidden_size
                         : attention ? (kv_proj ? kv : config->num_attention_heads * config->head_dim)
                                     : config->intermediate_size;
    const int64_t cols = module.find("down_proj") != std::string::npos ? config->intermediate_size
                         : module.find("o_proj") != std::string::npos
                             ? config->num_attention_heads * config->head_dim
                             : config->hidden_size;
    auto weight = store->get(module + ".weight", Shape{rows, cols});
    ASSERT_TRUE(weight.ok()) << weight.status();
    EXPECT_EQ(weight->dtype(), held.at(group));
    linear_bytes += static_cast<int64_t>(weight->nbytes()) + (weight->dtype() == DType::kI8 ? rows * 4 : 0);
    dense_linear_bytes += rows * cols * 2;
  }
  EXPECT_EQ(info.at("module_groups").size(), 14u);
  auto layout = stage_layout(static_cast<int>(config->num_hidden_layers), 1, 0);
  ModelConfig dense_config = *config;
  dense_config.checkpoint_quantization = CheckpointQuantization{};
  EXPECT_EQ(planned_weight_bytes(*config, 1, 1, *layout),
            planned_weight_bytes(dense_config, 1, 1, *layout) - dense_linear_bytes + linear_bytes);
  const std::string described = config->checkpoint_quantization.describe();
  for (const char* part : {"group_0 [Linear]", "group_1 [re:.*mlp\\.down, re:.*self_attn\\.v_proj$]",
                           "group_2 [model.layers.1.self_attn.o_proj]", "-> i8", "-> i4g64", "-> f8b64",
                           "kept dense: lm_head, re:model\\.layers\\.0\\.mlp\\.up"}) {
    EXPECT_NE(described.find(part), std::string::npos) << part << " not in: " << described;
  }
}

// --- malformed checkpoints: a copy of a checkpoint with one thing changed -------------------

class BrokenCheckpoint {
 public:
  explicit BrokenCheckpoint(std::string source = "ct_int4_g32_asym") : source_(std::move(source)) {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("weft_broken_ct_" + std::to_string(getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(dir_);
    for (const char* f : {"config.json", "generation_config.json", "model.safetensors"}) {
      std::filesystem::copy_file(model_dir(source_) / f, dir_ / f);
    }
  }
  ~BrokenCheckpoint() { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& dir() const { return dir_; }

  // Rewrites model.safetensors through `edit` of its tensors.
  template <typename Edit>
  void edit_tensors(Edit edit) {
    auto file = SafetensorsFile::open(model_dir(source_) / "model.safetensors");
    ASSERT_TRUE(file.ok());
    std::map<std::string, Tensor> tensors;
    for (const auto& [name, e] : (*file)->entries()) tensors[name] = *(*file)->tensor(name);
    edit(tensors);
    ASSERT_TRUE(write_safetensors(dir_ / "model.safetensors", tensors).ok());
  }
  // Rewrites config.json's quantization_config through `edit`.
  template <typename Edit>
  void edit_config(Edit edit) {
    std::ifstream in(dir_ / "config.json");
    nlohmann::json config = nlohmann::json::parse(in);
    edit(config["quantization_config"]);
    std::ofstream(dir_ / "config.json") << config.dump(1);
  }
  absl::Status load() const {
    LocalEngineOptions options;
    options.model_dir = dir_;
    options.num_threads = 1;
    options.kv.max_blocks = 16;
    return LocalEngine::create(options).status();
  }

 private:
  static inline int counter_ = 0;
  std::string source_;
  std::filesystem::path dir_;
};

void expect_error(const absl::Status& s, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(s.ok());
  for (const char* part : parts) {
    EXPECT_NE(s.message().find(part), std::string::npos) << "'" << part << "' not in: " << s;
  }
}

constexpr char kModule[] = "model.layers.1.self_attn.o_proj";

TEST(HfQuantizedErrors, MissingScale) {
  BrokenCheckpoint b;
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".weight_scale"); });
  // Without its weight_scale the module looks dense, and the config says it is quantized.
  expect_error(b.load(), {"model.layers.1.self_attn.o_proj.weight_scale", "ignore"});
}

TEST(HfQuantizedErrors, MissingZeroPoint) {
  BrokenCheckpoint b;
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".weight_zero_point"); });
  expect_error(b.load(), {"model.safetensors", "o_proj.weight_zero_point"});
}

TEST(HfQuantizedErrors, MissingPackedWeight) {
  BrokenCheckpoint b;
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".weight_packed"); });
  expect_error(b.load(), {"o_proj", "weight_packed"});
}

TEST(HfQuantizedErrors, WrongPackedShape) {
  BrokenCheckpoint b;
  b.edit_tensors([](auto& t) {
    t[std::string(kModule) + ".weight_packed"] = Tensor::zeros(DType::kI32, Shape{128, 8});
  });
  expect_error(b.load(), {"model.safetensors", "o_proj.weight_packed", "[128, 8]", "[128, 16]"});
}

TEST(HfQuantizedErrors, WrongScaleDtype) {
  BrokenCheckpoint b;
  b.edit_tensors([](auto& t) {
    t[std::string(kModule) + ".weight_scale"] = Tensor::zeros(DType::kI32, Shape{128, 4});
  });
  expect_error(b.load(), {"o_proj.weight_scale", "dtype i32"});
}

TEST(HfQuantizedErrors, UnsupportedBits) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["config_groups"]["group_0"]["weights"]["num_bits"] = 3; });
  expect_error(b.load(), {"config.json", "config_groups.group_0.weights.num_bits", "3"});
}

TEST(HfQuantizedErrors, UnsupportedGroupSize) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["config_groups"]["group_0"]["weights"]["group_size"] = 16; });
  expect_error(b.load(), {"config.json", "group_size", "16"});
}

TEST(HfQuantizedErrors, UnsupportedMethod) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["quant_method"] = "bitsandbytes"; });
  expect_error(b.load(), {"config.json", "quant_method", "bitsandbytes"});
}

TEST(HfQuantizedErrors, UnsupportedFormat) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["format"] = "marlin-24"; });
  expect_error(b.load(), {"config.json", "format", "marlin-24"});
}

TEST(HfQuantizedErrors, IgnoreNamingAnUnknownModule) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["ignore"] = {"lm_head", "model.layers.9.mlp.up_proj"}; });
  expect_error(b.load(), {"config.json", "ignore", "model.layers.9.mlp.up_proj"});
}

TEST(HfQuantizedErrors, IgnoreRegexMatchingNothing) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["ignore"] = {"re:.*visual.*"}; });
  expect_error(b.load(), {"ignore", "re:.*visual.*"});
}

TEST(HfQuantizedErrors, IgnoredModuleStoredQuantized) {
  BrokenCheckpoint b;
  b.edit_config([](nlohmann::json& q) { q["ignore"] = {"lm_head", "re:.*o_proj"}; });
  expect_error(b.load(), {"o_proj", "ignore"});
}

TEST(HfQuantizedErrors, TargetNamingAnotherClass) {
  BrokenCheckpoint b("ct_mixed_groups");
  b.edit_config([](nlohmann::json& q) { q["config_groups"]["group_2"]["targets"] = {"LlamaAttention"}; });
  expect_error(b.load(), {"config.json", "config_groups.group_2.targets", "LlamaAttention", "Linear"});
}

TEST(HfQuantizedErrors, MixedPrecisionGroupWithoutFormat) {
  BrokenCheckpoint b("ct_mixed_groups");
  b.edit_config([](nlohmann::json& q) { q["config_groups"]["group_1"].erase("format"); });
  expect_error(b.load(), {"config.json", "config_groups.group_1.format", "mixed-precision"});
}

// A module the config's targets put in another group than the one it was stored with: layer 1's
// o_proj (stored fp8) falls to group_0 (pack-quantized) when group_2 targets q_proj instead.
TEST(HfQuantizedErrors, ModuleStoredInAnotherGroupsFormat) {
  BrokenCheckpoint b("ct_mixed_groups");
  b.edit_config([](nlohmann::json& q) {
    q["config_groups"]["group_2"]["targets"] = {"model.layers.1.self_attn.q_proj"};
  });
  expect_error(b.load(), {"model.layers.1.self_attn.o_proj", "weight_packed"});
}

TEST(HfQuantizedErrors, QuantizeOnAQuantizedCheckpoint) {
  LocalEngineOptions options;
  options.model_dir = model_dir("ct_int4_g32_asym");
  options.num_threads = 1;
  options.kv.max_blocks = 16;
  options.quantization = WeightQuantization::kInt8;
  expect_error(LocalEngine::create(options).status(),
               {"--quantize int8", "already quantized", "compressed-tensors"});
  auto config = load_model_config(model_dir("ct_int4_g32_asym"));
  ASSERT_TRUE(config.ok());
  auto layout = stage_layout(2, 1, 0);
  expect_error(checked_planned_weight_bytes(*config, 1, 1, *layout, WeightQuantization::kInt4G128)
                   .status(),
               {"--quantize int4", "already quantized"});
}

TEST(HfQuantizedErrors, GptqDescActWithoutGIdx) {
  BrokenCheckpoint b("gptq_int4_g32_desc_act");
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".g_idx"); });
  expect_error(b.load(), {"model.safetensors", "o_proj", "g_idx"});
}

TEST(HfQuantizedErrors, GptqPermutedGIdxWithoutDescAct) {
  BrokenCheckpoint b("gptq_int4_g32_desc_act");
  b.edit_config([](nlohmann::json& q) { q["desc_act"] = false; });
  expect_error(b.load(), {"g_idx", "desc_act is false"});
}

TEST(HfQuantizedErrors, GptqMissingZeros) {
  BrokenCheckpoint b("gptq_int4_g64_sym");
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".qzeros"); });
  expect_error(b.load(), {"model.safetensors", "o_proj.qzeros"});
}

TEST(HfQuantizedErrors, GptqUnsupportedBits) {
  BrokenCheckpoint b("gptq_int4_g64_sym");
  b.edit_config([](nlohmann::json& q) { q["bits"] = 3; });
  expect_error(b.load(), {"config.json", "field 'bits' is 3"});
}

TEST(HfQuantizedErrors, GptqUnknownCheckpointFormat) {
  BrokenCheckpoint b("gptq_int4_g64_sym");
  b.edit_config([](nlohmann::json& q) { q["checkpoint_format"] = "marlin"; });
  expect_error(b.load(), {"checkpoint_format", "marlin"});
}

TEST(HfQuantizedErrors, AwqUnsupportedVersion) {
  BrokenCheckpoint b("awq_int4_g32");
  b.edit_config([](nlohmann::json& q) { q["version"] = "gemv"; });
  expect_error(b.load(), {"config.json", "version", "gemv"});
}

TEST(HfQuantizedErrors, AwqWrongScalesShape) {
  BrokenCheckpoint b("awq_int4_g32");
  b.edit_tensors([](auto& t) {
    t[std::string(kModule) + ".scales"] = Tensor::zeros(DType::kF16, Shape{2, 128});
  });
  expect_error(b.load(), {"o_proj.scales", "[2, 128]", "[4, 128]"});
}

TEST(HfQuantizedErrors, Fp8MissingScale) {
  BrokenCheckpoint b("ct_fp8_channel");
  b.edit_tensors([](auto& t) { t.erase(std::string(kModule) + ".weight_scale"); });
  expect_error(b.load(), {"o_proj.weight_scale", "ignore"});
}

TEST(HfQuantizedErrors, Fp8WithoutBlockSize) {
  BrokenCheckpoint b("fp8_block128");
  b.edit_config([](nlohmann::json& q) { q.erase("weight_block_size"); });
  expect_error(b.load(), {"config.json", "weight_block_size"});
}

TEST(HfQuantizedErrors, ModulesToNotConvertNamingAnUnknownModule) {
  BrokenCheckpoint b("awq_int4_g32");
  b.edit_config([](nlohmann::json& q) { q["modules_to_not_convert"] = {"visual"}; });
  expect_error(b.load(), {"modules_to_not_convert", "visual"});
}

// Under TP `tp`, layer 0's o_proj (128 x 128) row-parallel shard of 128 / tp input columns cuts a
// block of `model`'s layout: the plan (weft info) and the load both refuse, the plan's error
// holding `plan_parts` and the load's naming the tensor and `dtype`.
void expect_shard_edge_refused(const std::string& model, int tp,
                               std::initializer_list<const char*> plan_parts, const char* dtype) {
  constexpr char kTensor[] = "model.layers.0.self_attn.o_proj.weight";
  auto config = load_model_config(model_dir(model));
  ASSERT_TRUE(config.ok()) << config.status();
  auto layout = stage_layout(2, 1, 0);
  expect_error(checked_planned_weight_bytes(*config, tp, 1, *layout, WeightQuantization::kNone)
                   .status(),
               plan_parts);
  auto store = WeightStore::open(model_dir(model));
  ASSERT_TRUE(store.ok());
  expect_error(store->get_slice(kTensor, Shape{128, 128}, 1, 128 / tp, 128 / tp).status(),
               {kTensor, dtype});
}

// Group 128 under TP 2: o_proj's row-parallel shard has 64 input columns, and a group may not
// cross the shard edge.
TEST(HfQuantizedErrors, GroupCrossingAShardEdge) {
  expect_shard_edge_refused("ct_int4_g128_asym", 2,
                            {"model.layers.0.self_attn.o_proj.weight", "64", "128"}, "i4g128");
}

// How FP8 weights are held: F8B64 where the input columns (and the scale blocks' columns) are
// whole 64s, else F32, dequantized at load; weft info says which.
TEST(HfQuantizedFp8, HeldDtype) {
  auto config = load_model_config(model_dir("ct_fp8_channel"));
  ASSERT_TRUE(config.ok()) << config.status();
  CheckpointQuantization q = config->checkpoint_quantization;
  EXPECT_EQ(q.weft_dtype(), DType::kF8B64);
  EXPECT_EQ(q.held_dtype(128), DType::kF8B64);
  EXPECT_EQ(q.held_dtype(100), DType::kF32);
  EXPECT_EQ(q.shard_bytes(4, 100, 100), 4 * 100 * 4);
  EXPECT_EQ(q.shard_bytes(4, 128, 256), 4 * 128 + 4 * 2 * 4);
  EXPECT_NE(q.describe().find("-> f8b64"), std::string::npos) << q.describe();
  q.fp8_block_rows = 32;
  q.fp8_block_cols = 32;  // scale blocks narrower than 64 columns
  EXPECT_EQ(q.held_dtype(128), DType::kF32);
  EXPECT_NE(q.describe().find("-> f32"), std::string::npos) << q.describe();
}

// FP8 held as F8B64 under TP 4: o_proj's row-parallel shard has 32 input columns, inside one of
// weft's 64-element blocks. The plan and the load refuse, naming tensor and block.
TEST(HfQuantizedErrors, Fp8BlockCrossingAShardEdge) {
  expect_shard_edge_refused("ct_fp8_channel", 4,
                            {"model.layers.0.self_attn.o_proj.weight", "32", "f8b64", "64"},
                            "f8b64");
}

// An FP8 NaN code in a stored weight is refused, naming the tensor and element.
TEST(HfQuantizedErrors, Fp8NaNWeight) {
  BrokenCheckpoint b("ct_fp8_channel");
  b.edit_tensors([](auto& t) {
    Tensor& w = t[std::string(kModule) + ".weight"];
    Tensor copy = Tensor::empty(w.dtype(), w.shape());
    std::memcpy(copy.data(), w.data(), w.nbytes());
    static_cast<uint8_t*>(copy.data())[3 * 128 + 5] = 0xFF;
    w = copy;
  });
  expect_error(b.load(), {"o_proj.weight", "[3, 5]", "NaN"});
}

}  // namespace
}  // namespace weft::golden
