// Speculative decoding of constrained sequences (Engine::constrain_guesses) on the default model
// with n-gram lookup and with its draft (configs/default-draft):
//  - greedy and seeded sampled requests under a JSON schema and a regex give token for token
//    (logprobs too) the output of plain decoding, beside an unconstrained request in one batch;
//    the outputs are accepted by the grammar; guesses of the constrained sequences were verified
//    and some accepted (the engine's counters); every KV block (target's and draft's) is free;
//  - unseeded sampled requests with the draft (guesses drawn from q, verified by rejection
//    against the masked target) follow the distribution of plain constrained decoding
//    (two-sample chi-square at p = 1e-3), and guesses the grammar refused were screened.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../sampling/chi_square.h"
#include "constrain/grammar_constraint.h"
#include "constrain/request_grammar.h"
#include "constrain_test_util.h"
#include "engine/local_engine.h"
#include "engine/speculative/draft_model_proposer.h"
#include "speculation_workload.h"
#include "tests/unit/engine/run_to_end.h"

namespace weft {
namespace {

std::filesystem::path default_draft() { return std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-draft"; }

std::unique_ptr<LocalEngine> make_engine(SpeculativeMethod method, int block_size = 4) {
  LocalEngineOptions options;
  options.model_dir = testing::tokenizer_dir("default-model");
  options.num_threads = 2;
  options.kv.block_size = block_size;
  options.kv.memory_bytes = 64ll << 20;
  options.seed = 9;
  options.speculative.method = method;
  if (method == SpeculativeMethod::kDraftModel) options.speculative.draft_model = default_draft();
  options.speculative.engine.num_speculative_tokens = 4;
  options.speculative.engine.adaptive = false;
  auto e = LocalEngine::create(options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

void expect_idle(LocalEngine& e) {
  EXPECT_EQ(e.engine().blocks().num_free_blocks(), e.engine().blocks().num_blocks());
  if (auto* draft = dynamic_cast<const DraftModelProposer*>(e.engine().proposer())) {
    EXPECT_EQ(draft->blocks().num_free_blocks(), draft->blocks().num_blocks());
  }
}

using Outcome = testing::RunOutcome;

class ConstrainedSpeculationTest : public ::testing::Test {
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
  void expect_accepted(const nlohmann::json& body, const Outcome& o) {
    auto compiled = compiler_->compile(**grammar_spec_from_request(body));
    ASSERT_TRUE(compiled.ok());
    GrammarMatcher matcher(*compiled);
    EXPECT_EQ(matcher.accept_tokens(o.ids), o.ids.size()) << tokenizer_->decode(o.ids, false);
    if (o.finish == FinishReason::kStop) {
      EXPECT_TRUE(matcher.is_terminated()) << tokenizer_->decode(o.ids, false);
    }
  }
  std::shared_ptr<const Tokenizer> tokenizer_;
  std::shared_ptr<GrammarCompiler> compiler_;
};

using testing::kSpeculationJsonPrompt;
using testing::kSpeculationRegex;
using testing::kSpeculationRegexPrompt;
using testing::kSpeculationSchemaBody;

TEST_F(ConstrainedSpeculationTest, GreedyAndSeededOutputsAreThePlainOnesWithNgramAndDraft) {
  const nlohmann::json schema = nlohmann::json::parse(kSpeculationSchemaBody);
  const nlohmann::json regex = {{"guided_regex", kSpeculationRegex}};
  std::vector<Request> requests;
  std::vector<nlohmann::json> bodies;
  for (int i = 0; i < 2; ++i) {  // greedy, seeded sampled
    for (const nlohmann::json& body : {schema, regex}) {
      Request r;
      r.prompt_ids = *tokenizer_->encode(body.contains("guided_json") ? kSpeculationJsonPrompt : kSpeculationRegexPrompt, true);
      r.params = testing::speculation_params(i == 1, 96);
      r.constraint = constraint(body);
      requests.push_back(r);
      bodies.push_back(body);
    }
  }
  Request free;  // unconstrained, in the same batch
  free.prompt_ids = *tokenizer_->encode("Blessed are the meek: for they shall inherit the earth. Blessed", true);
  free.params.max_tokens = 40;
  free.params.temperature = 0.0f;
  free.params.ignore_eos = true;
  requests.push_back(free);
  bodies.push_back(nullptr);

  auto plain = make_engine(SpeculativeMethod::kNone);
  ASSERT_NE(plain, nullptr);
  const auto expected = testing::run_to_end(plain->engine(), requests);
  for (SpeculativeMethod method : {SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    SCOPED_TRACE(method == SpeculativeMethod::kNgram ? "ngram" : "draft");
    auto spec = make_engine(method);
    ASSERT_NE(spec, nullptr);
    const auto got = testing::run_to_end(spec->engine(), requests);
    ASSERT_EQ(got.size(), expected.size());
    for (const auto& [key, want] : expected) {
      const Outcome& o = got.at(key);
      SCOPED_TRACE(::testing::Message() << "request " << key.first << " sequence " << key.second);
      EXPECT_EQ(o.ids, want.ids) << tokenizer_->decode(o.ids, false) << "\nplain: " << tokenizer_->decode(want.ids, false);
      EXPECT_EQ(o.finish, want.finish);
      EXPECT_NE(o.finish, FinishReason::kError);
      ASSERT_EQ(o.logprobs.size(), want.logprobs.size());
      for (size_t t = 0; t < o.logprobs.size(); ++t) {
        // (NaN: no logprobs asked for, argmax rows; both runs must agree on that too.)
        EXPECT_EQ(std::isnan(o.logprobs[t]), std::isnan(want.logprobs[t])) << t;
        if (!std::isnan(want.logprobs[t])) {
          EXPECT_NEAR(o.logprobs[t], want.logprobs[t], 2e-4) << t;
        }
      }
      if (!bodies[key.first].is_null()) expect_accepted(bodies[key.first], o);
    }
    const SpeculationStats& stats = spec->engine().speculation_stats();
    EXPECT_GT(stats.num_constrained_drafts, 0);
    EXPECT_GT(stats.num_constrained_draft_tokens, 0);
    EXPECT_GT(stats.num_constrained_accepted_tokens, 0)
        << stats.num_constrained_accepted_tokens << " / " << stats.num_constrained_draft_tokens;
    EXPECT_LE(stats.num_constrained_accepted_tokens, stats.num_constrained_draft_tokens);
    EXPECT_EQ(stats.num_emitted_tokens, stats.num_drafts + stats.num_accepted_tokens);
    expect_idle(*spec);
  }
}

// Pearson's two-sample chi-square homogeneity statistic, bins pooled below 10 observations.
testing::ChiSquareResult two_sample_chi_square(const std::map<int32_t, double>& a, const std::map<int32_t, double>& b) {
  std::map<int32_t, std::pair<double, double>> joint;
  double na = 0.0, nb = 0.0;
  for (const auto& [t, c] : a) {
    joint[t].first += c;
    na += c;
  }
  for (const auto& [t, c] : b) {
    joint[t].second += c;
    nb += c;
  }
  std::vector<std::pair<double, double>> bins;
  double pa = 0.0, pb = 0.0;
  for (const auto& [t, xy] : joint) {
    if (xy.first + xy.second >= 10.0) {
      bins.push_back(xy);
    } else {
      pa += xy.first;
      pb += xy.second;
    }
  }
  if (pa + pb > 0.0) bins.emplace_back(pa, pb);
  testing::ChiSquareResult r;
  for (const auto& [x, y] : bins) {
    const double ea = (x + y) * na / (na + nb);
    const double eb = (x + y) * nb / (na + nb);
    r.statistic += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
  }
  r.df = static_cast<int>(bins.size()) - 1;
  return r;
}

TEST_F(ConstrainedSpeculationTest, UnseededSampledTokensWithTheDraftFollowTheMaskedTarget) {
  constexpr int kRequests = 1200;
  constexpr int kPosition = 3;  // after accepted and refused guesses alike
  // Lower-case words only: the draft's guesses (capitals, punctuation) are often refused.
  const nlohmann::json regex = {{"guided_regex", "[a-z ]{1,60}"}};
  auto histogram = [&](LocalEngine& e, float temperature) {
    std::vector<Request> requests;
    for (int i = 0; i < kRequests; ++i) {
      Request r;
      r.prompt_ids = *tokenizer_->encode("And God said unto Moses,", true);
      r.params.max_tokens = kPosition + 1;
      r.params.temperature = temperature;
      r.params.top_p = 0.95f;
      r.params.ignore_eos = true;
      r.constraint = constraint(regex);
      requests.push_back(r);
    }
    std::map<int32_t, double> counts;
    for (const auto& [key, o] : testing::run_to_end(e.engine(), requests)) {
      EXPECT_NE(o.finish, FinishReason::kError);
      expect_accepted(regex, o);
      if (static_cast<int>(o.ids.size()) > kPosition) counts[o.ids[kPosition]] += 1.0;
    }
    return counts;
  };
  // Blocks of 2: the shared prompt comes from the prefix cache.
  auto plain = make_engine(SpeculativeMethod::kNone, 2);
  auto draft = make_engine(SpeculativeMethod::kDraftModel, 2);
  ASSERT_TRUE(plain && draft);
  const auto expected = histogram(*plain, 0.8f);
  const auto chi = two_sample_chi_square(expected, histogram(*draft, 0.8f));
  EXPECT_LT(chi.statistic, testing::chi_square_critical(chi.df, 1e-3)) << "chi2 " << chi.statistic << ", df " << chi.df;
  const SpeculationStats& stats = draft->engine().speculation_stats();
  EXPECT_GT(stats.num_constrained_drafts, kRequests);
  EXPECT_GT(stats.num_constrained_accepted_tokens, 0);
  EXPECT_GT(stats.num_grammar_dropped_tokens, 0);
  // The check can fail: a hotter temperature is told apart.
  const auto hotter = two_sample_chi_square(expected, histogram(*draft, 1.3f));
  EXPECT_GT(hotter.statistic, testing::chi_square_critical(hotter.df, 1e-3));
  expect_idle(*draft);
}

}  // namespace
}  // namespace weft
