#include "model/rope.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

// Distance in units in the last place between two finite positive floats.
int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

// inv_freq dumped from transformers' rotary embedding modules (gen_model_config_reference.py)
// for default, linear, llama3 and longrope (both sets) rope, head_dim from 16 to 128, partial
// rotary dims, theta from 1e4 to 1e6, and the attention scaling they multiply cos/sin by.
TEST(RopeTest, InvFreqMatchesTransformers) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/tests/unit/model/model_config_reference.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json reference = nlohmann::json::parse(in);
  int64_t worst = 0;
  size_t compared = 0;
  size_t differing = 0;
  for (const auto& [name, c] : reference["cases"].items()) {
    SCOPED_TRACE(name);
    auto config = parse_model_config(c["config_json"].get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << config.status();
    const std::vector<std::vector<float>> tables = rope_inv_freq_tables(*config);
    EXPECT_EQ(tables[0], rope_inv_freq(*config));
    std::vector<std::string> keys = {"inv_freq"};
    if (c.contains("long_inv_freq")) keys.push_back("long_inv_freq");
    ASSERT_EQ(tables.size(), keys.size());
    for (size_t t = 0; t < keys.size(); ++t) {
      const std::vector<float>& inv_freq = tables[t];
      const auto& expected = c[keys[t]];
      ASSERT_EQ(inv_freq.size(), expected.size()) << keys[t];
      for (size_t i = 0; i < inv_freq.size(); ++i) {
        const float want = static_cast<float>(expected[i].get<double>());
        const int64_t ulps = ulp_distance(inv_freq[i], want);
        // torch's vectorized float pow is not always correctly rounded; the double pow here is.
        EXPECT_LE(ulps, 1) << keys[t] << "[" << i << "] = " << inv_freq[i] << ", transformers "
                           << want;
        worst = std::max(worst, ulps);
        if (ulps != 0) ++differing;
        ++compared;
      }
    }
    // transformers multiplies the float32 cos/sin by the python float, rounded to float32.
    EXPECT_EQ(rope_attention_scaling(*config),
              static_cast<float>(c["attention_scaling"].get<double>()));
  }
  EXPECT_GT(compared, 300u);
  EXPECT_LE(differing * 50, compared)
      << differing << " of " << compared << " values are not bit-identical";
  RecordProperty("max_ulp_difference", static_cast<int>(worst));
  RecordProperty("values_compared", static_cast<int>(compared));
  RecordProperty("values_not_bit_identical", static_cast<int>(differing));
}

TEST(RopeTest, LinearIsDefaultOverFactor) {
  ModelConfig config;
  config.head_dim = 8;
  config.rope_theta = 10000.0;
  const std::vector<float> base = rope_inv_freq(config);
  EXPECT_EQ(base[0], 1.0f);
  EXPECT_FLOAT_EQ(base[1], 0.1f);  // 10000^(-2/8)
  config.rope_scaling.type = RopeScalingType::kLinear;
  config.rope_scaling.factor = 2.0;
  const std::vector<float> linear = rope_inv_freq(config);
  ASSERT_EQ(linear.size(), 4u);
  for (size_t i = 0; i < linear.size(); ++i) EXPECT_EQ(linear[i], base[i] / 2.0f);
}

// transformers switches LongRoPE sets per forward pass at original_max_position_embeddings (O);
// without the sequence length a token's set follows its position (p + 1 > O), with it the
// whole sequence follows its length.
TEST(RopeTest, LongRopeTablePerPositionAndPerSequenceLength) {
  RopeScaling rope;
  rope.type = RopeScalingType::kLongRope;
  rope.original_max_position_embeddings = 48;
  EXPECT_EQ(longrope_table(rope, 0, 0), 0);
  EXPECT_EQ(longrope_table(rope, 47, 0), 0);  // the 48th token: a pass of 48 is short
  EXPECT_EQ(longrope_table(rope, 48, 0), 1);
  EXPECT_EQ(longrope_table(rope, 3, 48), 0);
  EXPECT_EQ(longrope_table(rope, 3, 49), 1);  // a 49-token sequence is long everywhere

  ModelConfig config;
  config.head_dim = 8;
  config.rope_scaling = rope;
  ForwardBatch batch;
  batch.num_tokens = 5;
  batch.positions = Tensor::empty(DType::kI32, Shape{5});
  const int32_t positions[] = {46, 47, 48, 10, 60};  // a chunk crossing O, two decode tokens
  std::memcpy(batch.positions.data(), positions, sizeof(positions));
  batch.query_start = {0, 3, 4, 5};
  batch.context_len = {49, 11, 61};
  Tensor tables = longrope_token_tables(config, batch);
  const int32_t* t = tables.data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(t, t + 5), (std::vector<int32_t>{0, 0, 1, 0, 1}));
  batch.prompt_len = {49, 60, 61};
  tables = longrope_token_tables(config, batch);
  t = tables.data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(t, t + 5), (std::vector<int32_t>{1, 1, 1, 1, 1}));
  batch.prompt_len = {20, 11, 0};
  tables = longrope_token_tables(config, batch);
  t = tables.data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(t, t + 5), (std::vector<int32_t>{0, 0, 1, 0, 1}));
  // A 49-token prompt is long everywhere; an 11-token one stays short at position 10.
  batch.prompt_len = {49, 11, 30};
  tables = longrope_token_tables(config, batch);
  t = tables.data_as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(t, t + 5), (std::vector<int32_t>{1, 1, 1, 0, 1}));
}

// Dynamic NTK: the frequencies transformers' rotary module sets on a pass of each length
// (gen_model_config_reference.py: below, at and past max_position_embeddings, far past it, with
// integer and fractional factors), computed in float32 as torch does.
TEST(RopeTest, DynamicNtkInvFreqMatchesTransformersAtEveryLength) {
  std::ifstream in(std::string(WEFT_SOURCE_DIR) + "/tests/unit/model/model_config_reference.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json reference = nlohmann::json::parse(in);
  int cases = 0, lengths = 0, past = 0, compared = 0, differing = 0;
  for (const auto& [name, c] : reference["cases"].items()) {
    if (!c.contains("dynamic_inv_freq")) continue;
    SCOPED_TRACE(name);
    ++cases;
    auto config = parse_model_config(c["config_json"].get<std::string>(), name);
    ASSERT_TRUE(config.ok()) << config.status();
    ASSERT_EQ(config->rope_scaling.type, RopeScalingType::kDynamic);
    for (const auto& [length_text, expected] : c["dynamic_inv_freq"].items()) {
      const int64_t length = std::stoll(length_text);
      const std::vector<float> inv_freq = dynamic_ntk_inv_freq(*config, length);
      ASSERT_EQ(inv_freq.size(), expected.size()) << "length " << length;
      ++lengths;
      past += length > config->max_position_embeddings;
      for (size_t i = 0; i < inv_freq.size(); ++i) {
        const float want = static_cast<float>(expected[i].get<double>());
        // Two float32 pows in a row (the base, then its powers), each within an ulp in torch's
        // vectorized form and correctly rounded here.
        EXPECT_LE(ulp_distance(inv_freq[i], want), 2)
            << "length " << length << " [" << i << "] = " << inv_freq[i] << ", transformers " << want;
        ++compared;
        differing += inv_freq[i] != want;
      }
    }
  }
  EXPECT_EQ(cases, 3);
  EXPECT_GE(past, 3 * 5) << "too few lengths past max_position_embeddings";
  EXPECT_LE(differing * 10, compared) << differing << " of " << compared << " values are not bit-identical";
  RecordProperty("lengths_compared", lengths);
}

// A prompt token uses its prompt's length, a generated one its own position + 1; every length
// up to max_position_embeddings shares the default row 0, longer ones get one row each.
TEST(RopeTest, DynamicNtkRowsFollowPromptLengthAndPosition) {
  EXPECT_EQ(dynamic_ntk_seq_len(0, 30), 30);
  EXPECT_EQ(dynamic_ntk_seq_len(29, 30), 30);
  EXPECT_EQ(dynamic_ntk_seq_len(30, 30), 31);
  EXPECT_EQ(dynamic_ntk_seq_len(5, 0), 6);

  ModelConfig config;
  config.head_dim = 8;
  config.max_position_embeddings = 20;
  config.rope_scaling.type = RopeScalingType::kDynamic;
  config.rope_scaling.factor = 4.0;
  ForwardBatch batch;
  batch.num_tokens = 7;
  batch.positions = Tensor::empty(DType::kI32, Shape{7});
  // A chunk of a 30-token prompt; a decode token of a 10-token prompt at 19 (length 20) and one
  // at 25; a recomputed sequence (prompt 24) whose chunk runs its last prompt tokens and its
  // first generated one.
  const int32_t positions[] = {0, 29, 19, 25, 22, 23, 24};
  std::memcpy(batch.positions.data(), positions, sizeof(positions));
  batch.query_start = {0, 2, 3, 4, 7};
  batch.context_len = {30, 20, 26, 25};
  batch.prompt_len = {30, 10, 10, 24};
  const TokenRopeTables tables = dynamic_ntk_token_tables(config, batch);
  const int32_t* rows = tables.rows.data_as<int32_t>();
  const std::vector<int32_t> got(rows, rows + 7);
  // Lengths 30, 30, 20, 26, 24, 24, 25: rows by first appearance past the default.
  EXPECT_EQ(got, (std::vector<int32_t>{1, 1, 0, 2, 3, 3, 4}));
  ASSERT_EQ(tables.inv_freq.dim(0), 5);
  ASSERT_EQ(tables.inv_freq.dim(1), 4);
  const float* f = tables.inv_freq.data_as<float>();
  EXPECT_EQ(std::vector<float>(f, f + 4), rope_inv_freq(config));
  EXPECT_EQ(std::vector<float>(f + 4, f + 8), dynamic_ntk_inv_freq(config, 30));
  EXPECT_EQ(std::vector<float>(f + 8, f + 12), dynamic_ntk_inv_freq(config, 26));
  EXPECT_EQ(std::vector<float>(f + 12, f + 16), dynamic_ntk_inv_freq(config, 24));
  EXPECT_EQ(std::vector<float>(f + 16, f + 20), dynamic_ntk_inv_freq(config, 25));
  EXPECT_LT(f[4 + 1], f[1]) << "a longer sequence has a larger base, lower frequencies";
}

// Partial rotary (Phi3): the exponent's denominator is the rotary dimension, not head_dim.
TEST(RopeTest, PartialRotaryUsesTheRotaryDimension) {
  ModelConfig config;
  config.head_dim = 16;
  config.rotary_dim = 8;
  config.rope_theta = 10000.0;
  const std::vector<float> inv_freq = rope_inv_freq(config);
  ASSERT_EQ(inv_freq.size(), 4u);
  EXPECT_EQ(inv_freq[0], 1.0f);
  EXPECT_FLOAT_EQ(inv_freq[2], 0.01f);  // 10000^(-4/8)
}

}  // namespace
}  // namespace weft
