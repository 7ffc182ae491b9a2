// GrammarCompiler: every spec kind compiles, bad specs come back as InvalidArgument naming the
// parameter, limits (size, depth, compile time, memory) hold, and the cache serves repeated
// specs (hits, LRU eviction, one compile for concurrent requests of one spec).
#include "constrain/grammar_compiler.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "constrain/grammar_matcher.h"
#include "constrain_test_util.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using testing::load_vocabulary;

void expect_invalid(const absl::StatusOr<std::shared_ptr<const CompiledGrammar>>& result,
                    const std::string& parameter, const std::string& fragment) {
  ASSERT_FALSE(result.ok()) << "expected an error containing \"" << fragment << "\"";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  const std::string message(result.status().message());
  EXPECT_EQ(message.rfind(parameter + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
}

TEST(GrammarCompiler, EveryKindCompiles) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  const std::vector<GrammarSpec> specs = {
      GrammarSpec::json_schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})"),
      GrammarSpec::json_schema("true"),
      GrammarSpec::any_json(),
      GrammarSpec::regex("[a-z]+"),
      GrammarSpec::choice({"yes", "no", ""}),
      GrammarSpec::ebnf("start ::= \"x\"+", "start"),
      GrammarSpec::structural_tag(R"({"type": "structural_tag", "format": {"type": "sequence",
          "elements": [{"type": "const_string", "value": "Answer: "},
                       {"type": "json_schema", "json_schema": {"type": "object"}}]}})"),
  };
  for (const GrammarSpec& spec : specs) {
    auto compiled = compiler.compile(spec);
    ASSERT_TRUE(compiled.ok()) << spec.parameter() << ": " << compiled.status();
    EXPECT_EQ((*compiled)->kind(), spec.kind());
    EXPECT_GT((*compiled)->memory_bytes(), 0u);
    EXPECT_FALSE((*compiled)->grammar_text().empty());
  }
}

TEST(GrammarCompiler, StructuralTagConstrainsTheText) {
  auto tok = testing::load_tokenizer("default-model");
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(tok && vocab);
  GrammarCompiler compiler(vocab);
  auto compiled = compiler.compile(GrammarSpec::structural_tag(
      R"({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>",
          "content": {"type": "json_schema", "json_schema": {"type": "integer"}}, "end": "</a>"}})"));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  GrammarMatcher good(*compiled);
  const auto ids = testing::encode(*tok, "<a>42</a>");
  EXPECT_EQ(good.accept_tokens(ids), ids.size());
  EXPECT_TRUE(good.is_completed());
  GrammarMatcher bad(*compiled);
  const auto wrong = testing::encode(*tok, "<a>x");
  EXPECT_LT(bad.accept_tokens(wrong), wrong.size());
}

TEST(GrammarCompiler, BadSpecsNameTheParameter) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  const std::string p = "response_format.json_schema.schema";
  expect_invalid(compiler.compile(GrammarSpec::json_schema("{\"type\": ").set_parameter(p)), p,
                 "JSON");
  expect_invalid(compiler.compile(GrammarSpec::json_schema("[1, 2]").set_parameter(p)), p,
                 "must be an object or a boolean");
  expect_invalid(compiler.compile(GrammarSpec::json_schema(R"({"type": "integer",
                     "minimum": 5, "maximum": 1})")
                                      .set_parameter(p)),
                 p, "invalid JSON schema");
  expect_invalid(compiler.compile(GrammarSpec::json_schema(R"({"a": 1, "a": 2})")), "json_schema",
                 "a");
  expect_invalid(compiler.compile(GrammarSpec::regex("(abc").set_parameter("guided_regex")),
                 "guided_regex", "invalid regular expression");
  expect_invalid(compiler.compile(GrammarSpec::regex("")), "regex", "empty");
  expect_invalid(compiler.compile(GrammarSpec::ebnf("root ::= ").set_parameter("guided_grammar")),
                 "guided_grammar", "invalid grammar");
  expect_invalid(compiler.compile(GrammarSpec::ebnf("start ::= \"a\"")), "ebnf",
                 "invalid grammar");  // no rule named root
  expect_invalid(compiler.compile(GrammarSpec::ebnf("root ::= undefined_rule")), "ebnf",
                 "invalid grammar");
  expect_invalid(compiler.compile(GrammarSpec::choice({})), "choice", "empty");
  expect_invalid(compiler.compile(GrammarSpec::structural_tag(R"({"type": "structural_tag",
                     "format": {"type": "no_such_format"}})")),
                 "structural_tag", "invalid structural tag");
  JsonOptions ws;
  ws.max_whitespace = 0;
  expect_invalid(compiler.compile(GrammarSpec::any_json(ws)), "any_json", "max_whitespace");
  EXPECT_EQ(compiler.stats().cached_grammars, 0);
}

TEST(GrammarCompiler, SizeAndDepthLimits) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompilerOptions options;
  options.limits.max_spec_bytes = 4096;
  options.limits.max_schema_depth = 10;
  options.limits.max_grammar_bytes = 20000;
  options.limits.max_choices = 50;
  GrammarCompiler compiler(vocab, options);
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 12; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  expect_invalid(compiler.compile(GrammarSpec::json_schema(deep)), "json_schema", "nested deeper");
  expect_invalid(compiler.compile(GrammarSpec::regex(std::string(5000, 'a'))), "regex",
                 "exceed the limit of 4096");
  expect_invalid(compiler.compile(GrammarSpec::choice(std::vector<std::string>(51, "x"))), "choice",
                 "51 choices");
  // Small text, big grammar: 150 properties convert to more EBNF than allowed.
  std::string wide = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 150; ++i) wide += (i ? ", " : "") + ("\"p" + std::to_string(i) + "\": {}");
  wide += "}}";
  options.limits.max_spec_bytes = 1 << 20;
  GrammarCompiler wide_compiler(vocab, options);
  expect_invalid(wide_compiler.compile(GrammarSpec::json_schema(wide)), "json_schema",
                 "the grammar it converts to has");

  GrammarCompilerOptions tight;
  tight.limits.max_compiled_bytes = 1000;
  GrammarCompiler small(vocab, tight);
  expect_invalid(small.compile(GrammarSpec::any_json()), "any_json", "the compiled grammar needs");
}

// A regex whose compile explodes (ambiguous stars make the mask cache's parser states blow up)
// returns an InvalidArgument at the deadline instead of holding the caller; the same spec is
// then refused at once, and too many abandoned compiles refuse new ones.
TEST(GrammarCompiler, CompileTimeLimit) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompilerOptions options;
  options.limits.max_compile_seconds = 0.3;
  options.limits.max_abandoned_compiles = 1;
  GrammarCompiler compiler(vocab, options);
  std::string explosive;
  // About 1.5 s with the 4096-token default-model vocabulary (cubic in the repetitions).
  for (int i = 0; i < 300; ++i) explosive += "(a|b|c)*";
  const auto start = std::chrono::steady_clock::now();
  auto result =
      compiler.compile(GrammarSpec::regex(explosive).set_parameter("structured_outputs.regex"));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_invalid(result, "structured_outputs.regex", "took longer than 0.3 s");
  EXPECT_LT(waited, 2.0);
  GrammarCompilerStats stats = compiler.stats();
  EXPECT_EQ(stats.timeouts, 1);
  if (stats.abandoned_running == 1) {
    // Still running: a different spec is refused until it ends.
    auto busy = compiler.compile(GrammarSpec::regex("x"));
    if (compiler.stats().abandoned_running == 1) {
      ASSERT_FALSE(busy.ok());
      EXPECT_EQ(busy.status().code(), absl::StatusCode::kResourceExhausted) << busy.status();
    }
  }
  expect_invalid(compiler.compile(GrammarSpec::regex(explosive)), "regex", "before");
  // Let the abandoned compile finish so the process exits with no thread in xgrammar.
  for (int i = 0; i < 1200 && compiler.stats().abandoned_running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(compiler.stats().abandoned_running, 0);
  EXPECT_TRUE(compiler.compile(GrammarSpec::regex("x")).ok());
}

TEST(GrammarCompiler, CacheHitsByKeyNotByParameter) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompiler compiler(vocab);
  const std::string schema = R"({"type": "object", "properties": {"x": {"type": "string"}}})";
  auto a = compiler.compile(GrammarSpec::json_schema(schema).set_parameter("guided_json"));
  auto b = compiler.compile(GrammarSpec::json_schema(schema).set_parameter("response_format"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  JsonOptions loose;
  loose.strict = false;
  auto c = compiler.compile(GrammarSpec::json_schema(schema, loose));
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  GrammarCompilerStats s = compiler.stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 2);
  EXPECT_EQ(s.cached_grammars, 2);
  EXPECT_EQ(s.cached_bytes, (*a)->memory_bytes() + (*c)->memory_bytes());
  compiler.clear_cache();
  EXPECT_EQ(compiler.stats().cached_grammars, 0);
  auto d = compiler.compile(GrammarSpec::json_schema(schema));
  ASSERT_TRUE(d.ok());
  EXPECT_NE(a->get(), d->get());
}

TEST(GrammarCompiler, CacheKeysSeparateEverythingThatMatters) {
  JsonOptions fixed;
  fixed.whitespace = JsonWhitespace::kFixed;
  JsonOptions indented = fixed;
  indented.indent = 2;
  JsonOptions ws8;
  ws8.max_whitespace = 8;
  const std::vector<std::string> keys = {
      GrammarSpec::json_schema("{}").cache_key(),
      GrammarSpec::json_schema("{}", fixed).cache_key(),
      GrammarSpec::json_schema("{}", indented).cache_key(),
      GrammarSpec::json_schema("{}", ws8).cache_key(),
      GrammarSpec::any_json().cache_key(),
      GrammarSpec::regex("{}").cache_key(),
      GrammarSpec::ebnf("{}").cache_key(),
      GrammarSpec::ebnf("{}", "start").cache_key(),
      GrammarSpec::structural_tag("{}").cache_key(),
      GrammarSpec::choice({"a", "b"}).cache_key(),
      GrammarSpec::choice({"a;1:b"}).cache_key(),
      GrammarSpec::choice({"ab"}).cache_key(),
  };
  std::set<std::string> unique(keys.begin(), keys.end());
  EXPECT_EQ(unique.size(), keys.size());
  EXPECT_EQ(GrammarSpec::regex("a").set_parameter("x").cache_key(),
            GrammarSpec::regex("a").cache_key());
}

TEST(GrammarCompiler, LeastRecentlyUsedEviction) {
  auto vocab = load_vocabulary("default-model");
  ASSERT_TRUE(vocab);
  GrammarCompiler probe(vocab);
  auto one = probe.compile(GrammarSpec::regex("[a-z]{1,10}0"));
  ASSERT_TRUE(one.ok());
  GrammarCompilerOptions options;
  options.cache_bytes = (*one)->memory_bytes() * 5 / 2;  // room for two of these
  GrammarCompiler compiler(vocab, options);
  for (const char* d : {"0", "1", "0", "2"}) {
    ASSERT_TRUE(compiler.compile(GrammarSpec::regex(std::string("[a-z]{1,10}") + d)).ok());
  }
  // "1" was least recently used when "2" arrived.
  GrammarCompilerStats s = compiler.stats();
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.cached_grammars, 2);
  ASSERT_TRUE(compiler.compile(GrammarSpec::regex("[a-z]{1,10}0")).ok());
  EXPECT_EQ(compiler.stats().hits, s.hits + 1);
  ASSERT_TRUE(compiler.compile(GrammarSpec::regex("[a-z]{1,10}1")).ok());
  EXPECT_EQ(compiler.stats().misses, s.misses + 1);
}

TEST(GrammarCompiler, ConcurrentRequestsForOneSpecCompileOnce) {
  auto vocab = load_vocabulary("qwen3");
  ASSERT_TRUE(vocab);
  GrammarCompilerOptions options;
  options.threads = 2;
  GrammarCompiler compiler(vocab, options);
  const GrammarSpec spec = GrammarSpec::json_schema(
      R"({"type": "object", "properties": {"id": {"type": "integer"}, "v": {"type": "string"}}})");
  std::vector<std::shared_ptr<const CompiledGrammar>> got(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      auto r = compiler.compile(spec);
      if (r.ok()) got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& g : got) {
    ASSERT_TRUE(g);
    EXPECT_EQ(g.get(), got[0].get());
  }
  EXPECT_EQ(compiler.stats().misses, 1);
  EXPECT_EQ(compiler.stats().hits, 5);
}

}  // namespace
}  // namespace weft
