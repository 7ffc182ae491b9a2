// Constraint masks filled ahead on their own thread (engine/mask_prefetcher.h): the
// MaskPrefetcher's hand-over (finished, running, not started, stale, forgotten jobs), and the
// whole Engine on the default model giving token for token the same outputs with the overlap on
// and off -- greedy and seeded sampling, n > 1 forks, preemption under a tight KV budget, banned
// phrase rollbacks -- beside unconstrained sequences. In scripts/sanitize.sh tsan's list (engine_test).
#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "engine/local_engine.h"
#include "engine/mask_prefetcher.h"
#include "engine/text_detokenizer.h"
#include "tests/unit/engine/run_to_end.h"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

const std::string kModel = std::string(WEFT_SOURCE_DIR) + "/configs/default-model";

// A constraint plain enough to check by hand: after a token t (or at the start, t = -1) only ids
// with id % 5 == (t + 1) % 5 (mod 5, made non-negative) may follow. It fails the test when its
// state is read and changed at once (TSan reports the race itself too), and its fill spins a
// while, so the engine's worker is often mid-fill when sampling wants the mask.
class ModuloConstraint final : public TokenConstraint {
 public:
  explicit ModuloConstraint(int32_t vocab) : vocab_(vocab) {}
  ModuloConstraint(const ModuloConstraint& other) : vocab_(other.vocab_), history_(other.history_) {}

  int32_t next_residue() const { return history_.empty() ? 0 : (history_.back() + 1) % 5; }
  absl::StatusOr<bool> fill_next_allowed(std::span<uint32_t> row) override {
    Busy busy(*this);
    const int32_t residue = next_residue();
    std::fill(row.begin(), row.end(), 0u);
    for (int32_t id = residue; id < vocab_; id += 5) row[id >> 5] |= 1u << (id & 31);
    volatile uint64_t spin = 0;
    for (int i = 0; i < 200000; ++i) spin = spin + i;
    return true;
  }
  bool accept(int32_t token) override {
    Busy busy(*this);
    if (token < 0 || token >= vocab_ || token % 5 != next_residue()) return false;
    history_.push_back(token);
    return true;
  }
  absl::Status rollback(int count) override {
    Busy busy(*this);
    history_.resize(history_.size() - static_cast<size_t>(count));
    return absl::OkStatus();
  }
  std::unique_ptr<TokenConstraint> fork() const override { return std::make_unique<ModuloConstraint>(*this); }
  bool is_terminated() const override { return false; }

 private:
  struct Busy {
    explicit Busy(ModuloConstraint& c) : c(c) { EXPECT_FALSE(c.busy_.exchange(true)) << "constraint used concurrently"; }
    ~Busy() { c.busy_ = false; }
    ModuloConstraint& c;
  };
  int32_t vocab_;
  std::vector<int32_t> history_;
  std::atomic<bool> busy_{false};
};

class ModuloSource final : public TokenConstraintSource {
 public:
  explicit ModuloSource(int32_t vocab) : vocab_(vocab) {}
  std::unique_ptr<TokenConstraint> start() const override { return std::make_unique<ModuloConstraint>(vocab_); }

 private:
  int32_t vocab_;
};

constexpr int32_t kVocab = 4096;  // the default model's
const int32_t kWords = mask_words(kVocab);

bool allows(const std::vector<uint32_t>& row, int32_t id) { return (row[id >> 5] >> (id & 31)) & 1u; }

TEST(MaskPrefetcherTest, TakeGivesTheMaskOfTheCurrentStateWhateverTheJobsState) {
  MaskPrefetcher prefetcher(kWords);
  ModuloConstraint a(kVocab), b(kVocab), c(kVocab);
  ASSERT_TRUE(b.accept(0));  // b next allows residue 1
  ASSERT_TRUE(c.accept(0));
  ASSERT_TRUE(c.accept(1));  // c next allows residue 2
  prefetcher.start(1, 0, &a);
  prefetcher.start(2, 7, &b);
  prefetcher.start(3, 0, &c);
  std::vector<uint32_t> row(kWords);
  // Finished, running or not yet started: each take gets its own sequence's mask.
  for (auto [seq, version, constraint, residue] :
       {std::tuple{1, 0, &a, 0}, std::tuple{2, 7, &b, 1}, std::tuple{3, 0, &c, 2}}) {
    auto filled = prefetcher.take(seq, version, *constraint, row);
    ASSERT_TRUE(filled.ok());
    EXPECT_TRUE(*filled);
    for (int32_t id = 0; id < 10; ++id) EXPECT_EQ(allows(row, id), id % 5 == residue) << seq << " " << id;
  }
  // Forgotten: the constraint may change, and take finds no job and fills the mask itself.
  prefetcher.start(1, 0, &a);
  prefetcher.forget(1);
  ASSERT_TRUE(a.accept(0));
  ASSERT_TRUE(prefetcher.take(1, 1, a, row).ok());
  EXPECT_TRUE(allows(row, 1));
  EXPECT_FALSE(allows(row, 0));
  // A job made at another version is never used: the mask is refilled for the state now.
  ModuloConstraint d(kVocab);
  prefetcher.start(6, 3, &d);
  auto stale = prefetcher.take(6, 4, c, row);  // (c: the constraint now, as after a rollback)
  ASSERT_TRUE(stale.ok());
  EXPECT_TRUE(allows(row, 2));
  EXPECT_FALSE(allows(row, 0));
  // Jobs still queued at destruction are dropped, the running one finishes first.
  for (int64_t seq = 10; seq < 20; ++seq) prefetcher.start(seq, 0, &c);
}

struct Outputs {
  std::map<std::pair<int64_t, int>, testing::RunOutcome> outcomes;
  int64_t prefetched = 0;
};

Outputs generate(bool overlap, int64_t max_blocks, const std::shared_ptr<const Tokenizer>& tokenizer) {
  LocalEngineOptions options;
  options.model_dir = kModel;
  options.num_threads = 2;
  options.kv.block_size = 4;
  options.kv.max_blocks = max_blocks;
  options.kv.memory_bytes = 64ll << 20;
  options.seed = 3;
  options.overlap_constraint_masks = overlap;
  auto local = LocalEngine::create(options, text_detokenizers(tokenizer));
  EXPECT_TRUE(local.ok()) << local.status();
  if (!local.ok()) return {};
  auto source = std::make_shared<ModuloSource>(kVocab);
  auto banned = BannedPhraseSet::compile({"the", "and", "of"}, "test", {});
  EXPECT_TRUE(banned.ok()) << banned.status();
  std::vector<Request> requests;
  for (int i = 0; i < 8; ++i) {
    Request r;
    r.prompt_ids = *tokenizer->encode(i % 2 ? "And God said" : "In the beginning God created", true);
    r.params.max_tokens = 40 + 3 * i;
    r.params.ignore_eos = true;
    r.params.temperature = i % 3 == 0 ? 0.0f : 0.9f;
    r.params.seed = i;
    r.params.n = i % 4 == 1 ? 3 : 1;
    if (i != 2) r.constraint = source;  // one unconstrained sequence beside them
    if (i == 5) r.banned_phrases = {*banned};
    requests.push_back(r);
  }
  Outputs result;
  Engine& engine = (*local)->engine();
  result.outcomes = testing::run_to_end(engine, requests);
  result.prefetched = engine.num_prefetched_masks();
  EXPECT_EQ(engine.blocks().num_free_blocks(), engine.blocks().num_blocks());
  return result;
}

TEST(MaskPrefetchEngineTest, OutputsAreTheSameWithTheOverlapOnAndOff) {
  auto tokenizer = Tokenizer::load(kModel);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  for (int64_t blocks : {0, 48}) {  // 48 blocks of 4: tight enough to preempt
    const Outputs off = generate(false, blocks, *tokenizer);
    const Outputs on = generate(true, blocks, *tokenizer);
    EXPECT_EQ(off.prefetched, 0);
    EXPECT_GT(on.prefetched, 0);  // the worker did fill masks the sampler used
    ASSERT_EQ(on.outcomes.size(), off.outcomes.size());
    ASSERT_EQ(on.outcomes.size(), 12u);  // 8 requests, two of them n = 3
    for (const auto& [key, expected] : off.outcomes) {
      const testing::RunOutcome& got = on.outcomes.at(key);
      EXPECT_EQ(got.ids, expected.ids) << "request " << key.first << " sequence " << key.second;
      EXPECT_EQ(got.finish, expected.finish);
      EXPECT_NE(got.finish, FinishReason::kError);
      // Every token follows the constraint (request 2 has none).
      if (key.first == 2) continue;
      for (size_t t = 0; t < got.ids.size(); ++t) {
        const int32_t residue = t == 0 ? 0 : (got.ids[t - 1] + 1) % 5;
        EXPECT_EQ(got.ids[t] % 5, residue) << "request " << key.first << " token " << t;
      }
    }
  }
}

}  // namespace
}  // namespace weft
