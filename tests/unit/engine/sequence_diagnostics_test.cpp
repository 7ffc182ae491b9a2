// SequenceDiagnostics through the whole Engine on the default model (configs/default-model): a
// request's own attention recording (Request::record_attention, what weft serve's "weft_debug"
// uses) gives the weights a whole-run probe (weft inspect's) records for the same request run
// alone, while it shares its steps with other requests (which record nothing) and under
// speculation; the sequence's KV blocks; and the tokens banned-phrase rollbacks withdrew.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "engine/local_engine.h"
#include "engine/text_detokenizer.h"
#include "model/layers/attention_probe.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

const std::string kModel = std::string(WEFT_SOURCE_DIR) + "/configs/default-model";
const char* const kPrompt = "And God said unto Moses,";

using RowKey = std::tuple<int, int, int32_t>;  // layer, head, position

class SequenceDiagnosticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::load(kModel);
    ASSERT_TRUE(t.ok()) << t.status();
    tokenizer_ = *t;
  }

  std::unique_ptr<LocalEngine> engine(std::shared_ptr<AttentionProbe> probe = nullptr,
                                      SpeculativeMethod speculative = SpeculativeMethod::kNone) {
    LocalEngineOptions options;
    options.model_dir = kModel;
    options.num_threads = 2;
    options.kv.block_size = 4;
    options.kv.memory_bytes = 64ll << 20;
    options.seed = 5;
    options.attention_probe = std::move(probe);
    options.speculative.method = speculative;
    if (speculative == SpeculativeMethod::kDraftModel) {
      options.speculative.draft_model = std::string(WEFT_SOURCE_DIR) + "/configs/default-draft";
    }
    options.speculative.engine.adaptive = false;
    auto e = LocalEngine::create(options, text_detokenizers(tokenizer_));
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? std::move(*e) : nullptr;
  }

  Request request(const std::string& prompt, int max_tokens) {
    Request r;
    r.prompt_ids = *tokenizer_->encode(prompt, true);
    r.params.max_tokens = max_tokens;
    r.params.temperature = 0.0f;
    return r;
  }

  // Runs `requests`; returns every output of request 0, in order.
  static std::vector<SequenceOutput> run(Engine& engine, const std::vector<Request>& requests) {
    std::vector<SequenceOutput> first;
    std::vector<int64_t> ids;
    for (const Request& r : requests) {
      auto id = engine.add_request(r);
      EXPECT_TRUE(id.ok()) << id.status();
      ids.push_back(id.ok() ? *id : -1);
    }
    while (engine.has_unfinished()) {
      auto step = engine.step();
      EXPECT_TRUE(step.ok()) << step.status();
      if (!step.ok()) break;
      for (SequenceOutput& o : *step) {
        if (o.request_id != ids.front()) {
          EXPECT_FALSE(o.diagnostics.has_value()) << "request " << o.request_id << " asked for none";
          continue;
        }
        first.push_back(std::move(o));
      }
    }
    return first;
  }

  std::shared_ptr<const Tokenizer> tokenizer_;
};

const AttentionSelection kSelection = {{0, 1}, {0, 3}};

TEST_F(SequenceDiagnosticsTest, RecordedAttentionEqualsTheWholeRunProbeOfTheRequestAlone) {
  const int kTokens = 12;
  // The reference: weft inspect's probe over a run of the request alone.
  auto probe = std::make_shared<AttentionProbe>(kSelection);
  auto alone = engine(probe);
  Request plain = request(kPrompt, kTokens);
  plain.params.diagnostics = true;
  const std::vector<SequenceOutput> reference_outputs = run(alone->engine(), {plain});
  std::map<RowKey, std::vector<float>> reference;
  for (const AttentionRecord& r : probe->records()) reference[{r.layer, r.head, r.position}] = r.weights;
  const int32_t prompt_len = static_cast<int32_t>(plain.prompt_ids.size());
  // One row per generated token chose it: positions prompt_len - 1 .. prompt_len + kTokens - 2.
  ASSERT_EQ(reference.size(), 2u * 2u * kTokens);

  for (SpeculativeMethod method : {SpeculativeMethod::kNone, SpeculativeMethod::kNgram, SpeculativeMethod::kDraftModel}) {
    auto local = engine(nullptr, method);
    Request recorded = request(kPrompt, kTokens);
    recorded.params.diagnostics = true;
    recorded.record_attention = kSelection;
    // Other requests share the steps (and their prefill chunks); they record nothing.
    std::vector<Request> requests = {recorded, request("And it came to pass", 20), request(kPrompt, 16)};
    const std::vector<SequenceOutput> outputs = run(local->engine(), requests);
    std::map<RowKey, std::vector<float>> got;
    std::vector<int32_t> ids;
    for (const SequenceOutput& o : outputs) {
      ASSERT_TRUE(o.diagnostics.has_value());
      for (const AttentionRecord& r : o.diagnostics->attention) got[{r.layer, r.head, r.position}] = r.weights;
      ids.insert(ids.end(), o.token_ids.begin(), o.token_ids.end());
    }
    std::vector<int32_t> reference_ids;
    for (const SequenceOutput& o : reference_outputs) {
      reference_ids.insert(reference_ids.end(), o.token_ids.begin(), o.token_ids.end());
    }
    EXPECT_EQ(ids, reference_ids) << static_cast<int>(method);
    for (const auto& [key, weights] : reference) {
      const auto& [layer, head, position] = key;
      ASSERT_TRUE(got.count(key)) << "layer " << layer << " head " << head << " position " << position;
      const std::vector<float>& w = got.at(key);
      ASSERT_EQ(w.size(), weights.size());
      for (size_t p = 0; p < w.size(); ++p) {
        EXPECT_NEAR(w[p], weights[p], 1e-6) << "method " << static_cast<int>(method) << " layer " << layer
                                            << " head " << head << " position " << position << " key " << p;
      }
    }
    // Nothing past the last row that chose a token but a verified guess (speculation) may come.
    for (const auto& [key, weights] : got) {
      EXPECT_GE(std::get<2>(key), prompt_len - 1);
      EXPECT_EQ(weights.size(), static_cast<size_t>(std::get<2>(key)) + 1);
    }
  }
}

TEST_F(SequenceDiagnosticsTest, KvBlocksAreTheSequencesOwn) {
  auto local = engine();
  Request r = request(kPrompt, 10);
  r.params.diagnostics = true;
  const int64_t prompt_len = static_cast<int64_t>(r.prompt_ids.size());
  const std::vector<SequenceOutput> outputs = run(local->engine(), {r, request("And it came to pass", 30)});
  ASSERT_EQ(outputs.size(), 10u);
  for (size_t i = 0; i < outputs.size(); ++i) {
    ASSERT_TRUE(outputs[i].diagnostics.has_value());
    // After the step that chose token i, the cache holds the prompt and the tokens before it.
    const int64_t cached = prompt_len + static_cast<int64_t>(i);
    EXPECT_EQ(outputs[i].diagnostics->kv_blocks, (cached + 3) / 4) << "token " << i;
    EXPECT_TRUE(outputs[i].diagnostics->rollbacks.empty());
    EXPECT_TRUE(outputs[i].diagnostics->attention.empty());  // none asked for
  }
}

TEST_F(SequenceDiagnosticsTest, RollbacksNameTheWithdrawnTokensAndTheBan) {
  auto local = engine();
  Request r = request(kPrompt, 60);
  r.params.diagnostics = true;
  auto set = BannedPhraseSet::compile({"children of Israel", "THE lord"}, "test", {});
  ASSERT_TRUE(set.ok()) << set.status();
  r.banned_phrases = {*set};
  const std::vector<SequenceOutput> outputs = run(local->engine(), {r});
  std::vector<int32_t> ids;
  std::vector<SequenceDiagnostics::Rollback> rollbacks;
  for (const SequenceOutput& o : outputs) {
    ids.insert(ids.end(), o.token_ids.begin(), o.token_ids.end());
    for (const auto& rb : o.diagnostics->rollbacks) rollbacks.push_back(rb);
  }
  ASSERT_FALSE(rollbacks.empty());
  int64_t withdrawn = 0;
  for (size_t i = 0; i < rollbacks.size(); ++i) {
    const auto& rb = rollbacks[i];
    ASSERT_FALSE(rb.token_ids.empty());
    EXPECT_EQ(rb.banned_token, rb.token_ids.front());
    ASSERT_LT(rb.at, static_cast<int64_t>(ids.size()));
    withdrawn += static_cast<int64_t>(rb.token_ids.size());
    // A ban holds unless a later rollback began before it: then the output there is another token.
    bool lifted = false;
    for (size_t j = i + 1; j < rollbacks.size(); ++j) lifted = lifted || rollbacks[j].at < rb.at;
    if (!lifted) EXPECT_NE(ids[rb.at], rb.banned_token) << "index " << rb.at;
  }
  EXPECT_EQ(withdrawn, local->engine().banned_phrase_stats().rolled_back_tokens);
}

}  // namespace
}  // namespace weft
