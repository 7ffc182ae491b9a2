// constrained_decode_bench: what a JSON-schema constraint costs decode. For each batch size it
// decodes the same prompts for the same number of tokens three ways -- unconstrained, under the
// schema with the masks filled while the forward pass runs (the default, overlap), and under the
// schema with the masks filled after it (after-forward) -- and prints tokens/s and the ratios.
// The schema asks for at least 64 records, so no constrained request ends before --max-tokens:
// every run decodes batch x max-tokens tokens and the only difference is the constraint.
// A program that prints numbers, not a test (DESIGN.md section 6).
//
//   constrained_decode_bench [--model DIR] [--batches 1,32] [--max-tokens 128] [--threads N]
//                            [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "constrain/grammar_constraint.h"
#include "engine/local_engine.h"
#include "nlohmann/json.hpp"
#include "tokenizer/tokenizer.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::filesystem::path model = std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-model";
  std::vector<int> batches = {1, 32};
  int max_tokens = 128;
  int threads = 0;
  int rounds = 2;
};

// Records of people: strings (one bounded), an enum, integers, a nested object, an array.
constexpr const char* kSchema = R"({
  "type": "array", "minItems": 64,
  "items": {
    "type": "object", "additionalProperties": false,
    "required": ["name", "role", "age", "address", "tags"],
    "properties": {
      "name": {"type": "string", "maxLength": 24},
      "role": {"enum": ["engineer", "doctor", "teacher", "farmer", "artist"]},
      "age": {"type": "integer", "minimum": 0, "maximum": 130},
      "address": {"type": "object", "required": ["city", "zip"],
                  "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}},
      "tags": {"type": "array", "maxItems": 4, "items": {"type": "string"}}
    }
  }
})";

[[noreturn]] void fail(const absl::Status& s) {
  std::fprintf(stderr, "constrained_decode_bench: %s\n", std::string(s.message()).c_str());
  std::exit(1);
}

// Best tokens/s over the rounds of decoding `prompts` (greedy, max_tokens each, EOS ignored).
double tokens_per_s(const Options& o, const std::vector<std::vector<int32_t>>& prompts,
                    std::shared_ptr<const TokenConstraintSource> constraint, bool overlap) {
  LocalEngineOptions options;
  options.model_dir = o.model;
  options.num_threads = o.threads;
  options.kv.memory_bytes = 512ll << 20;
  options.overlap_constraint_masks = overlap;
  auto local = LocalEngine::create(options);
  if (!local.ok()) fail(local.status());
  Engine& engine = (*local)->engine();
  double best = 0;
  for (int round = 0; round < o.rounds; ++round) {
    for (const auto& prompt : prompts) {
      Request r;
      r.prompt_ids = prompt;
      r.params.temperature = 0;
      r.params.max_tokens = o.max_tokens;
      r.params.ignore_eos = true;
      r.constraint = constraint;
      if (absl::Status s = engine.add_request(r).status(); !s.ok()) fail(s);
    }
    int64_t tokens = 0;
    const auto start = Clock::now();
    while (engine.has_unfinished()) {
      auto outputs = engine.step();
      if (!outputs.ok()) fail(outputs.status());
      for (const SequenceOutput& out : *outputs) tokens += static_cast<int64_t>(out.token_ids.size());
    }
    const int64_t expected = static_cast<int64_t>(prompts.size()) * o.max_tokens;
    if (tokens != expected) {
      std::fprintf(stderr, "constrained_decode_bench: %lld tokens decoded, %lld expected\n",
                   static_cast<long long>(tokens), static_cast<long long>(expected));
      std::exit(1);
    }
    best = std::max(best, tokens / std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

int main_impl(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "constrained_decode_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--model") {
      o.model = value;
    } else if (flag == "--batches") {
      o.batches.clear();
      std::stringstream ss(value);
      for (std::string b; std::getline(ss, b, ',');) o.batches.push_back(std::stoi(b));
    } else if (flag == "--max-tokens") {
      o.max_tokens = std::stoi(value);
    } else if (flag == "--threads") {
      o.threads = std::stoi(value);
    } else if (flag == "--rounds") {
      o.rounds = std::stoi(value);
    } else {
      std::fprintf(stderr,
                   "usage: constrained_decode_bench [--model DIR] [--batches 1,32] [--max-tokens N] "
                   "[--threads N] [--rounds R]\n");
      return 2;
    }
  }
  auto tokenizer = Tokenizer::load(o.model);
  if (!tokenizer.ok()) fail(tokenizer.status());
  // The model's logits width and stop ids, as the engine sees them.
  LocalEngineOptions probe;
  probe.model_dir = o.model;
  probe.num_threads = 1;
  probe.kv.memory_bytes = 8ll << 20;
  auto local = LocalEngine::create(probe);
  if (!local.ok()) fail(local.status());
  const EngineConfig& config = (*local)->engine().config();
  auto compiler = model_grammar_compiler(**tokenizer, config.vocab_size, config.eos_token_ids);
  if (!compiler.ok()) fail(compiler.status());
  auto constraint =
      request_constraint(nlohmann::json{{"guided_json", nlohmann::json::parse(kSchema)}}, **compiler);
  if (!constraint.ok()) fail(constraint.status());
  local->reset();

  std::printf("model %s (vocabulary %d), %d tokens per request, greedy, best of %d rounds\n",
              o.model.c_str(), config.vocab_size, o.max_tokens, o.rounds);
  std::printf("%-6s %-14s %-14s %-7s %-14s %-7s\n", "batch", "plain tok/s", "overlap tok/s", "ratio",
              "after tok/s", "ratio");
  for (const int batch : o.batches) {
    std::vector<std::vector<int32_t>> prompts;
    for (int b = 0; b < batch; ++b) {
      const std::string text = "List people as JSON records with name, role, age, address and tags. "
                               "Person " + std::to_string(b) + " comes first:\n";
      prompts.push_back(*(*tokenizer)->encode(text, true));
    }
    const double plain = tokens_per_s(o, prompts, nullptr, true);
    const double overlap = tokens_per_s(o, prompts, *constraint, true);
    const double after = tokens_per_s(o, prompts, *constraint, false);
    std::printf("%-6d %-14.1f %-14.1f %-7.2f %-14.1f %-7.2f\n", batch, plain, overlap, overlap / plain,
                after, after / plain);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::main_impl(argc, argv); }
