// JsonWhitespaceBound: the run-time bound on JSON whitespace (json_whitespace_bound.h). On a
// hand-made vocabulary, how each token lexes (runs across tokens, strings, escapes, runs inside
// a token, the per-budget masks and the long-run list); on the qwen3 vocabulary, masks equal bit
// for bit to xgrammar's own counted repetition at every step of whitespace-heavy walks (read
// through the module's private xgrammar bridge: the reference is xgrammar's bound, not ours).
#include "constrain/json_whitespace_bound.h"

#include <string>
#include <vector>

#include "constrain/grammar_compiler.h"
#include "constrain/grammar_matcher.h"
#include "constrain/xgrammar_bridge.h"
#include "constrain_test_util.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using testing::FastRng;
using testing::load_vocabulary;
using Where = JsonLexState::Where;

// Ids of the hand-made vocabulary.
enum : int32_t {
  kBrace, kSpace, kThreeSpaces, kQuote, kA, kBackslash, kQuoteSpaceComma, kCommaSpaceQuote,
  kClose, kFourWhitespace, kAQuoteTwoSpaces, kNever, kXQuoteSixSpacesY, kSeventySpaces, kStop,
  kVocabSize
};

std::shared_ptr<const GrammarVocabulary> hand_vocabulary() {
  std::vector<std::string> bytes(kVocabSize);
  bytes[kBrace] = "{";
  bytes[kSpace] = " ";
  bytes[kThreeSpaces] = "   ";
  bytes[kQuote] = "\"";
  bytes[kA] = "a";
  bytes[kBackslash] = "\\";
  bytes[kQuoteSpaceComma] = "\" ,";
  bytes[kCommaSpaceQuote] = ", \"";
  bytes[kClose] = "}";
  bytes[kFourWhitespace] = "\n\t \r";
  bytes[kAQuoteTwoSpaces] = "a\"  ";
  bytes[kXQuoteSixSpacesY] = "x\"      y";
  bytes[kSeventySpaces] = std::string(70, ' ');
  auto v = GrammarVocabulary::from_token_bytes(bytes, TokenEncoding::kRaw, kVocabSize, {kStop});
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : nullptr;
}

// Follows `tokens` from the start; the state after them, or nullopt where one is refused.
std::optional<JsonLexState> follow(const JsonWhitespaceBound& b, std::vector<int32_t> tokens,
                                   JsonLexState s = {}) {
  for (const int32_t t : tokens) {
    auto next = b.advance(s, t);
    if (!next) return std::nullopt;
    s = *next;
  }
  return s;
}

TEST(JsonWhitespaceBound, RunsJoinAcrossTokensOutsideStringsOnly) {
  auto vocab = hand_vocabulary();
  ASSERT_TRUE(vocab);
  auto b = JsonWhitespaceBound::build(*vocab, 3);
  EXPECT_EQ(follow(*b, {kBrace, kSpace}), (JsonLexState{Where::kOutside, 1}));
  EXPECT_EQ(follow(*b, {kBrace, kThreeSpaces}), (JsonLexState{Where::kOutside, 3}));
  EXPECT_FALSE(follow(*b, {kBrace, kThreeSpaces, kSpace}));
  EXPECT_FALSE(follow(*b, {kBrace, kSpace, kThreeSpaces}));
  EXPECT_FALSE(follow(*b, {kFourWhitespace}));  // \r and \t count
  // A non-whitespace byte ends the run.
  EXPECT_EQ(follow(*b, {kThreeSpaces, kBrace, kThreeSpaces}), (JsonLexState{Where::kOutside, 3}));
  // Inside a string whitespace is content: unbounded.
  EXPECT_EQ(follow(*b, {kQuote, kThreeSpaces, kThreeSpaces, kFourWhitespace}),
            (JsonLexState{Where::kInString, 0}));
  // An escaped quote does not close the string; the next one does.
  EXPECT_EQ(follow(*b, {kQuote, kBackslash}), (JsonLexState{Where::kInEscape, 0}));
  EXPECT_EQ(follow(*b, {kQuote, kBackslash, kQuote}), (JsonLexState{Where::kInString, 0}));
  EXPECT_EQ(follow(*b, {kQuote, kBackslash, kQuote, kQuote}), (JsonLexState{Where::kOutside, 0}));
  // A run that starts inside a token after the string closes is carried on.
  EXPECT_EQ(follow(*b, {kQuote, kAQuoteTwoSpaces}), (JsonLexState{Where::kOutside, 2}));
  EXPECT_EQ(follow(*b, {kQuote, kAQuoteTwoSpaces, kSpace}), (JsonLexState{Where::kOutside, 3}));
  EXPECT_FALSE(follow(*b, {kQuote, kAQuoteTwoSpaces, kSpace, kSpace}));
  // Six spaces: inside a string from outside (allowed), a run inside the token from a string.
  EXPECT_EQ(follow(*b, {kXQuoteSixSpacesY}), (JsonLexState{Where::kInString, 0}));
  EXPECT_FALSE(follow(*b, {kQuote, kXQuoteSixSpacesY}));
  EXPECT_EQ(follow(*b, {kQuote, kQuoteSpaceComma}), (JsonLexState{Where::kOutside, 0}));
  EXPECT_EQ(follow(*b, {kCommaSpaceQuote}), (JsonLexState{Where::kInString, 0}));
  // Stop ids leave the state as it is.
  EXPECT_EQ(follow(*b, {kThreeSpaces, kStop}), (JsonLexState{Where::kOutside, 3}));
}

std::vector<int32_t> allowed_after_restrict(const JsonWhitespaceBound& b, const JsonLexState& s,
                                            int32_t vocab_size) {
  TokenBitmask mask(1, vocab_size);
  mask.allow_all(0);
  b.restrict(s, mask.row(0));
  std::vector<int32_t> allowed;
  for (int32_t t = 0; t < vocab_size; ++t) {
    if (mask.allowed(0, t)) allowed.push_back(t);
  }
  return allowed;
}

// restrict() clears exactly what advance() refuses, from every state, on both the per-budget
// masks (bound 3) and the long-run list (bound 100, budgets past the 64 masks).
TEST(JsonWhitespaceBound, RestrictClearsExactlyWhatAdvanceRefuses) {
  auto vocab = hand_vocabulary();
  ASSERT_TRUE(vocab);
  for (const int32_t bound : {3, 100}) {
    auto b = JsonWhitespaceBound::build(*vocab, bound);
    std::vector<JsonLexState> states = {{Where::kInString, 0}, {Where::kInEscape, 0}};
    for (int32_t run = 0; run <= bound; ++run) states.push_back({Where::kOutside, run});
    for (const JsonLexState& s : states) {
      std::vector<int32_t> expected;
      for (int32_t t = 0; t < kVocabSize; ++t) {
        if (b->advance(s, t)) expected.push_back(t);
      }
      EXPECT_EQ(allowed_after_restrict(*b, s, kVocabSize), expected)
          << "bound " << bound << " where " << int{s.where} << " run " << s.run;
    }
  }
  auto b = JsonWhitespaceBound::build(*vocab, 100);
  EXPECT_TRUE(b->advance({Where::kOutside, 30}, kSeventySpaces));
  EXPECT_FALSE(b->advance({Where::kOutside, 31}, kSeventySpaces));
}

constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}},
    "size": {"type": "object", "properties": {"w": {"type": "number"}, "h": {"type": "integer"}}},
    "kind": {"enum": ["a", "b"]}
  },
  "required": ["name", "tags", "size"]
})";

// The weft matcher (unbounded grammar + this bound) against an xgrammar matcher of xgrammar's
// own counted repetition, over walks whose logits favour whitespace so the bound is reached: the
// masks agree bit for bit at every step, and both accept each token.
TEST(JsonWhitespaceBound, MasksEqualXgrammarsCountedRepetition) {
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(vocab);
  const int32_t n = vocab->vocab_size();
  std::vector<bool> whitespace_only(n, false);
  for (int32_t t = 0; t < n; ++t) {
    const std::string_view s = vocab->token_bytes(t);
    whitespace_only[t] = !s.empty() && s.find_first_not_of(" \n\r\t") == std::string_view::npos;
  }
  GrammarCompiler compiler(vocab);
  xgrammar::GrammarCompiler xg_compiler(vocab->impl().info, 1, /*cache_enabled=*/false);
  int steps_compared = 0, steps_at_bound = 0;
  for (const int32_t max_ws : {2, 5}) {
    JsonOptions options;
    options.max_whitespace = max_ws;
    for (const GrammarSpec& spec :
         {GrammarSpec::json_schema(kSchema, options), GrammarSpec::any_json(options)}) {
      auto ours = compiler.compile(spec);
      ASSERT_TRUE(ours.ok()) << ours.status();
      ASSERT_TRUE((*ours)->whitespace_bound());
      const std::string schema =
          spec.kind() == GrammarKind::kAnyJson ? R"({"type": ["object", "array"]})" : kSchema;
      xgrammar::CompiledGrammar reference = xg_compiler.CompileGrammar(
          xgrammar::Grammar::FromJSONSchema(schema, true, std::nullopt, std::nullopt,
                                            spec.json_options().strict, max_ws));
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        GrammarMatcher m(*ours);
        xgrammar::GrammarMatcher x(reference);
        TokenBitmask mine(1, n), theirs(1, n);
        FastRng rng(seed * 7 + max_ws);
        std::vector<float> logits(n);
        int run = 0;
        for (int step = 0; step < 120 && !m.is_terminated(); ++step) {
          ASSERT_TRUE(m.fill_next_token_bitmask(mine.row(0)).ok());
          int64_t shape = mine.row(0).size();
          DLTensor t{};
          t.data = theirs.row(0).data();
          t.device = DLDevice{kDLCPU, 0};
          t.ndim = 1;
          t.dtype = xgrammar::GetBitmaskDLType();
          t.shape = &shape;
          x.FillNextTokenBitmask(&t);
          for (int32_t id = 0; id < n; ++id) {
            ASSERT_EQ(mine.allowed(0, id), theirs.allowed(0, id))
                << "token " << id << " '" << vocab->token_bytes(id) << "' at step " << step
                << ", bound " << max_ws << ", seed " << seed;
          }
          ++steps_compared;
          steps_at_bound += run >= max_ws;
          for (int32_t id = 0; id < n; ++id) {
            logits[id] = rng.uniform() + (whitespace_only[id] ? 1.0f : 0.0f) +
                         (vocab->is_stop_token(id) && step > 60 ? 2.0f : 0.0f);
          }
          apply_token_bitmask(logits, mine.row(0), n);
          const int32_t best =
              static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
          ASSERT_TRUE(m.accept_token(best));
          ASSERT_TRUE(x.AcceptToken(best));
          run = whitespace_only[best] ? run + static_cast<int>(vocab->token_bytes(best).size()) : 0;
        }
      }
    }
  }
  EXPECT_GT(steps_compared, 500);
  EXPECT_GT(steps_at_bound, 20);  // the walks did reach the bound
}

// Rollback and fork carry the lexer state: after rolling back into a whitespace run, the run's
// length is the earlier one again.
TEST(JsonWhitespaceBound, RollbackAndForkRestoreTheRun) {
  auto tok = testing::load_tokenizer("default-model");
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  JsonOptions options;
  options.max_whitespace = 3;
  auto grammar = compiler.compile(GrammarSpec::any_json(options));
  ASSERT_TRUE(grammar.ok());
  const int32_t space = testing::encode(*tok, " ")[0];
  GrammarMatcher m(*grammar);
  ASSERT_EQ(m.accept_tokens(testing::encode(*tok, "{")), 1u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(m.accept_token(space));
  EXPECT_FALSE(m.accept_token(space));
  GrammarMatcher copy = m.fork();
  EXPECT_FALSE(copy.accept_token(space));
  ASSERT_TRUE(m.rollback(2).ok());
  EXPECT_TRUE(m.accept_token(space));
  EXPECT_TRUE(m.accept_token(space));
  EXPECT_FALSE(m.accept_token(space));
  m.reset();
  ASSERT_EQ(m.accept_tokens(testing::encode(*tok, "{")), 1u);
  EXPECT_TRUE(m.accept_token(space));
}

}  // namespace
}  // namespace weft
