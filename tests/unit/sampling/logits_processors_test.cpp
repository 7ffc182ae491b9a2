#include "sampling/logits_processors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace weft {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Hand computation (vocab 6):
//   start                       [ 2.0, -1.0, 0.5, 3.0, -2.0, 0.0 ]
//   logit_bias {5: +1.5}        [ 2.0, -1.0, 0.5, 3.0, -2.0, 1.5 ]
//   repetition 2 over prompt {0,1} + output {1,3,4}:  positive / 2, negative * 2
//                               [ 1.0, -2.0, 0.5, 1.5, -4.0, 1.5 ]
//   output counts {1:1, 3:2, 4:1}, frequency 0.25, presence 0.5: -= c*0.25 + 0.5
//                               [ 1.0, -2.75, 0.5, 0.5, -4.75, 1.5 ]
TEST(LogitsProcessors, AllPenaltiesMatchAHandComputation) {
  SamplingParams p;
  p.logit_bias = {{5, 1.5f}};
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.5f;
  const std::vector<int32_t> prompt = {0, 1, 0};
  const std::vector<int32_t> output = {1, 3, 3, 4};
  SequenceSamplingState s{&p, prompt, output, 0, 0, {}};
  std::vector<float> logits = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f};
  PenaltyScratch scratch;
  apply_logits_processors(logits, s, scratch);
  const std::vector<float> expected = {1.0f, -2.75f, 0.5f, 0.5f, -4.75f, 1.5f};
  EXPECT_EQ(logits, expected);
  // The scratch is left zeroed, so a second row with no history is untouched by penalties.
  for (int32_t c : scratch.counts) EXPECT_EQ(c, 0);
}

TEST(LogitsProcessors, BiasIsAppliedBeforeRepetitionPenalty) {
  // -0.5 + 1.0 = 0.5 is positive by the time the penalty sees it, so it is divided.
  SamplingParams p;
  p.logit_bias = {{0, 1.0f}};
  p.repetition_penalty = 2.0f;
  const std::vector<int32_t> output = {0};
  SequenceSamplingState s{&p, {}, output, 0, 0, {}};
  std::vector<float> logits = {-0.5f, 1.0f};
  PenaltyScratch scratch;
  apply_logits_processors(logits, s, scratch);
  EXPECT_EQ(logits, (std::vector<float>{0.25f, 1.0f}));
}

TEST(LogitsProcessors, PresenceAndFrequencyIgnoreThePrompt) {
  SamplingParams p;
  p.presence_penalty = 1.0f;
  p.frequency_penalty = 1.0f;
  const std::vector<int32_t> prompt = {0, 0, 0};
  const std::vector<int32_t> output = {1, 1, 1};
  SequenceSamplingState s{&p, prompt, output, 0, 0, {}};
  std::vector<float> logits = {0.0f, 0.0f, 0.0f};
  PenaltyScratch scratch;
  apply_logits_processors(logits, s, scratch);
  EXPECT_EQ(logits, (std::vector<float>{0.0f, -4.0f, 0.0f}));
}

TEST(LogitsProcessors, MinTokensSuppressesEosAndStopTokensUntilReached) {
  SamplingParams p;
  p.min_tokens = 3;
  p.stop_token_ids = {2};
  const std::vector<int32_t> eos = {5};
  std::vector<int32_t> output = {0, 1};
  PenaltyScratch scratch;
  {
    SequenceSamplingState s{&p, {}, output, 0, 0, eos};
    std::vector<float> logits(6, 1.0f);
    apply_logits_processors(logits, s, scratch);
    EXPECT_EQ(logits, (std::vector<float>{1, 1, kNegInf, 1, 1, kNegInf}));
  }
  {
    p.ignore_eos = true;  // eos is no stop then, so it is not suppressed; stop ids still are
    SequenceSamplingState s{&p, {}, output, 0, 0, eos};
    std::vector<float> logits(6, 1.0f);
    apply_logits_processors(logits, s, scratch);
    EXPECT_EQ(logits, (std::vector<float>{1, 1, kNegInf, 1, 1, 1}));
  }
  {
    p.ignore_eos = false;
    output.push_back(4);  // 3 tokens generated: min_tokens reached
    SequenceSamplingState s{&p, {}, output, 0, 0, eos};
    std::vector<float> logits(6, 1.0f);
    apply_logits_processors(logits, s, scratch);
    EXPECT_EQ(logits, std::vector<float>(6, 1.0f));
  }
}

TEST(LogitsProcessors, TemperatureDivides) {
  std::vector<float> logits = {1.0f, -3.0f, 0.5f};
  apply_temperature(logits, 0.5f);
  EXPECT_EQ(logits, (std::vector<float>{2.0f, -6.0f, 1.0f}));
}

}  // namespace
}  // namespace weft
