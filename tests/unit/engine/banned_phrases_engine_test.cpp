// Banned phrases through the whole Engine on the default model (configs/default-model, a small
// Llama trained on the KJV Bible): phrases its unconstrained output really contains never reach
// the output, greedy and seeded sampling stay deterministic across prefix caching, preemption,
// block sizes and speculation, the rolled-back KV matches a fresh recompute, and a sequence that
// can only produce banned text ends with "content_filter".
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/local_engine.h"
#include "engine/text_detokenizer.h"
#include "safety/phrase_normalizer.h"
#include "tests/unit/engine/run_to_end.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

const std::string kModel = std::string(WEFT_SOURCE_DIR) + "/configs/default-model";

struct Options {
  int block_size = 4;
  int64_t max_blocks = 0;
  bool prefix_caching = true;
  SpeculativeMethod speculative = SpeculativeMethod::kNone;
};

using Outcome = testing::RunOutcome;

class BannedPhrasesEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::load(kModel);
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = *t;
  }

  std::unique_ptr<LocalEngine> engine(const Options& o) {
    LocalEngineOptions options;
    options.model_dir = kModel;
    options.num_threads = 2;
    options.kv.block_size = o.block_size;
    options.kv.max_blocks = o.max_blocks;
    options.kv.memory_bytes = 64ll << 20;
    options.scheduler.enable_prefix_caching = o.prefix_caching;
    options.seed = 5;
    options.speculative.method = o.speculative;
    if (o.speculative == SpeculativeMethod::kDraftModel) {
      options.speculative.draft_model = std::string(WEFT_SOURCE_DIR) + "/configs/default-draft";
    }
    options.speculative.engine.adaptive = false;
    auto e = LocalEngine::create(options, text_detokenizers(tokenizer_));
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }

  Request request(const std::string& prompt, int max_tokens, float temperature = 0.0f) {
    Request r;
    r.prompt_ids = *tokenizer_->encode(prompt, true);
    r.params.max_tokens = max_tokens;
    r.params.temperature = temperature;
    return r;
  }

  static std::shared_ptr<const BannedPhraseSet> phrases(const std::vector<std::string>& list) {
    auto set = BannedPhraseSet::compile(list, "test", {});
    EXPECT_TRUE(set.ok()) << set.status();
    return *set;
  }

  static std::map<std::pair<int64_t, int>, Outcome> run(Engine& engine, const std::vector<Request>& requests) {
    return testing::run_to_end(engine, requests);
  }

  // Whether `text` contains `phrase` in the matching form (case-insensitive, NFKC).
  static bool contains(const std::string& text, const std::string& phrase) {
    return normalize_phrase(text).find(normalize_phrase(phrase)) != std::u32string::npos;
  }

  // What every screened output must be: free of the phrases, and its streamed text the decode of
  // the tokens it streamed (nothing was sent that a rollback took back).
  void expect_clean(const Outcome& o, const std::vector<std::string>& banned) {
    for (const std::string& p : banned) EXPECT_FALSE(contains(o.text, p)) << p << " in " << o.text;
    EXPECT_EQ(o.text, tokenizer_->decode(o.ids, true));
    EXPECT_NE(o.finish, FinishReason::kNone);
  }

  std::shared_ptr<const Tokenizer> tokenizer_;
};

const std::vector<std::string> kBanned = {"children of Israel", "THE lord"};
const char* const kPrompt = "And God said unto Moses,";

TEST_F(BannedPhrasesEngineTest, GreedyOutputNeverHoldsThePhrasesItWouldProduce) {
  auto plain = engine({});
  const Outcome unscreened = run(plain->engine(), {request(kPrompt, 60)}).at({0, 0});
  for (const std::string& p : kBanned) ASSERT_TRUE(contains(unscreened.text, p)) << unscreened.text;

  std::vector<int32_t> first;
  for (const Options& o : {Options{}, Options{16, 0, true}, Options{4, 0, false}, Options{4, 24, true},
                           Options{4, 0, true, SpeculativeMethod::kNgram},
                           Options{4, 0, true, SpeculativeMethod::kDraftModel}}) {
    auto local = engine(o);
    Request r = request(kPrompt, 60);
    r.banned_phrases = {phrases(kBanned)};
    const Outcome screened = run(local->engine(), {r}).at({0, 0});
    expect_clean(screened, kBanned);
    EXPECT_GT(local->engine().banned_phrase_stats().matches, 0);
    EXPECT_EQ(local->engine().banned_phrase_stats().content_filtered, 0);
    EXPECT_EQ(screened.finish, FinishReason::kLength);
    EXPECT_EQ(screened.ids.size(), 60u);
    // The same tokens whatever the block size, prefix caching, preemption or speculation.
    if (first.empty()) first = screened.ids;
    EXPECT_EQ(screened.ids, first) << "block size " << o.block_size << ", max blocks " << o.max_blocks;
    EXPECT_EQ(local->engine().blocks().num_free_blocks(), local->engine().blocks().num_blocks());
  }
}

TEST_F(BannedPhrasesEngineTest, SeededSamplingIsRepeatableForEverySequence) {
  std::vector<Request> requests;
  for (int i = 0; i < 3; ++i) {
    Request r = request(i == 1 ? "And it came to pass" : kPrompt, 48, 0.8f);
    r.params.seed = 11 + i;
    r.params.n = 2;
    r.banned_phrases = {phrases(kBanned), phrases({"Moses said", "and the"})};
    requests.push_back(r);
  }
  std::map<std::pair<int64_t, int>, Outcome> first;
  for (const Options& o : {Options{}, Options{4, 40, true}, Options{4, 0, true, SpeculativeMethod::kNgram},
                           Options{4, 0, true, SpeculativeMethod::kDraftModel}}) {
    auto local = engine(o);
    auto outcomes = run(local->engine(), requests);
    ASSERT_EQ(outcomes.size(), 6u);
    for (const auto& [key, outcome] : outcomes) {
      expect_clean(outcome, {"children of Israel", "the LORD", "Moses said", "and the"});
      if (!first.empty()) {
        EXPECT_EQ(outcome.ids, first.at(key).ids) << key.first << "/" << key.second;
      }
    }
    EXPECT_GT(local->engine().banned_phrase_stats().matches, 0);
    // Speculation met the banned positions: their guesses were screened (the draft's point
    // masses there are the banned tokens themselves, all dropped).
    const SpeculationStats& spec = local->engine().speculation_stats();
    if (o.speculative == SpeculativeMethod::kNone) {
      EXPECT_EQ(spec.num_banned_screened, 0);
    } else {
      EXPECT_GT(spec.num_banned_screened, 0);
      EXPECT_GT(spec.num_banned_dropped_tokens, 0);
    }
    if (first.empty()) first = outcomes;
  }
}

TEST_F(BannedPhrasesEngineTest, RolledBackKvGivesTheLogprobsOfAFreshRecompute) {
  auto local = engine({});
  Request r = request(kPrompt, 60);
  r.params.logprobs = 0;
  r.banned_phrases = {phrases(kBanned)};
  const Outcome screened = run(local->engine(), {r}).at({0, 0});
  ASSERT_GT(local->engine().banned_phrase_stats().rolled_back_tokens, 0);
  // A fresh engine scores prompt + output in one prefill: each kept token's logprob there must be
  // the one the screened run reported after its rollbacks and recomputes.
  auto fresh = engine({4, 0, false});
  std::vector<int32_t> all = r.prompt_ids;
  all.insert(all.end(), screened.ids.begin(), screened.ids.end());
  auto scores = fresh->engine().score(all);
  ASSERT_TRUE(scores.ok()) << scores.status();
  for (size_t i = 0; i < screened.ids.size(); ++i) {
    EXPECT_NEAR(screened.logprobs[i], (*scores)[r.prompt_ids.size() - 1 + i], 2e-3) << "token " << i;
  }
}

TEST_F(BannedPhrasesEngineTest, OnlyBannedContinuationsEndWithContentFilter) {
  std::vector<std::string> letters;
  for (char c = 'a'; c <= 'z'; ++c) letters.emplace_back(1, c);
  std::vector<int32_t> plain;
  for (SpeculativeMethod method : {SpeculativeMethod::kNone, SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    auto local = engine({4, 0, true, method});
    Request r = request(kPrompt, 40);
    r.banned_phrases = {phrases(letters)};
    const Outcome o = run(local->engine(), {r}).at({0, 0});
    expect_clean(o, letters);
    EXPECT_EQ(o.finish, FinishReason::kContentFilter);
    EXPECT_EQ(local->engine().banned_phrase_stats().content_filtered, 1);
    EXPECT_EQ(local->engine().blocks().num_free_blocks(), local->engine().blocks().num_blocks());
    if (method == SpeculativeMethod::kNone) plain = o.ids;
    EXPECT_EQ(o.ids, plain) << static_cast<int>(method);
  }
}

// Unseeded sampling with the draft (guesses drawn from q, a banned first guess kept and rejected
// by the masked target): outputs stay clean and every block comes back.
TEST_F(BannedPhrasesEngineTest, UnseededSamplingWithTheDraftStaysClean) {
  auto local = engine({4, 0, true, SpeculativeMethod::kDraftModel});
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    Request r = request(kPrompt, 40, 0.8f);
    r.banned_phrases = {phrases(kBanned), phrases({"Moses said", "and the"})};
    requests.push_back(r);
  }
  for (const auto& [key, outcome] : run(local->engine(), requests)) {
    expect_clean(outcome, {"children of Israel", "the LORD", "Moses said", "and the"});
    EXPECT_NE(outcome.finish, FinishReason::kError);
  }
  EXPECT_GT(local->engine().banned_phrase_stats().matches, 0);
  EXPECT_GT(local->engine().speculation_stats().num_drafts, 0);
  EXPECT_EQ(local->engine().blocks().num_free_blocks(), local->engine().blocks().num_blocks());
}

TEST_F(BannedPhrasesEngineTest, StopStringsSeeOnlyScreenedText) {
  auto local = engine({});
  Request r = request(kPrompt, 60);
  r.params.stop = {"Moses"};
  r.banned_phrases = {phrases({"the LORD"})};
  const Outcome o = run(local->engine(), {r}).at({0, 0});
  // The stop string's tokens are streamed, its text is not (vLLM's default).
  EXPECT_EQ(o.finish, FinishReason::kStop);
  EXPECT_EQ(o.text + "Moses", tokenizer_->decode(o.ids, true));
  EXPECT_FALSE(contains(o.text, "the LORD")) << o.text;
  EXPECT_GT(local->engine().banned_phrase_stats().matches, 0);
}

TEST_F(BannedPhrasesEngineTest, RequestsWithoutTextCannotBeScreened) {
  LocalEngineOptions options;
  options.model_dir = kModel;
  options.num_threads = 1;
  options.kv.memory_bytes = 16ll << 20;
  auto local = LocalEngine::create(options);  // no detokenizers
  ASSERT_TRUE(local.ok()) << local.status();
  Request r = request(kPrompt, 4);
  r.banned_phrases = {phrases({"x"})};
  EXPECT_EQ((*local)->engine().add_request(r).status().message(),
            "banned_phrases: this engine produces no text (no tokenizer) to screen");
}

}  // namespace
}  // namespace weft
