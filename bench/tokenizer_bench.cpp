// tokenizer_bench: encode throughput of weft's tokenizer on one thread, for each fixture
// tokenizer in tests/tokenizer_data/fixtures. The benchmark text (about 4 MB) is generated
// deterministically: English-like prose with numbers, code and punctuation, plus the
// multilingual reference corpus repeated. It is encoded as ~2 KB documents in a loop, the way
// a server sees prompts; the best of several passes is reported.
//
// Usage: tokenizer_bench [--write-text FILE] [--fixtures DIR] [--passes N]
//   --write-text FILE  also writes the benchmark text, for bench/tokenizer_bench.py
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace {

constexpr size_t kTargetBytes = 4 << 20;

const char* const kWords[] = {"the",
                              "of",
                              "and",
                              "to",
                              "in",
                              "a",
                              "is",
                              "that",
                              "for",
                              "it",
                              "as",
                              "was",
                              "with",
                              "be",
                              "by",
                              "on",
                              "not",
                              "he",
                              "this",
                              "are",
                              "or",
                              "his",
                              "from",
                              "at",
                              "which",
                              "but",
                              "have",
                              "an",
                              "had",
                              "they",
                              "you",
                              "were",
                              "their",
                              "one",
                              "all",
                              "we",
                              "can",
                              "her",
                              "has",
                              "there",
                              "been",
                              "if",
                              "more",
                              "when",
                              "will",
                              "would",
                              "who",
                              "so",
                              "no",
                              "model",
                              "inference",
                              "engine",
                              "parallel",
                              "tensor",
                              "pipeline",
                              "token",
                              "sequence",
                              "attention",
                              "memory",
                              "cache",
                              "scheduler",
                              "request",
                              "throughput",
                              "latency",
                              "distributed",
                              "cluster",
                              "gradient",
                              "function",
                              "variable",
                              "return",
                              "however",
                              "therefore",
                              "government",
                              "university",
                              "information",
                              "development",
                              "important",
                              "different",
                              "following",
                              "without",
                              "between",
                              "through",
                              "during",
                              "against",
                              "including",
                              "understanding",
                              "international",
                              "responsibility",
                              "characteristics",
                              "Hello",
                              "World",
                              "The",
                              "In",
                              "It",
                              "However",
                              "London",
                              "Paris",
                              "January",
                              "Monday",
                              "Python",
                              "CUDA",
                              "GPU",
                              "API",
                              "don't",
                              "it's",
                              "we're",
                              "they've",
                              "I'll",
                              "she'd",
                              "can't",
                              "won't"};

struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ULL;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

std::vector<std::string> build_documents(const std::filesystem::path& reference) {
  Rng rng;
  std::vector<std::string> corpus;
  {
    std::ifstream in(reference);
    std::stringstream ss;
    ss << in.rdbuf();
    const auto ref = nlohmann::json::parse(ss.str());
    for (const auto& c : ref["tokenizers"]["qwen3"]["cases"])
      corpus.push_back(c["text"].get<std::string>());
  }
  std::vector<std::string> docs;
  size_t total = 0;
  const size_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  while (total < kTargetBytes) {
    std::string doc;
    if (rng.below(10) == 0) {
      // A multilingual / symbol-heavy document from the reference corpus.
      while (doc.size() < 2048) doc += corpus[rng.below(corpus.size())] + "\n";
    } else {
      while (doc.size() < 2048) {
        const size_t sentence = 5 + rng.below(20);
        for (size_t i = 0; i < sentence; ++i) {
          if (i) doc += ' ';
          const size_t r = rng.below(100);
          if (r < 3) {
            doc += std::to_string(rng.next() % 100000);
          } else if (r < 5) {
            doc += "x_" + std::to_string(rng.below(100)) + "()";
          } else {
            doc += kWords[rng.below(n_words)];
          }
          if (rng.below(12) == 0) doc += ',';
        }
        doc += rng.below(8) == 0 ? "?" : ".";
        doc += rng.below(6) == 0 ? "\n\n" : " ";
      }
    }
    total += doc.size();
    docs.push_back(std::move(doc));
  }
  return docs;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path data = std::filesystem::path(WEFT_SOURCE_DIR) / "tests" / "tokenizer_data";
  std::filesystem::path fixtures = data / "fixtures";
  std::string write_text;
  int passes = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--write-text") && i + 1 < argc) {
      write_text = argv[++i];
    } else if (!std::strcmp(argv[i], "--fixtures") && i + 1 < argc) {
      fixtures = argv[++i];
    } else if (!std::strcmp(argv[i], "--passes") && i + 1 < argc) {
      passes = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--write-text FILE] [--fixtures DIR] [--passes N]\n",
                   argv[0]);
      return 2;
    }
  }
  const std::vector<std::string> docs = build_documents(data / "reference.json");
  size_t bytes = 0;
  for (const auto& d : docs) bytes += d.size();
  if (!write_text.empty()) {
    // Documents separated by a form feed + newline, which never occurs inside them.
    std::ofstream out(write_text, std::ios::binary);
    for (const auto& d : docs) out << d << "\f\n";
  }
  std::printf("text: %zu documents, %.2f MB\n", docs.size(), bytes / 1e6);
  std::printf("%-12s %12s %12s %10s\n", "tokenizer", "tokens", "best_s", "MB/s");
  for (const char* name : {"qwen3", "llama2", "deepseek_v3"}) {
    auto tok = weft::Tokenizer::load(fixtures / name);
    if (!tok.ok()) {
      std::fprintf(stderr, "%s: %s\n", name, std::string(tok.status().message()).c_str());
      return 1;
    }
    double best = 1e30;
    size_t tokens = 0;
    for (int p = 0; p < passes; ++p) {
      tokens = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& d : docs) {
        auto ids = (*tok)->encode(d, false);
        if (!ids.ok()) return 1;
        tokens += ids->size();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, s);
    }
    std::printf("%-12s %12zu %12.3f %10.2f\n", name, tokens, best, bytes / 1e6 / best);
  }
  return 0;
}
