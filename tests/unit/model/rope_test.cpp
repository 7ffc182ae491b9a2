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
// for default, linear and llama3 rope, head_dim from 16 to 128 and theta from 1e4 to 1e6.
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
    const std::vector<float> inv_freq = rope_inv_freq(*config);
    const auto& expected = c["inv_freq"];
    ASSERT_EQ(inv_freq.size(), expected.size());
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      const float want = static_cast<float>(expected[i].get<double>());
      const int64_t ulps = ulp_distance(inv_freq[i], want);
      // torch's vectorized float pow is not always correctly rounded; the double pow here is.
      EXPECT_LE(ulps, 1) << "inv_freq[" << i << "] = " << inv_freq[i] << ", transformers " << want;
      worst = std::max(worst, ulps);
      if (ulps != 0) ++differing;
      ++compared;
    }
    EXPECT_EQ(rope_attention_scaling(*config), 1.0f);
  }
  EXPECT_GT(compared, 200u);
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

}  // namespace
}  // namespace weft
