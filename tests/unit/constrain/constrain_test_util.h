// Shared helpers for the constrain tests: real tokenizers from the repository, their grammar
// vocabularies (built once per process), and a greedy walk under a grammar over random logits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "constrain/grammar_compiler.h"
#include "constrain/grammar_matcher.h"
#include "constrain/grammar_vocabulary.h"
#include "constrain/token_bitmask.h"
#include "gtest/gtest.h"
#include "tokenizer/tokenizer.h"

namespace weft::testing {

// "default-model" (configs/default-model, 4096-token byte-level BPE) or a fixture of
// tests/tokenizer_data/fixtures ("qwen3": 151k byte-level BPE, "llama2": sentencepiece-style
// with byte fallback, "deepseek_v3").
inline std::filesystem::path tokenizer_dir(const std::string& name) {
  const std::filesystem::path root(WEFT_SOURCE_DIR);
  if (name == "default-model") return root / "configs" / "default-model";
  return root / "tests" / "tokenizer_data" / "fixtures" / name;
}

inline std::shared_ptr<const Tokenizer> load_tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  auto tok = Tokenizer::load(tokenizer_dir(name));
  EXPECT_TRUE(tok.ok()) << tok.status();
  std::shared_ptr<const Tokenizer> result = tok.ok() ? *tok : nullptr;
  cache[name] = result;
  return result;
}

inline std::shared_ptr<const GrammarVocabulary> load_vocabulary(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const GrammarVocabulary>> cache;
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  auto tok = load_tokenizer(name);
  if (!tok) return nullptr;
  auto vocab = GrammarVocabulary::from_tokenizer(*tok);
  EXPECT_TRUE(vocab.ok()) << vocab.status();
  std::shared_ptr<const GrammarVocabulary> result = vocab.ok() ? *vocab : nullptr;
  cache[name] = result;
  return result;
}

// xorshift64*: cheap random logits for vocabularies of 150k tokens.
class FastRng {
 public:
  explicit FastRng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1Dull;
  }
  float uniform() { return static_cast<float>(next() >> 40) / static_cast<float>(1 << 24); }

 private:
  uint64_t s_;
};

struct Walk {
  std::vector<int32_t> ids;  // accepted ids, the stop token included when it ended on one
  bool terminated = false;
  std::string bytes;  // the grammar's bytes of the ids (stop token excluded)
};

// Greedy decoding over random logits under `grammar`: each step fills the mask, applies it to
// a random logits row, takes the argmax and accepts it, until the matcher terminates or
// `max_steps` pass. `stop_bias` is added to the stop tokens' logits (a model that likes to end).
inline Walk greedy_walk(const std::shared_ptr<const CompiledGrammar>& grammar, uint64_t seed,
                        int max_steps, float stop_bias = 0.0f) {
  const GrammarVocabulary& vocab = *grammar->vocabulary();
  GrammarMatcher matcher(grammar);
  TokenBitmask mask(1, vocab.vocab_size());
  std::vector<float> logits(vocab.vocab_size());
  FastRng rng(seed);
  Walk walk;
  for (int step = 0; step < max_steps && !matcher.is_terminated(); ++step) {
    auto filled = matcher.fill_next_token_bitmask(mask.row(0));
    EXPECT_TRUE(filled.ok()) << filled.status();
    for (float& l : logits) l = rng.uniform();
    for (const int32_t s : vocab.stop_token_ids()) logits[s] += stop_bias;
    apply_token_bitmask(logits, mask.row(0), vocab.vocab_size());
    const int32_t best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_NE(logits[best], -std::numeric_limits<float>::infinity()) << "no token allowed";
    EXPECT_TRUE(matcher.accept_token(best)) << "masked argmax " << best << " refused";
    walk.ids.push_back(best);
    walk.bytes.append(vocab.token_bytes(best));
  }
  walk.terminated = matcher.is_terminated();
  return walk;
}

// The ids of `text` under `tokenizer` (no special tokens).
inline std::vector<int32_t> encode(const Tokenizer& tokenizer, const std::string& text) {
  auto ids = tokenizer.encode(text, /*add_special_tokens=*/false);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

}  // namespace weft::testing
