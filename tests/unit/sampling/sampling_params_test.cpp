#include "sampling/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "nlohmann/json.hpp"
#include "sampling/sampling_params_json.h"

namespace weft {
namespace {

constexpr int64_t kVocab = 1000;

TEST(SamplingParams, DefaultsAreValid) { EXPECT_TRUE(SamplingParams{}.validate(kVocab).ok()); }

struct BadCase {
  const char* field;
  std::function<void(SamplingParams&)> mutate;
};

TEST(SamplingParams, EachInvalidFieldIsNamedInTheError) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<BadCase> cases = {
      {"n", [](SamplingParams& p) { p.n = 0; }},
      {"n", [](SamplingParams& p) { p.n = 129; }},
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [=](SamplingParams& p) { p.temperature = nan; }},
      {"temperature", [=](SamplingParams& p) { p.temperature = inf; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
      {"top_p", [=](SamplingParams& p) { p.top_p = nan; }},
      {"top_k", [](SamplingParams& p) { p.top_k = -2; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty", [](SamplingParams& p) { p.repetition_penalty = -1.0f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 2.5f; }},
      {"frequency_penalty", [](SamplingParams& p) { p.frequency_penalty = -2.01f; }},
      {"max_tokens", [](SamplingParams& p) { p.max_tokens = 0; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = -1; }},
      {"min_tokens", [](SamplingParams& p) { p.min_tokens = 17; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = 21; }},
      {"logprobs", [](SamplingParams& p) { p.logprobs = -1; }},
      {"logit_bias[1000]", [](SamplingParams& p) { p.logit_bias[1000] = 1.0f; }},
      {"logit_bias[-1]", [](SamplingParams& p) { p.logit_bias[-1] = 1.0f; }},
      {"logit_bias[3]", [](SamplingParams& p) { p.logit_bias[3] = 100.5f; }},
      {"stop_token_ids[1]",
       [](SamplingParams& p) {
         p.stop_token_ids = {2, 1000};
       }},
      {"stop[0]", [](SamplingParams& p) { p.stop = {""}; }},
  };
  for (const BadCase& c : cases) {
    SamplingParams p;
    c.mutate(p);
    const absl::Status st = p.validate(kVocab);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(st.message().substr(0, std::string(c.field).size()), c.field) << st.message();
  }
}

TEST(SamplingParams, BoundaryValuesAreValid) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_p = 1.0f;
  p.top_k = 0;
  p.min_p = 1.0f;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.min_tokens = p.max_tokens;
  p.logprobs = 20;
  p.logit_bias = {{0, -100.0f}, {999, 100.0f}};
  p.stop_token_ids = {0, 999};
  EXPECT_TRUE(p.validate(kVocab).ok()) << p.validate(kVocab);
  EXPECT_TRUE(p.is_greedy());
  EXPECT_FALSE(p.top_k_active(kVocab));
  p.top_k = 5;
  EXPECT_TRUE(p.top_k_active(kVocab));
  p.top_k = 1000;
  EXPECT_FALSE(p.top_k_active(kVocab));
}

TEST(SamplingParamsJson, ReadsOpenAiFields) {
  const auto request = nlohmann::json::parse(R"({
    "model": "m", "prompt": "hi", "stream": true,
    "n": 2, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": -0.5,
    "logit_bias": {"50256": -100, "7": 2.5}, "seed": -1,
    "stop": ["\n\n", "END"], "stop_token_ids": [2, 3],
    "max_tokens": 10, "max_completion_tokens": 64, "min_tokens": 4,
    "ignore_eos": true, "skip_special_tokens": false, "logprobs": 5
  })");
  auto p = sampling_params_from_json(request);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->n, 2);
  EXPECT_FLOAT_EQ(p->temperature, 0.5f);
  EXPECT_FLOAT_EQ(p->top_p, 0.9f);
  EXPECT_EQ(p->top_k, 40);
  EXPECT_FLOAT_EQ(p->min_p, 0.05f);
  EXPECT_FLOAT_EQ(p->repetition_penalty, 1.1f);
  EXPECT_FLOAT_EQ(p->presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p->frequency_penalty, -0.5f);
  EXPECT_EQ(p->logit_bias, (std::map<int32_t, float>{{7, 2.5f}, {50256, -100.0f}}));
  EXPECT_EQ(p->seed, std::optional<uint64_t>(~uint64_t{0}));
  EXPECT_EQ(p->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(p->stop_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(p->max_tokens, 64);  // max_completion_tokens wins
  EXPECT_EQ(p->min_tokens, 4);
  EXPECT_TRUE(p->ignore_eos);
  EXPECT_FALSE(p->skip_special_tokens);
  EXPECT_EQ(p->logprobs, std::optional<int>(5));
}

TEST(SamplingParamsJson, AbsentAndNullFieldsKeepDefaults) {
  auto p = sampling_params_from_json(
      nlohmann::json::parse(R"({"temperature": null, "stop": null, "seed": null, "max_tokens": 8,
                               "stop_token_ids": null})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FLOAT_EQ(p->temperature, 1.0f);
  EXPECT_TRUE(p->stop.empty());
  EXPECT_FALSE(p->seed.has_value());
  EXPECT_FALSE(p->logprobs.has_value());
  EXPECT_EQ(p->max_tokens, 8);
  EXPECT_EQ(p->top_k, -1);
}

TEST(SamplingParamsJson, StopMayBeASingleStringAndIntegersMayBeWrittenAsFloats) {
  auto p = sampling_params_from_json(
      nlohmann::json::parse(R"({"stop": "###", "max_tokens": 32.0, "temperature": 1})"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->stop, (std::vector<std::string>{"###"}));
  EXPECT_EQ(p->max_tokens, 32);
  EXPECT_FLOAT_EQ(p->temperature, 1.0f);
}

TEST(SamplingParamsJson, TypeErrorsNameTheField) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {R"({"temperature": "hot"})", "temperature"},
      {R"({"top_p": true})", "top_p"},
      {R"({"top_k": 1.5})", "top_k"},
      {R"({"n": "2"})", "n"},
      {R"({"max_tokens": [1]})", "max_tokens"},
      {R"({"max_completion_tokens": 1e30})", "max_completion_tokens"},
      {R"({"stop": 5})", "stop"},
      {R"({"stop": ["a", 1]})", "stop[1]"},
      {R"({"stop_token_ids": [1, "2"]})", "stop_token_ids[1]"},
      {R"({"stop_token_ids": 3})", "stop_token_ids"},
      {R"({"logit_bias": [1]})", "logit_bias"},
      {R"({"logit_bias": {"abc": 1}})", "logit_bias[\"abc\"]"},
      {R"({"logit_bias": {"12": "x"}})", "logit_bias[\"12\"]"},
      {R"({"seed": "42"})", "seed"},
      {R"({"ignore_eos": 1})", "ignore_eos"},
      {R"({"logprobs": true})", "logprobs"},
      {R"({"min_tokens": 99999999999})", "min_tokens"},
  };
  for (const auto& [body, field] : cases) {
    auto p = sampling_params_from_json(nlohmann::json::parse(body));
    ASSERT_FALSE(p.ok()) << body;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message().substr(0, std::string(field).size()), field)
        << p.status().message();
  }
  EXPECT_FALSE(sampling_params_from_json(nlohmann::json::array()).ok());
}

TEST(SamplingParamsJson, ParsedValuesStillGoThroughValidate) {
  auto p = sampling_params_from_json(nlohmann::json::parse(R"({"top_p": 2})"));
  ASSERT_TRUE(p.ok());
  const absl::Status st = p->validate(kVocab);
  EXPECT_EQ(st.message().substr(0, 5), "top_p");
}

}  // namespace
}  // namespace weft
