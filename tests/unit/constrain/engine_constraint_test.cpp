// Constrained requests through the whole Engine on the default model: the output is accepted by
// the grammar token by token (and complete when the sequence stopped), for greedy and sampled
// requests, n > 1, beside unconstrained and speculating sequences in one batch, and under a KV
// budget small enough to preempt; logprobs stay the raw model's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>

#include "constrain/grammar_constraint.h"
#include "constrain/request_grammar.h"
#include "constrain_test_util.h"
#include "engine/local_engine.h"
#include "engine/text_detokenizer.h"
#include "tests/unit/engine/run_to_end.h"

namespace weft {
namespace {

std::unique_ptr<LocalEngine> make_engine(SpeculativeMethod speculative, int64_t max_blocks = 0,
                                         DetokenizerFactory detokenizers = {}) {
  LocalEngineOptions options;
  options.model_dir = testing::tokenizer_dir("default-model");
  options.num_threads = 2;
  options.kv.block_size = 4;
  options.kv.max_blocks = max_blocks;
  options.kv.memory_bytes = 64ll << 20;
  options.seed = 9;
  options.speculative.method = speculative;
  if (speculative == SpeculativeMethod::kDraftModel) {
    options.speculative.draft_model = std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-draft";
  }
  options.speculative.engine.adaptive = false;
  auto e = LocalEngine::create(options, std::move(detokenizers));
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

using Outcome = testing::RunOutcome;

std::map<std::pair<int64_t, int>, Outcome> run(Engine& engine, const std::vector<Request>& requests) {
  return testing::run_to_end(engine, requests);
}

class EngineConstraintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = testing::load_tokenizer("default-model");
    auto compiler = model_grammar_compiler(*tokenizer_, 4096, {0});
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    compiler_ = *compiler;
  }
  std::shared_ptr<const TokenConstraintSource> constraint(const nlohmann::json& body) {
    auto c = request_constraint(body, *compiler_);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }
  // The grammar accepts every token, and is complete when the sequence stopped on eos.
  void expect_accepted(const nlohmann::json& body, const Outcome& o) {
    auto compiled = compiler_->compile(**grammar_spec_from_request(body));
    ASSERT_TRUE(compiled.ok());
    GrammarMatcher matcher(*compiled);
    EXPECT_EQ(matcher.accept_tokens(o.ids), o.ids.size()) << tokenizer_->decode(o.ids, false);
    if (o.finish == FinishReason::kStop) {
      EXPECT_TRUE(matcher.is_terminated());
    }
  }
  Request request(const std::string& prompt, int max_tokens, float temperature) {
    Request r;
    r.prompt_ids = *tokenizer_->encode(prompt, true);
    r.params.max_tokens = max_tokens;
    r.params.temperature = temperature;
    return r;
  }
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<GrammarCompiler> compiler_;
};

TEST_F(EngineConstraintTest, OutputsFollowTheGrammarBesideUnconstrainedAndSpeculatingSequences) {
  const nlohmann::json regex = {{"guided_regex", "(Amen|Selah)(, (Amen|Selah)){0,3}\\."}};
  const nlohmann::json schema = nlohmann::json::parse(R"({"guided_json": {"type": "object",
      "properties": {"n": {"type": "integer"}, "who": {"type": "string", "maxLength": 12}},
      "required": ["n", "who"]}})");
  const nlohmann::json choice = {{"guided_choice", {"light", "darkness"}}};
  for (SpeculativeMethod method : {SpeculativeMethod::kNone, SpeculativeMethod::kNgram}) {
    for (int64_t blocks : {0, 40}) {  // 40 blocks of 4: tight for this batch
      auto local = make_engine(method, blocks);
      std::vector<Request> requests;
      std::vector<nlohmann::json> bodies;
      for (int i = 0; i < 3; ++i) {
        for (const nlohmann::json& body : {regex, schema, choice}) {
          Request r = request("And God said unto Moses,", 120, i == 0 ? 0.0f : 0.9f);
          r.params.seed = i;
          r.params.n = i == 2 ? 2 : 1;
          r.constraint = constraint(body);
          requests.push_back(r);
          bodies.push_back(body);
        }
        requests.push_back(request("And it came to pass", 40, 0.0f));  // unconstrained
        bodies.push_back(nullptr);
      }
      auto outcomes = run(local->engine(), requests);
      int64_t request_id = 0;
      for (size_t i = 0; i < requests.size(); ++i, ++request_id) {
        for (int j = 0; j < requests[i].params.n; ++j) {
          const Outcome& o = outcomes.at({request_id, j});
          EXPECT_NE(o.finish, FinishReason::kError);
          if (!bodies[i].is_null()) expect_accepted(bodies[i], o);
        }
      }
      EXPECT_EQ(local->engine().blocks().num_free_blocks(), local->engine().blocks().num_blocks());
    }
  }
}

TEST_F(EngineConstraintTest, LogprobsStayTheRawModels) {
  auto local = make_engine(SpeculativeMethod::kNone);
  Request constrained = request("And God said", 6, 0.0f);
  constrained.params.logprobs = 3;
  constrained.params.ignore_eos = true;
  Request plain = constrained;
  constrained.constraint = constraint({{"guided_regex", "[0-9]+"}});
  auto out = run(local->engine(), {constrained, plain});
  const Outcome& c = out.at({0, 0});
  const Outcome& p = out.at({1, 0});
  // The first token: both rows are the same model row; the constrained token's raw logprob is
  // at most the unconstrained argmax's.
  ASSERT_FALSE(c.logprobs.empty());
  EXPECT_LE(c.logprobs[0], p.logprobs[0] + 1e-6);
  EXPECT_TRUE(std::regex_match(tokenizer_->decode(c.ids, true), std::regex("[0-9]+")));
}

// A complete grammar output ends the sequence even with ignore_eos: nothing may follow it.
TEST_F(EngineConstraintTest, ACompleteOutputEndsTheSequenceEvenIgnoringEos) {
  auto local = make_engine(SpeculativeMethod::kNone);
  Request r = request("And God said", 20, 0.0f);
  r.params.ignore_eos = true;
  r.constraint = constraint({{"guided_choice", {"yea", "nay"}}});
  const Outcome o = run(local->engine(), {r}).at({0, 0});
  EXPECT_EQ(o.finish, FinishReason::kStop);
  const std::string text = tokenizer_->decode(o.ids, true);
  EXPECT_TRUE(text == "yea" || text == "nay") << text;
}

// Banned phrases and a grammar together: the mask is their intersection, so banning the choice
// the model takes leaves the grammar's other choices, and the rollback keeps the grammar in step.
// Where the grammar allows only banned text after committed text, the sequence cannot go on and
// ends with content_filter. Speculating (bans and the grammar in the first verified row's mask),
// the outputs are plain decoding's.
TEST_F(EngineConstraintTest, BannedPhrasesAndAGrammarMaskTogether) {
  const nlohmann::json choices = {{"guided_choice", {"the LORD our God", "Moses the servant", "Aaron the priest"}}};
  std::vector<int32_t> plain_other, plain_stuck;
  for (SpeculativeMethod method : {SpeculativeMethod::kNone, SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    SCOPED_TRACE(static_cast<int>(method));
    auto local = make_engine(method, 0, text_detokenizers(tokenizer_));
    Request r = request("And God said unto", 20, 0.0f);
    r.constraint = constraint(choices);
    const Outcome free = run(local->engine(), {r}).at({0, 0});
    const std::string taken = tokenizer_->decode(free.ids, true);
    const size_t second_word = taken.find(' ') + 1;
    const size_t third_word = taken.find(' ', second_word);
    auto ban = [](const std::string& phrase) { return *BannedPhraseSet::compile({phrase}, "test", {}); };

    // The first two words: held from the first, rolled back there, another choice taken.
    r.banned_phrases = {ban(taken.substr(0, third_word))};
    const Outcome other = run(local->engine(), {r}).at({1, 0});
    const std::string text = tokenizer_->decode(other.ids, true);
    EXPECT_EQ(other.finish, FinishReason::kStop) << text;
    EXPECT_NE(text, taken);
    expect_accepted(choices, other);
    EXPECT_GT(local->engine().banned_phrase_stats().matches, 0);

    // The second word alone: the first word was released before it could be banned.
    r.banned_phrases = {ban(taken.substr(second_word, third_word - second_word))};
    const Outcome stuck = run(local->engine(), {r}).at({2, 0});
    EXPECT_EQ(stuck.finish, FinishReason::kContentFilter) << tokenizer_->decode(stuck.ids, true);
    EXPECT_EQ(local->engine().banned_phrase_stats().content_filtered, 1);
    EXPECT_EQ(local->engine().blocks().num_free_blocks(), local->engine().blocks().num_blocks());
    if (method == SpeculativeMethod::kNone) {
      plain_other = other.ids;
      plain_stuck = stuck.ids;
    } else {
      EXPECT_EQ(other.ids, plain_other);
      EXPECT_EQ(stuck.ids, plain_stuck);
    }
  }
}

}  // namespace
}  // namespace weft
