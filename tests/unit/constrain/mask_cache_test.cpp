// MaskCache: hits copy the stored row, eviction is least recently used and bounded in bytes.
// And the cache in use: a matcher whose grammar stores every keyed fill writes, at every step of
// random walks (with rollbacks, forks, and several matchers sharing the grammar at different
// absolute positions), exactly the rows of a matcher whose grammar has no cache, under schemas
// with length-bounded strings, string formats, nesting and arrays, and under any-JSON, regex and
// EBNF grammars.
#include "constrain/mask_cache.h"

#include <string>
#include <thread>
#include <vector>

#include "constrain/grammar_compiler.h"
#include "constrain_test_util.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using testing::encode;
using testing::FastRng;
using testing::load_tokenizer;
using testing::load_vocabulary;

std::vector<uint32_t> row_of(uint32_t value, size_t words = 8) {
  return std::vector<uint32_t>(words, value);
}

TEST(MaskCache, HitCopiesTheStoredRowAndItsFlag) {
  MaskCache cache(1 << 20);
  std::vector<uint32_t> out = row_of(0);
  EXPECT_FALSE(cache.lookup("a", out).has_value());
  cache.insert("a", row_of(7), true);
  cache.insert("b", row_of(9), false);
  const std::optional<bool> a = cache.lookup("a", out);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(*a);
  EXPECT_EQ(out, row_of(7));
  ASSERT_TRUE(cache.lookup("b", out).has_value());
  EXPECT_FALSE(*cache.lookup("b", out));
  EXPECT_EQ(out, row_of(9));
  // Keys are bytes, not C strings.
  cache.insert(std::string("c\0x", 3), row_of(1), true);
  EXPECT_FALSE(cache.lookup(std::string("c\0y", 3), out).has_value());
  EXPECT_TRUE(cache.lookup(std::string("c\0x", 3), out).has_value());
  // A row of another width is a miss, not an overrun.
  std::vector<uint32_t> wide = row_of(0, 9);
  EXPECT_FALSE(cache.lookup("a", wide).has_value());
  const MaskCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 4);
  EXPECT_EQ(s.misses, 3);
  EXPECT_EQ(s.entries, 3);
}

TEST(MaskCache, ReplacingAKeyKeepsOneEntry) {
  MaskCache cache(1 << 20);
  cache.insert("a", row_of(1), false);
  const size_t bytes = cache.stats().bytes;
  cache.insert("a", row_of(2), true);
  std::vector<uint32_t> out = row_of(0);
  ASSERT_TRUE(cache.lookup("a", out).value_or(false));
  EXPECT_EQ(out, row_of(2));
  EXPECT_EQ(cache.stats().entries, 1);
  EXPECT_EQ(cache.stats().bytes, bytes);
}

TEST(MaskCache, EvictsLeastRecentlyUsedWithinItsBytes) {
  // Measure one entry's size, then allow exactly three.
  MaskCache probe(1 << 20);
  probe.insert("k0", row_of(0, 64), false);
  const size_t entry_bytes = probe.stats().bytes;
  MaskCache cache(3 * entry_bytes);
  for (int i = 0; i < 3; ++i) cache.insert("k" + std::to_string(i), row_of(i, 64), false);
  std::vector<uint32_t> out = row_of(0, 64);
  ASSERT_TRUE(cache.lookup("k0", out).has_value());  // k1 is now the least recently used
  cache.insert("k3", row_of(3, 64), false);
  EXPECT_FALSE(cache.lookup("k1", out).has_value());
  for (const char* kept : {"k0", "k2", "k3"}) EXPECT_TRUE(cache.lookup(kept, out).has_value());
  const MaskCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_LE(s.bytes, 3 * entry_bytes);
  // A row larger than the whole bound is not stored and evicts nothing.
  cache.insert("huge", row_of(5, 4096), false);
  EXPECT_FALSE(cache.lookup("huge", out).has_value());
  EXPECT_EQ(cache.stats().entries, 3);
  // A bound of 0 keeps nothing.
  MaskCache none(0);
  none.insert("a", row_of(1), true);
  EXPECT_FALSE(none.lookup("a", out).has_value());
}

TEST(MaskCache, WorthStoringFollowsTheThreshold) {
  const MaskCache cache(1 << 20, 1e-3);
  EXPECT_FALSE(cache.worth_storing(0.5e-3));
  EXPECT_TRUE(cache.worth_storing(1e-3));
  EXPECT_TRUE(MaskCache(1, 0).worth_storing(0));
}

// Readers and writers on several threads (run under TSan by scripts/sanitize.sh): every hit
// returns a row some writer stored under that key, whole.
TEST(MaskCache, ConcurrentUseReturnsWholeRows) {
  MaskCache cache(64 * 200);  // small: constant eviction
  std::vector<std::thread> threads;
  std::vector<int> torn(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &torn, t] {
      std::vector<uint32_t> out(16);
      for (int i = 0; i < 3000; ++i) {
        const uint32_t k = static_cast<uint32_t>((i * 7 + t) % 23);
        if (i % 3 == 0) {
          cache.insert(std::to_string(k), std::vector<uint32_t>(16, k), k % 2 == 0);
        } else if (const auto hit = cache.lookup(std::to_string(k), out)) {
          torn[t] += out != std::vector<uint32_t>(16, k) || *hit != (k % 2 == 0);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(torn[t], 0) << "thread " << t;
  EXPECT_GT(cache.stats().hits, 0);
}

constexpr const char* kToolSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "enum": ["get_weather", "search", "book_flight"]},
    "arguments": {
      "type": "object",
      "properties": {
        "city": {"type": "string", "maxLength": 40},
        "date": {"type": "string", "format": "date"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "passengers": {"type": "array", "maxItems": 3, "items": {
          "type": "object",
          "properties": {"first": {"type": "string", "minLength": 1, "maxLength": 20},
                         "age": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
          "required": ["first"], "additionalProperties": false}},
        "email": {"type": "string", "format": "email"}
      },
      "required": ["city"],
      "additionalProperties": false
    }
  },
  "required": ["name", "arguments"],
  "additionalProperties": false
})";

// The same spec compiled twice: with a mask cache that stores every keyed fill, and without one.
struct CachedAndFresh {
  std::shared_ptr<const CompiledGrammar> cached;
  std::shared_ptr<const CompiledGrammar> fresh;
};

CachedAndFresh compile_both(const std::shared_ptr<const GrammarVocabulary>& vocab,
                            const GrammarSpec& spec) {
  GrammarCompilerOptions store_all;
  store_all.mask_cache_min_fill_seconds = 0;
  GrammarCompilerOptions no_cache;
  no_cache.mask_cache_bytes = 0;
  auto cached = GrammarCompiler(vocab, store_all).compile(spec);
  auto fresh = GrammarCompiler(vocab, no_cache).compile(spec);
  EXPECT_TRUE(cached.ok() && fresh.ok()) << spec.parameter();
  if (!cached.ok() || !fresh.ok()) return {};
  EXPECT_NE((*cached)->mask_cache(), nullptr);
  EXPECT_EQ((*fresh)->mask_cache(), nullptr);
  return {*cached, *fresh};
}

// A matcher of the cached grammar and its twin on the fresh grammar, fed the same tokens.
struct Twin {
  GrammarMatcher cached;
  GrammarMatcher fresh;
};

// Fills both twins' rows and requires them equal (the flag too); returns the cached row.
std::vector<uint32_t> fill_equal(Twin& twin, int32_t vocab_size, const std::string& where) {
  TokenBitmask a(1, vocab_size);
  TokenBitmask b(1, vocab_size);
  auto ra = twin.cached.fill_next_token_bitmask(a.row(0));
  auto rb = twin.fresh.fill_next_token_bitmask(b.row(0));
  EXPECT_TRUE(ra.ok() && rb.ok()) << where;
  if (ra.ok() && rb.ok()) EXPECT_EQ(*ra, *rb) << where;
  EXPECT_TRUE(std::ranges::equal(a.row(0), b.row(0))) << where;
  return std::vector<uint32_t>(a.row(0).begin(), a.row(0).end());
}

// Random walks over random logits on the cached grammar, with a rollback of 1-3 tokens now and
// then and a fork that walks on alone; every row equals the fresh grammar's.
void expect_cached_walks_equal_fresh(const CachedAndFresh& g, int walks, int max_steps) {
  ASSERT_TRUE(g.cached && g.fresh);
  const int32_t vocab_size = g.cached->vocabulary()->vocab_size();
  std::vector<float> logits(vocab_size);
  for (int w = 0; w < walks; ++w) {
    FastRng rng(1000 + w);
    Twin twin{GrammarMatcher(g.cached), GrammarMatcher(g.fresh)};
    for (int step = 0; step < max_steps && !twin.cached.is_terminated(); ++step) {
      const std::string where = "walk " + std::to_string(w) + " step " + std::to_string(step);
      std::vector<uint32_t> row = fill_equal(twin, vocab_size, where);
      if (::testing::Test::HasFailure()) return;
      for (float& l : logits) l = rng.uniform();
      // A model that ends: the stop tokens win once they are allowed, half of the walks.
      if (w % 2 == 0) {
        for (const int32_t s : g.cached->vocabulary()->stop_token_ids()) logits[s] += 2.0f;
      }
      apply_token_bitmask(logits, row, vocab_size);
      const int32_t best =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      ASSERT_TRUE(twin.cached.accept_token(best)) << where;
      ASSERT_TRUE(twin.fresh.accept_token(best)) << where;
      if (step % 11 == 10 && !twin.cached.is_terminated()) {
        const int32_t back = 1 + static_cast<int32_t>(rng.next() % 3);
        const int32_t n = std::min(back, twin.cached.tokens_accepted());
        ASSERT_TRUE(twin.cached.rollback(n).ok());
        ASSERT_TRUE(twin.fresh.rollback(n).ok());
        fill_equal(twin, vocab_size, where + " after rollback");
      }
      if (step == 25) {
        Twin forked{twin.cached.fork(), twin.fresh.fork()};
        fill_equal(forked, vocab_size, where + " fork");
      }
    }
  }
}

TEST(MaskCacheInUse, ToolSchemaWalksEqualFreshFills) {
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(vocab);
  for (const JsonWhitespace ws : {JsonWhitespace::kBounded, JsonWhitespace::kFixed}) {
    JsonOptions options;
    options.whitespace = ws;
    const CachedAndFresh g = compile_both(vocab, GrammarSpec::json_schema(kToolSchema, options));
    expect_cached_walks_equal_fresh(g, 6, 160);
    if (HasFailure()) return;
    // The walks went through the cache, not around it.
    const MaskCacheStats s = g.cached->mask_cache()->stats();
    EXPECT_GT(s.hits, 0);
    EXPECT_GT(s.entries, 0);
  }
}

TEST(MaskCacheInUse, OtherGrammarsEqualFreshFills) {
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(vocab);
  const std::vector<GrammarSpec> specs = {
      GrammarSpec::any_json(),
      GrammarSpec::regex("[A-Z][a-z]{2,12} [0-9]{1,4}(, [A-Z][a-z]+)*"),
      GrammarSpec::ebnf("root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\n"
                        "term ::= num | \"(\" expr \")\"\nnum ::= [0-9]+"),
  };
  for (const GrammarSpec& spec : specs) {
    SCOPED_TRACE(spec.parameter());
    expect_cached_walks_equal_fresh(compile_both(vocab, spec), 4, 120);
    if (HasFailure()) return;
  }
}

// The same parser states reached at different absolute positions (different property values
// before the string) and by different matchers share rows: the second document's string states
// are hits, and equal the fresh fills.
TEST(MaskCacheInUse, StatesAtDifferentPositionsShareRows) {
  auto tok = load_tokenizer("qwen3");
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(tok && vocab);
  const CachedAndFresh g = compile_both(vocab, GrammarSpec::json_schema(kToolSchema));
  ASSERT_TRUE(g.cached && g.fresh);
  const std::vector<std::string> documents = {
      R"({"name": "search", "arguments": {"city": "Rome", "email": "ada@example.com"}})",
      R"({"name": "book_flight", "arguments": {"city": "Rome", "email": "ada@example.com"}})",
  };
  int64_t hits_before_second = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    if (d == 1) hits_before_second = g.cached->mask_cache()->stats().hits;
    Twin twin{GrammarMatcher(g.cached), GrammarMatcher(g.fresh)};
    const std::vector<int32_t> ids = encode(*tok, documents[d]);
    for (size_t i = 0; i < ids.size(); ++i) {
      fill_equal(twin, vocab->vocab_size(), "document " + std::to_string(d) + " token " +
                                                std::to_string(i));
      ASSERT_TRUE(twin.cached.accept_token(ids[i]));
      ASSERT_TRUE(twin.fresh.accept_token(ids[i]));
    }
    fill_equal(twin, vocab->vocab_size(), "document end");
    EXPECT_TRUE(twin.cached.is_completed());
  }
  EXPECT_GT(encode(*tok, R"({"name": "book_flight")").size(),
            encode(*tok, R"({"name": "search")").size());  // the positions really differ
  EXPECT_GT(g.cached->mask_cache()->stats().hits, hits_before_second);
}

// Matchers of one grammar filled together on a pool (the engine's batched fill) write the rows
// of the fresh grammar's matchers.
TEST(MaskCacheInUse, BatchedFillOnAPoolEqualsFreshFills) {
  auto tok = load_tokenizer("qwen3");
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(tok && vocab);
  const CachedAndFresh g = compile_both(vocab, GrammarSpec::json_schema(kToolSchema));
  ASSERT_TRUE(g.cached && g.fresh);
  const std::vector<int32_t> ids =
      encode(*tok, R"({"name": "search", "arguments": {"city": "Par", "email": "x.y@exa)");
  constexpr int kBatch = 12;
  std::vector<GrammarMatcher> cached;
  std::vector<GrammarMatcher> fresh;
  for (int b = 0; b < kBatch; ++b) {
    // Pairs of matchers at each point: the second of a pair may hit what the first stored.
    const size_t n = std::min(ids.size(), static_cast<size_t>(b / 2) * ids.size() / 5);
    cached.emplace_back(g.cached);
    fresh.emplace_back(g.fresh);
    ASSERT_EQ(cached.back().accept_tokens(std::span(ids).first(n)), n);
    ASSERT_EQ(fresh.back().accept_tokens(std::span(ids).first(n)), n);
  }
  std::vector<GrammarMatcher*> cached_ptrs;
  std::vector<GrammarMatcher*> fresh_ptrs;
  for (int b = 0; b < kBatch; ++b) {
    cached_ptrs.push_back(&cached[b]);
    fresh_ptrs.push_back(&fresh[b]);
  }
  ThreadPool pool(2);
  TokenBitmask want(kBatch, vocab->vocab_size());
  ASSERT_TRUE(fill_next_token_bitmasks(fresh_ptrs, want).ok());
  for (int round = 0; round < 3; ++round) {
    TokenBitmask got(kBatch, vocab->vocab_size());
    ASSERT_TRUE(fill_next_token_bitmasks(cached_ptrs, got, {}, &pool).ok());
    for (int b = 0; b < kBatch; ++b) {
      EXPECT_TRUE(std::ranges::equal(got.row(b), want.row(b))) << "round " << round << " row " << b;
    }
  }
  EXPECT_GT(g.cached->mask_cache()->stats().hits, 0);
}

}  // namespace
}  // namespace weft
