// GrammarMatcher on real tokenizers: greedy walks over random logits under JSON schema, regex,
// choice and EBNF constraints produce text that satisfies them; rollback, draft verification,
// fork, termination and the batched mask fill.
#include "constrain/grammar_matcher.h"

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "constrain/grammar_compiler.h"
#include "constrain_test_util.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

using testing::encode;
using testing::greedy_walk;
using testing::load_tokenizer;
using testing::load_vocabulary;

std::shared_ptr<const CompiledGrammar> compile_or_die(GrammarCompiler& compiler,
                                                      const GrammarSpec& spec) {
  auto compiled = compiler.compile(spec);
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  return compiled.ok() ? *compiled : nullptr;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    "kind": {"enum": ["cat", "dog", "bird"]},
    "ok": {"type": "boolean"},
    "home": {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
             "required": ["zip"], "additionalProperties": false}
  },
  "required": ["name", "age", "kind"],
  "additionalProperties": false
})";

// Checks `doc` against kPersonSchema; returns "" or what is wrong.
std::string person_violation(const nlohmann::json& doc) {
  if (!doc.is_object()) return "not an object";
  static const std::set<std::string> known = {"name", "age", "tags", "kind", "ok", "home"};
  for (const auto& [k, v] : doc.items())
    if (!known.count(k)) return "unknown property " + k;
  for (const char* k : {"name", "age", "kind"})
    if (!doc.contains(k)) return std::string("missing ") + k;
  const auto& name = doc["name"];
  if (!name.is_string()) return "name not a string";
  const size_t len = utf8_length(name.get<std::string>());
  if (len < 1 || len > 12) return "name length " + std::to_string(len);
  const auto& age = doc["age"];
  if (!age.is_number_integer() || age.get<int64_t>() < 0 || age.get<int64_t>() > 150)
    return "age " + age.dump();
  const std::string kind = doc["kind"].is_string() ? doc["kind"].get<std::string>() : "";
  if (kind != "cat" && kind != "dog" && kind != "bird") return "kind " + doc["kind"].dump();
  if (doc.contains("tags")) {
    const auto& tags = doc["tags"];
    if (!tags.is_array() || tags.size() > 3) return "tags " + tags.dump();
    for (const auto& t : tags)
      if (t != "a" && t != "b" && t != "c") return "tag " + t.dump();
  }
  if (doc.contains("ok") && !doc["ok"].is_boolean()) return "ok " + doc["ok"].dump();
  if (doc.contains("home")) {
    const auto& home = doc["home"];
    if (!home.is_object() || home.size() != 1 || !home.contains("zip") ||
        !home["zip"].is_string() ||
        !std::regex_match(home["zip"].get<std::string>(), std::regex("[0-9]{5}")))
      return "home " + home.dump();
  }
  return "";
}

class WalkPerTokenizer : public ::testing::TestWithParam<std::string> {};

// Random logits, masked, argmax: every walk terminates, and the detokenized text (weft's
// Tokenizer::decode, not just the grammar's bytes) parses as JSON and satisfies the schema.
TEST_P(WalkPerTokenizer, JsonSchemaWalksProduceValidDocuments) {
  auto tok = load_tokenizer(GetParam());
  auto vocab = load_vocabulary(GetParam());
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  for (const JsonWhitespace ws : {JsonWhitespace::kBounded, JsonWhitespace::kFixed}) {
    JsonOptions options;
    options.whitespace = ws;
    auto grammar = compile_or_die(compiler, GrammarSpec::json_schema(kPersonSchema, options));
    ASSERT_TRUE(grammar);
    for (uint64_t seed = 1; seed <= 24; ++seed) {
      const testing::Walk walk = greedy_walk(grammar, seed, 2000, /*stop_bias=*/2.0f);
      ASSERT_TRUE(walk.terminated) << "seed " << seed << ": " << walk.bytes;
      std::vector<int32_t> text_ids(walk.ids.begin(), walk.ids.end() - 1);
      const std::string text = tok->decode(text_ids, /*skip_special_tokens=*/false);
      EXPECT_EQ(text, walk.bytes);
      auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(doc.is_discarded()) << "seed " << seed << ": not JSON: " << text;
      EXPECT_EQ(person_violation(doc), "") << "seed " << seed << ": " << text;
      if (ws == JsonWhitespace::kFixed) {
        EXPECT_EQ(text.find('\n'), std::string::npos) << text;
      } else {
        EXPECT_EQ(text.find(std::string(17, ' ')), std::string::npos) << text;
      }
    }
  }
}

TEST_P(WalkPerTokenizer, RegexWalksMatch) {
  auto vocab = load_vocabulary(GetParam());
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  const std::string pattern = "[a-z]{3}-[0-9]{2,4}( (ok|fail))?";
  auto grammar = compile_or_die(compiler, GrammarSpec::regex(pattern));
  ASSERT_TRUE(grammar);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const testing::Walk walk = greedy_walk(grammar, seed, 100);
    ASSERT_TRUE(walk.terminated) << walk.bytes;
    EXPECT_TRUE(std::regex_match(walk.bytes, std::regex(pattern))) << walk.bytes;
  }
}

TEST_P(WalkPerTokenizer, ChoiceWalksPickAChoice) {
  auto vocab = load_vocabulary(GetParam());
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  const std::vector<std::string> choices = {"red",    "green",     "blue",    "say \"hi\"\\",
                                            "日本語", "tab\there", "red wine"};
  auto grammar = compile_or_die(compiler, GrammarSpec::choice(choices));
  ASSERT_TRUE(grammar);
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const testing::Walk walk = greedy_walk(grammar, seed, 100);
    ASSERT_TRUE(walk.terminated) << walk.bytes;
    EXPECT_NE(std::find(choices.begin(), choices.end(), walk.bytes), choices.end()) << walk.bytes;
    seen.insert(walk.bytes);
  }
  EXPECT_GE(seen.size(), 3u);
}

TEST_P(WalkPerTokenizer, EbnfWalksMatch) {
  auto vocab = load_vocabulary(GetParam());
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  // GBNF style: arithmetic over small numbers, at most three operators.
  const std::string grammar_text = R"G(
root ::= expr
expr ::= num (op num){0,3}
op ::= " + " | " * " | "-"
num ::= [1-9] [0-9]? | "(" num ")"
)G";
  auto grammar = compile_or_die(compiler, GrammarSpec::ebnf(grammar_text));
  ASSERT_TRUE(grammar);
  const std::regex expected(R"(N(( \+ | \* |-)N){0,3})");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const testing::Walk walk = greedy_walk(grammar, seed, 200, 1.0f);
    ASSERT_TRUE(walk.terminated) << walk.bytes;
    // Collapse every number, parenthesized or not, to N.
    const std::string collapsed =
        std::regex_replace(walk.bytes, std::regex(R"(\(*[1-9][0-9]?\)*)"), "N");
    EXPECT_TRUE(std::regex_match(collapsed, expected)) << walk.bytes;
    int depth = 0;
    for (const char c : walk.bytes) depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    EXPECT_EQ(depth, 0) << walk.bytes;
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, WalkPerTokenizer,
                         ::testing::Values("default-model", "qwen3", "llama2"));

TEST(GrammarMatcher, AcceptsEncodedTextAndStopsOnlyWhenComplete) {
  auto tok = load_tokenizer("qwen3");
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  auto grammar = compile_or_die(compiler, GrammarSpec::any_json());
  ASSERT_TRUE(grammar);
  const int32_t eos = vocab->stop_token_ids()[0];
  GrammarMatcher m(grammar);
  const auto ids = encode(*tok, R"({"a": [1, 2.5, "x"], "b": {"c": null}})");
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    ASSERT_TRUE(m.accept_token(ids[i])) << i;
    EXPECT_FALSE(m.is_completed());
  }
  EXPECT_FALSE(m.fork().accept_token(eos));
  ASSERT_TRUE(m.accept_token(ids.back()));
  EXPECT_TRUE(m.is_completed());
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.accept_token(eos));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_token(ids[0]));  // nothing after termination
  TokenBitmask mask(1, vocab->vocab_size());
  ASSERT_TRUE(m.fill_next_token_bitmask(mask.row(0)).ok());
  EXPECT_EQ(mask.count_allowed(0), 1);  // only the stop token
  EXPECT_TRUE(mask.allowed(0, eos));

  // Text that is not JSON and special tokens are refused, leaving the state as it was.
  GrammarMatcher fresh(grammar);
  EXPECT_FALSE(fresh.accept_token(encode(*tok, "x")[0]));
  EXPECT_FALSE(fresh.accept_token(*tok->token_to_id("<|im_start|>")));
  EXPECT_FALSE(fresh.accept_token(-1));
  EXPECT_FALSE(fresh.accept_token(vocab->vocab_size()));
  EXPECT_EQ(fresh.tokens_accepted(), 0);
}

TEST(GrammarMatcher, BoundedWhitespaceRefusesARunaway) {
  auto tok = load_tokenizer("default-model");
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  JsonOptions options;
  options.max_whitespace = 4;
  auto grammar = compile_or_die(compiler, GrammarSpec::any_json(options));
  ASSERT_TRUE(grammar);
  GrammarMatcher m(grammar);
  ASSERT_EQ(m.accept_tokens(encode(*tok, "{")), 1u);
  const int32_t space = encode(*tok, " ")[0];
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(m.accept_token(space)) << i;
  EXPECT_FALSE(m.accept_token(space));
  TokenBitmask mask(1, vocab->vocab_size());
  ASSERT_TRUE(m.fill_next_token_bitmask(mask.row(0)).ok());
  EXPECT_FALSE(mask.allowed(0, space));
  EXPECT_TRUE(mask.allowed(0, encode(*tok, "}")[0]));
}

// After rollback(k) the matcher is where it was k tokens ago: the same masks, the same
// answers to accept, termination undone.
TEST(GrammarMatcher, RollbackRestoresEarlierStates) {
  auto tok = load_tokenizer("qwen3");
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  auto grammar = compile_or_die(compiler, GrammarSpec::json_schema(kPersonSchema));
  ASSERT_TRUE(grammar);
  const auto ids = encode(*tok, R"({"name": "Ann Lee", "age": 42, "kind": "cat"})");
  GrammarMatcher m(grammar);
  std::vector<TokenBitmask> masks;
  for (const int32_t id : ids) {
    masks.emplace_back(1, vocab->vocab_size());
    ASSERT_TRUE(m.fill_next_token_bitmask(masks.back().row(0)).ok());
    ASSERT_TRUE(m.accept_token(id));
  }
  const int32_t eos = vocab->stop_token_ids()[0];
  ASSERT_TRUE(m.accept_token(eos));
  ASSERT_TRUE(m.is_terminated());
  EXPECT_EQ(m.tokens_accepted(), static_cast<int32_t>(ids.size() + 1));

  ASSERT_TRUE(m.rollback(1).ok());
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.is_completed());
  for (const int32_t k : {3, 4}) {
    ASSERT_TRUE(m.rollback(k).ok());
    const size_t at = static_cast<size_t>(m.tokens_accepted());
    TokenBitmask now(1, vocab->vocab_size());
    ASSERT_TRUE(m.fill_next_token_bitmask(now.row(0)).ok());
    EXPECT_TRUE(std::equal(now.row(0).begin(), now.row(0).end(), masks[at].row(0).begin()))
        << "after rolling back to " << at;
  }
  // Re-accepting the same suffix gets back to a complete document.
  const size_t at = static_cast<size_t>(m.tokens_accepted());
  EXPECT_EQ(m.accept_tokens(std::span(ids).subspan(at)), ids.size() - at);
  EXPECT_TRUE(m.is_completed());

  EXPECT_EQ(m.rollback(-1).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status too_far = m.rollback(m.tokens_accepted() + 1);
  EXPECT_EQ(too_far.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_far.message().find("cannot roll back"), std::string::npos) << too_far;
  ASSERT_TRUE(m.rollback(m.tokens_accepted()).ok());
  TokenBitmask start(1, vocab->vocab_size());
  ASSERT_TRUE(m.fill_next_token_bitmask(start.row(0)).ok());
  EXPECT_TRUE(std::equal(start.row(0).begin(), start.row(0).end(), masks[0].row(0).begin()));
}

// Speculative verification: accept_tokens stops at the first draft token the grammar refuses;
// rolling back the accepted part leaves the matcher untouched.
TEST(GrammarMatcher, DraftVerificationAndFork) {
  auto tok = load_tokenizer("default-model");
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  auto grammar = compile_or_die(compiler, GrammarSpec::regex("abc[0-9]+"));
  ASSERT_TRUE(grammar);
  GrammarMatcher m(grammar);
  std::vector<int32_t> draft = encode(*tok, "abc12");
  const size_t good = draft.size();
  const auto bad = encode(*tok, "x");
  draft.insert(draft.end(), bad.begin(), bad.end());
  draft.push_back(encode(*tok, "3")[0]);
  EXPECT_EQ(m.accept_tokens(draft), good);
  EXPECT_EQ(m.tokens_accepted(), static_cast<int32_t>(good));

  GrammarMatcher copy = m.fork();
  EXPECT_TRUE(copy.accept_token(encode(*tok, "7")[0]));
  EXPECT_EQ(copy.tokens_accepted(), m.tokens_accepted() + 1);
  ASSERT_TRUE(m.rollback(static_cast<int32_t>(good)).ok());
  EXPECT_EQ(m.tokens_accepted(), 0);
  EXPECT_EQ(copy.tokens_accepted(), static_cast<int32_t>(good) + 1);  // independent
  EXPECT_EQ(m.forced_continuation(), "abc");
}

// The batched fill writes the same rows as one matcher at a time, on a pool or inline, and
// an all-allowed row for sequences without a constraint.
TEST(GrammarMatcher, BatchFillMatchesSingleFills) {
  auto tok = load_tokenizer("qwen3");
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  auto json = compile_or_die(compiler, GrammarSpec::json_schema(kPersonSchema));
  auto regex = compile_or_die(compiler, GrammarSpec::regex("[0-9]{1,3}"));
  ASSERT_TRUE(json && regex);
  std::vector<GrammarMatcher> matchers;
  matchers.emplace_back(json);
  matchers.emplace_back(regex);
  matchers.emplace_back(json);
  matchers[2].accept_tokens(encode(*tok, R"({"name": "x)"));
  std::vector<GrammarMatcher*> batch = {&matchers[0], nullptr, &matchers[1], &matchers[2]};
  const std::vector<int32_t> rows = {3, 0, 1, 2};
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    TokenBitmask mask(4, vocab->vocab_size());
    std::ranges::fill(std::span(mask.data(), 4 * mask.words_per_row()), 0u);
    ASSERT_TRUE(fill_next_token_bitmasks(batch, mask, rows, p).ok());
    EXPECT_EQ(mask.count_allowed(0), vocab->vocab_size());
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i]) continue;
      TokenBitmask single(1, vocab->vocab_size());
      ASSERT_TRUE(batch[i]->fill_next_token_bitmask(single.row(0)).ok());
      EXPECT_TRUE(std::ranges::equal(single.row(0), mask.row(rows[i]))) << i;
    }
  }
  TokenBitmask mask(4, vocab->vocab_size());
  const std::vector<int32_t> repeated = {0, 0, 1, 2};
  EXPECT_EQ(fill_next_token_bitmasks(batch, mask, repeated).code(),
            absl::StatusCode::kInvalidArgument);
  TokenBitmask narrow(4, 100);
  EXPECT_EQ(fill_next_token_bitmasks(batch, narrow).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(matchers[0].fill_next_token_bitmask(narrow.row(0)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft
