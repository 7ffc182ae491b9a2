// grammar_bench: the cost of constrained output (src/constrain) with a real tokenizer: building
// the grammar vocabulary, compiling each kind of spec (cold, then from the cache), and the
// per-token mask: fill_next_token_bitmask p50 / p99 / max over the steps of greedy walks over
// random logits, apply_token_bitmask on one logits row, teacher-forced documents (the first pass
// with an empty mask cache, then repeated passes, as steady serving of one schema runs), and a
// batch of sequences filled on a pool. A program that prints numbers, not a test (DESIGN.md
// section 6).
//
// Usage: grammar_bench [--tokenizer DIR] [--walks N] [--batch B] [--threads T] [--no-mask-cache]
//   --tokenizer DIR  a directory with tokenizer.json (default: the 151k-token qwen3 fixture)
//   --no-mask-cache  compile with GrammarCompilerOptions::mask_cache_bytes = 0
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "constrain/grammar_compiler.h"
#include "constrain/grammar_matcher.h"
#include "constrain/grammar_vocabulary.h"
#include "constrain/token_bitmask.h"
#include "core/thread_pool.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using weft::GrammarSpec;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

uint64_t next_random(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1Dull;
}

// A tool-call-shaped schema: nested objects, arrays, enums, anyOf, formats, bounded strings.
constexpr const char* kToolSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "enum": ["get_weather", "search", "book_flight"]},
    "arguments": {
      "type": "object",
      "properties": {
        "city": {"type": "string", "maxLength": 40},
        "date": {"type": "string", "format": "date"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "passengers": {"type": "array", "maxItems": 4, "items": {
          "type": "object",
          "properties": {"first": {"type": "string", "maxLength": 20},
                         "last": {"type": "string", "maxLength": 20},
                         "age": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 120},
                                           {"type": "null"}]}},
          "required": ["first", "last"], "additionalProperties": false}},
        "email": {"type": "string", "format": "email"}
      },
      "required": ["city"],
      "additionalProperties": false
    }
  },
  "required": ["name", "arguments"],
  "additionalProperties": false
})";

struct MaskTimes {
  std::vector<double> fill_us;
  std::vector<double> apply_us;
  int walks_terminated = 0;
};

// Greedy walks over random logits; times each fill and each apply.
MaskTimes walk(const std::shared_ptr<const weft::CompiledGrammar>& grammar, int walks,
               int max_steps) {
  const auto& vocab = *grammar->vocabulary();
  weft::TokenBitmask mask(1, vocab.vocab_size());
  std::vector<float> logits(vocab.vocab_size());
  MaskTimes times;
  for (int w = 0; w < walks; ++w) {
    weft::GrammarMatcher m(grammar);
    uint64_t rng = 0x9E3779B97F4A7C15ull * (w + 1);
    for (int step = 0; step < max_steps && !m.is_terminated(); ++step) {
      auto t = Clock::now();
      auto filled = m.fill_next_token_bitmask(mask.row(0));
      times.fill_us.push_back(since(t) * 1e6);
      if (!filled.ok()) {
        std::fprintf(stderr, "%s\n", filled.status().ToString().c_str());
        std::exit(1);
      }
      for (float& l : logits) l = static_cast<float>(next_random(rng) >> 40);
      for (const int32_t s : vocab.stop_token_ids()) logits[s] += 1e7f;  // a model that ends
      t = Clock::now();
      weft::apply_token_bitmask(logits, mask.row(0), vocab.vocab_size());
      times.apply_us.push_back(since(t) * 1e6);
      const int32_t best =
          static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (!m.accept_token(best)) {
        std::fprintf(stderr, "masked argmax %d refused\n", best);
        std::exit(1);
      }
    }
    times.walks_terminated += m.is_terminated();
  }
  return times;
}

// Fills the mask before each token of documents a model would write (teacher forcing), the
// states real decoding visits; random walks also wander into odd corners of long strings.
std::vector<double> forced_fill_us(const std::shared_ptr<const weft::CompiledGrammar>& grammar,
                                   const weft::Tokenizer& tokenizer,
                                   const std::vector<std::string>& documents, int repeats) {
  weft::TokenBitmask mask(1, grammar->vocabulary()->vocab_size());
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    for (const std::string& doc : documents) {
      auto ids = tokenizer.encode(doc, false);
      weft::GrammarMatcher m(grammar);
      for (const int32_t id : *ids) {
        const auto t = Clock::now();
        if (!m.fill_next_token_bitmask(mask.row(0)).ok()) std::exit(1);
        us.push_back(since(t) * 1e6);
        if (!m.accept_token(id)) {
          std::fprintf(stderr, "document refused at token %d: %s\n", id, doc.c_str());
          std::exit(1);
        }
      }
    }
  }
  return us;
}

void print_fill_times(const char* name, const std::vector<double>& us, const char* note) {
  std::printf("%-34s %8zu %8.1f %8.1f %8.1f   %s\n", name, us.size(), percentile(us, 0.5),
              percentile(us, 0.99), percentile(us, 1.0), note);
}

std::string mask_cache_note(const weft::CompiledGrammar& grammar) {
  if (grammar.mask_cache() == nullptr) return "no mask cache";
  const weft::MaskCacheStats s = grammar.mask_cache()->stats();
  char note[160];
  std::snprintf(note, sizeof note, "mask cache: %ld hits, %ld misses, %ld rows (%.1f MB), %ld evicted",
                static_cast<long>(s.hits), static_cast<long>(s.misses), static_cast<long>(s.entries),
                s.bytes / 1e6, static_cast<long>(s.evictions));
  return note;
}

const std::vector<std::string> kToolDocuments = {
    R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 3}})",
    R"({"name": "book_flight", "arguments": {"city": "New York", "date": "2025-03-14", )"
    R"("passengers": [{"first": "Ada", "last": "Lovelace", "age": 36}, )"
    R"({"first": "Alan", "last": "Turing", "age": null}], "email": "ada@example.com"}})",
    "{\n  \"name\": \"search\",\n  \"arguments\": {\n    \"city\": \"S\u00e3o Paulo\",\n"
    "    \"days\": 14\n  }\n}",
};

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path dir =
      std::filesystem::path(WEFT_SOURCE_DIR) / "tests/tokenizer_data/fixtures/qwen3";
  int walks = 40;
  int batch = 32;
  int threads = 2;
  bool mask_cache = true;
  for (int i = 1; i < argc; ++i) {
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--tokenizer")) {
      dir = value();
    } else if (!std::strcmp(argv[i], "--walks")) {
      walks = std::atoi(value());
    } else if (!std::strcmp(argv[i], "--batch")) {
      batch = std::atoi(value());
    } else if (!std::strcmp(argv[i], "--threads")) {
      threads = std::atoi(value());
    } else if (!std::strcmp(argv[i], "--no-mask-cache")) {
      mask_cache = false;
    } else {
      std::fprintf(stderr,
                   "usage: grammar_bench [--tokenizer DIR] [--walks N] [--batch B] [--threads T] "
                   "[--no-mask-cache]\n");
      return 2;
    }
  }
  auto tokenizer = weft::Tokenizer::load(dir);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.status().ToString().c_str());
    return 1;
  }
  auto t = Clock::now();
  auto vocab = weft::GrammarVocabulary::from_tokenizer(**tokenizer);
  if (!vocab.ok()) {
    std::fprintf(stderr, "%s\n", vocab.status().ToString().c_str());
    return 1;
  }
  std::printf("tokenizer %s: %d tokens; grammar vocabulary built in %.1f ms\n\n",
              dir.string().c_str(), (*vocab)->vocab_size(), since(t) * 1e3);

  struct Case {
    const char* name;
    GrammarSpec spec;
  };
  weft::JsonOptions fixed;
  fixed.whitespace = weft::JsonWhitespace::kFixed;
  const std::vector<Case> cases = {
      {"json_schema tool call", GrammarSpec::json_schema(kToolSchema)},
      {"json_schema tool call, fixed ws", GrammarSpec::json_schema(kToolSchema, fixed)},
      {"any_json", GrammarSpec::any_json()},
      {"regex", GrammarSpec::regex("[A-Z][a-z]{2,12} [0-9]{1,4}(, [A-Z][a-z]+)*")},
      {"choice (5)", GrammarSpec::choice({"positive", "negative", "neutral", "mixed", "n/a"})},
      {"ebnf arithmetic", GrammarSpec::ebnf("root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\n"
                                            "term ::= num | \"(\" expr \")\"\nnum ::= [0-9]+")},
  };
  weft::GrammarCompilerOptions options;
  options.threads = threads;
  if (!mask_cache) options.mask_cache_bytes = 0;
  std::printf("%-34s %12s %10s %10s\n", "compile (cold)", "ms", "cached us", "MB");
  std::vector<std::shared_ptr<const weft::CompiledGrammar>> compiled;
  for (const Case& c : cases) {
    weft::GrammarCompiler compiler(*vocab, options);
    t = Clock::now();
    auto g = compiler.compile(c.spec);
    const double cold = since(t);
    if (!g.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name, g.status().ToString().c_str());
      return 1;
    }
    t = Clock::now();
    auto again = compiler.compile(c.spec);
    const double hit = since(t);
    std::printf("%-34s %12.1f %10.1f %10.2f\n", c.name, cold * 1e3, hit * 1e6,
                (*g)->memory_bytes() / 1e6);
    compiled.push_back(*g);
  }

  // Each case's walks start from its freshly compiled grammar: an empty mask cache that fills as
  // the walks go.
  std::printf("\n%-34s %8s %8s %8s %8s %8s %8s\n", "mask per token (us), random walks", "steps",
              "fill p50", "fill p99", "fill max", "apply50", "apply99");
  for (size_t i = 0; i < cases.size(); ++i) {
    MaskTimes m = walk(compiled[i], walks, 400);
    std::printf("%-34s %8zu %8.1f %8.1f %8.1f %8.1f %8.1f   (%d/%d walks ended; %s)\n",
                cases[i].name, m.fill_us.size(), percentile(m.fill_us, 0.5),
                percentile(m.fill_us, 0.99), percentile(m.fill_us, 1.0),
                percentile(m.apply_us, 0.5), percentile(m.apply_us, 0.99), m.walks_terminated,
                walks, mask_cache_note(*compiled[i]).c_str());
  }

  {
    // A grammar no walk has touched: the first pass is what the first requests of a schema see.
    weft::GrammarCompiler compiler(*vocab, options);
    auto tool = compiler.compile(cases[0].spec);
    if (!tool.ok()) return 1;
    std::printf("\n%-34s %8s %8s %8s %8s   (teacher-forced: %zu model-like documents)\n",
                "mask per token (us), tool call text", "steps", "fill p50", "fill p99",
                "fill max", kToolDocuments.size());
    print_fill_times("first pass", forced_fill_us(*tool, **tokenizer, kToolDocuments, 1), "");
    const std::vector<double> us = forced_fill_us(*tool, **tokenizer, kToolDocuments, 20);
    print_fill_times("20 more passes", us, mask_cache_note(**tool).c_str());
  }

  // A decode step of `batch` sequences under the tool schema, each at a different point.
  std::vector<weft::GrammarMatcher> matchers;
  const auto ids = (*tokenizer)->encode(R"({"name": "search", "arguments": {"city": "Par)", false);
  for (int b = 0; b < batch; ++b) {
    matchers.emplace_back(compiled[0]);
    matchers.back().accept_tokens(std::span(*ids).first(static_cast<size_t>(b) % ids->size()));
  }
  std::vector<weft::GrammarMatcher*> ptrs;
  for (auto& m : matchers) ptrs.push_back(&m);
  weft::TokenBitmask mask(batch, (*vocab)->vocab_size());
  weft::ThreadPool pool(threads);
  for (weft::ThreadPool* p : {static_cast<weft::ThreadPool*>(nullptr), &pool}) {
    std::vector<double> us;
    for (int rep = 0; rep < 50; ++rep) {
      t = Clock::now();
      if (!weft::fill_next_token_bitmasks(ptrs, mask, {}, p).ok()) return 1;
      us.push_back(since(t) * 1e6);
    }
    std::printf(
        "\nbatch of %d (tool schema), %d thread(s): fill p50 %.1f us, p99 %.1f us per step\n",
        batch, p ? p->num_threads() : 1, percentile(us, 0.5), percentile(us, 0.99));
  }
  return 0;
}
