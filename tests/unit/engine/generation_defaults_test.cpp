#include "engine/generation_defaults.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(GenerationDefaults, PresentFieldsOverrideTheBaseAndAbsentOnesKeepIt) {
  auto g = parse_generation_config(
      R"({"eos_token_id": [1, 2], "do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20,
          "min_p": 0.05, "repetition_penalty": 1.05, "max_new_tokens": 512})");
  ASSERT_TRUE(g.ok()) << g.status();
  SamplingParams base;
  base.temperature = 0.0f;
  base.presence_penalty = 0.5f;
  auto p = sampling_defaults_from(*g, base);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FLOAT_EQ(p->temperature, 0.7f);
  EXPECT_FLOAT_EQ(p->top_p, 0.8f);
  EXPECT_EQ(p->top_k, 20);
  EXPECT_FLOAT_EQ(p->min_p, 0.05f);
  EXPECT_FLOAT_EQ(p->repetition_penalty, 1.05f);
  EXPECT_EQ(p->max_tokens, 512);
  EXPECT_FLOAT_EQ(p->presence_penalty, 0.5f);

  auto empty = parse_generation_config(R"({"eos_token_id": 2})");
  ASSERT_TRUE(empty.ok());
  auto kept = sampling_defaults_from(*empty, base);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->temperature, 0.0f);
  EXPECT_EQ(kept->top_k, -1);
  EXPECT_EQ(kept->max_tokens, 16);
}

TEST(GenerationDefaults, OutOfRangeValuesNameTheFileAndField) {
  for (const auto& [json, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"temperature": -1})", "temperature"},
           {R"({"top_p": 0})", "top_p"},
           {R"({"top_k": -5})", "top_k"},
           {R"({"top_k": 9999999999})", "top_k"},
           {R"({"min_p": 2})", "min_p"},
           {R"({"max_new_tokens": 0})", "max_new_tokens"}}) {
    auto g = parse_generation_config(json);
    ASSERT_TRUE(g.ok()) << json << ": " << g.status();
    auto p = sampling_defaults_from(*g, {});
    ASSERT_FALSE(p.ok()) << json;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr("generation_config.json: " + field)) << json;
  }
}

}  // namespace
}  // namespace weft
