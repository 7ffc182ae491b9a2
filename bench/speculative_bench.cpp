// speculative_bench: decode tokens/s with and without speculative decoding, on the default model
// and its draft (or --model / --draft-model), from real text (tests/golden/default_model/
// heldout.txt, which neither model was trained on):
//   text  : a verse's first words, continued for --max-tokens; draft-model speculation;
//   copy  : a passage given twice, then its start: the model copies it; n-gram speculation;
//   json  : (with --json-schema FILE) output constrained by the schema, the prompt showing two
//           records of it; n-gram speculation (the constrained sequences' guesses screened by
//           the grammar, Engine::constrain_guesses). Requests end when the grammar is complete.
// For each batch size and sampling (greedy; T = 0.8 top-p 0.95 without seeds) it prints plain
// decoding's tokens/s, speculation's (adaptive, and fixed K for reference), the ratio, the
// acceptance rate and the mean tokens per verifying sequence-step. Wall time covers the whole
// run (prefill included; it is small next to the decode of --max-tokens tokens per request).
// The three engines run their rounds in turn (plain, adaptive, fixed K, plain, ...), and each
// keeps its best round.
//   speculative_bench [--batches 1,16,64] [--max-tokens 128] [--k 4] [--threads N] [--rounds R]
//                     [--workloads text,copy,json] [--json-schema FILE] [--model M --draft-model D]
//                     [--matmul-precision f32|bf16|int8]   (default f32)
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/local_engine.h"
#include "tokenizer/tokenizer.h"
#include "weft/kernels/linear.h"
#ifdef WEFT_BENCH_CONSTRAIN
#include "constrain/grammar_constraint.h"
#include "nlohmann/json.hpp"
#endif

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::filesystem::path model = std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-model";
  std::filesystem::path draft = std::filesystem::path(WEFT_SOURCE_DIR) / "configs" / "default-draft";
  std::vector<int> batches = {1, 16, 64};
  int max_tokens = 128;
  int k = 4;
  int threads = 0;
  int rounds = 2;
  std::vector<std::string> workloads = {"text", "copy"};
  std::filesystem::path json_schema;
};

std::vector<std::string> heldout_lines() {
  std::ifstream in(std::filesystem::path(WEFT_SOURCE_DIR) / "tests" / "golden" / "default_model" / "heldout.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 40) lines.push_back(line);
  }
  return lines;
}

std::string first_words(const std::string& line, int n) {
  std::istringstream words(line);
  std::string out, w;
  for (int i = 0; i < n && words >> w; ++i) out += (i ? " " : "") + w;
  return out;
}

struct Result {
  double tokens_per_s = 0;
  double acceptance = 0;
  double mean_length = 0;
  double tokens_per_request = 0;
  int64_t grammar_dropped = 0;  // guesses the grammar refused before the step
};

// One engine under test (plain, adaptive or fixed K), kept across the rounds so that the
// contenders' rounds alternate: a slow patch of a shared machine hits all of them, not one.
struct Contender {
  std::unique_ptr<LocalEngine> local;
  double best = 0;
  double tokens_per_request = 0;
};

Contender make_contender(const Options& o, SpeculativeMethod method, bool adaptive) {
  LocalEngineOptions options;
  options.model_dir = o.model;
  options.num_threads = o.threads;
  options.kv.memory_bytes = 256ll << 20;
  options.seed = 7;
  options.speculative.method = method;
  options.speculative.draft_model = method == SpeculativeMethod::kDraftModel ? o.draft : std::filesystem::path();
  options.speculative.engine.num_speculative_tokens = o.k;
  options.speculative.engine.adaptive = adaptive;
  auto local = LocalEngine::create(options);
  if (!local.ok()) {
    std::fprintf(stderr, "speculative_bench: %s\n", std::string(local.status().message()).c_str());
    std::exit(1);
  }
  Contender c;
  c.local = std::move(*local);
  return c;
}

// Runs every prompt to --max-tokens once; keeps the best tokens/s.
void run_round(const Options& o, Contender& c, const std::vector<std::vector<int32_t>>& prompts,
               const SamplingParams& params, std::shared_ptr<const TokenConstraintSource> constraint) {
  Engine& engine = c.local->engine();
  for (const auto& prompt : prompts) {
    Request r;
    r.prompt_ids = prompt;
    r.params = params;
    r.params.max_tokens = o.max_tokens;
    r.params.ignore_eos = true;
    r.constraint = constraint;
    if (!engine.add_request(r).ok()) std::exit(1);
  }
  int64_t tokens = 0;
  const auto start = Clock::now();
  while (engine.has_unfinished()) {
    auto outputs = engine.step();
    if (!outputs.ok()) {
      std::fprintf(stderr, "speculative_bench: %s\n", std::string(outputs.status().message()).c_str());
      std::exit(1);
    }
    for (const SequenceOutput& out : *outputs) tokens += static_cast<int64_t>(out.token_ids.size());
  }
  c.best = std::max(c.best, tokens / std::chrono::duration<double>(Clock::now() - start).count());
  c.tokens_per_request = static_cast<double>(tokens) / static_cast<double>(prompts.size());
}

Result result_of(const Contender& c, int batch) {
  const Engine& engine = c.local->engine();
  if (const SpeculationPolicy* policy = engine.speculation_policy(); policy && std::getenv("SPEC_DEBUG")) {
    std::fprintf(stderr, "batch %d: current k %d; rates", batch, policy->current(batch));
    for (int k : policy->arms()) std::fprintf(stderr, " k=%d:%.0f", k, policy->rate(batch, k));
    std::fprintf(stderr, "; k>0 in %lld of %lld steps\n", (long long)engine.speculation_stats().num_steps_speculating,
                 (long long)engine.speculation_stats().num_steps);
  }
  Result r;
  r.tokens_per_s = c.best;
  r.acceptance = engine.speculation_stats().acceptance_rate();
  r.mean_length = engine.speculation_stats().mean_accepted_length();
  r.tokens_per_request = c.tokens_per_request;
  r.grammar_dropped = engine.speculation_stats().num_grammar_dropped_tokens;
  return r;
}

constexpr const char* kUsage =
    "usage: speculative_bench [--batches 1,16,64] [--max-tokens 128] [--k 4] [--threads N] [--rounds R]\n"
    "                         [--workloads text,copy,json] [--json-schema FILE] [--model M --draft-model D]\n"
    "                         [--matmul-precision f32|bf16|int8]   (default f32)\n";

int main_impl(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  if (argc % 2 == 0) {  // every flag takes a value
    std::fprintf(stderr, "speculative_bench: %s needs a value\n%s", argv[argc - 1], kUsage);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--batches") {
      o.batches.clear();
      std::stringstream ss(value);
      for (std::string b; std::getline(ss, b, ',');) o.batches.push_back(std::stoi(b));
    } else if (flag == "--max-tokens") {
      o.max_tokens = std::stoi(value);
    } else if (flag == "--k") {
      o.k = std::stoi(value);
    } else if (flag == "--threads") {
      o.threads = std::stoi(value);
    } else if (flag == "--rounds") {
      o.rounds = std::stoi(value);
    } else if (flag == "--model") {
      o.model = value;
    } else if (flag == "--draft-model") {
      o.draft = value;
    } else if (flag == "--matmul-precision") {
      if (value != "f32" && value != "bf16" && value != "int8") {
        std::fprintf(stderr, "speculative_bench: --matmul-precision: %s is not f32, bf16 or int8\n", value.c_str());
        return 2;
      }
      // Process-wide: the target and the draft both (kernels/linear.h).
      kernels::set_matmul_precision(value == "bf16" ? kernels::MatmulPrecision::kBf16
                                    : value == "int8" ? kernels::MatmulPrecision::kInt8
                                                      : kernels::MatmulPrecision::kF32);
    } else if (flag == "--workloads") {
      o.workloads.clear();
      std::stringstream ss(value);
      for (std::string w; std::getline(ss, w, ',');) {
        if (w != "text" && w != "copy" && w != "json") {
          std::fprintf(stderr, "speculative_bench: --workloads: unknown workload %s (text, copy, json)\n", w.c_str());
          return 2;
        }
        o.workloads.push_back(w);
      }
    } else if (flag == "--json-schema") {
      o.json_schema = value;
    } else {
      std::fprintf(stderr, "speculative_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto tokenizer = Tokenizer::load(o.model);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "speculative_bench: %s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  const bool wants_json = std::find(o.workloads.begin(), o.workloads.end(), "json") != o.workloads.end();
  if (wants_json != !o.json_schema.empty()) {
    std::fprintf(stderr, "speculative_bench: the json workload and --json-schema FILE go together\n");
    return 2;
  }
  std::shared_ptr<const TokenConstraintSource> json_constraint;
  std::string json_example;  // two records of the schema, shown in the json workload's prompts
  if (wants_json) {
#ifdef WEFT_BENCH_CONSTRAIN
    std::ifstream in(o.json_schema);
    nlohmann::json schema = nlohmann::json::parse(in, nullptr, false);
    if (schema.is_discarded() || !schema.is_object()) {
      std::fprintf(stderr, "speculative_bench: --json-schema: %s is not a JSON object\n", o.json_schema.c_str());
      return 2;
    }
    if (schema.contains("examples") && schema["examples"].is_array()) json_example = schema["examples"].dump();
    // The model's logits width and stop ids, as the engine sees them.
    LocalEngineOptions probe;
    probe.model_dir = o.model;
    probe.num_threads = 1;
    probe.kv.memory_bytes = 8ll << 20;
    auto local = LocalEngine::create(probe);
    if (!local.ok()) {
      std::fprintf(stderr, "speculative_bench: %s\n", std::string(local.status().message()).c_str());
      return 1;
    }
    const EngineConfig& config = (*local)->engine().config();
    auto compiler = model_grammar_compiler(**tokenizer, config.vocab_size, config.eos_token_ids);
    if (!compiler.ok()) {
      std::fprintf(stderr, "speculative_bench: %s\n", std::string(compiler.status().message()).c_str());
      return 1;
    }
    auto c = request_constraint(nlohmann::json{{"guided_json", schema}}, **compiler);
    if (!c.ok()) {
      std::fprintf(stderr, "speculative_bench: --json-schema: %s\n", std::string(c.status().message()).c_str());
      return 2;
    }
    json_constraint = *c;
#else
    std::fprintf(stderr, "speculative_bench: --json-schema: built without src/constrain (xgrammar)\n");
    return 2;
#endif
  }
  const std::vector<std::string> lines = heldout_lines();
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_p = 0.95f;
  std::printf("model %s, draft %s, K = %d, %d tokens per request, best of %d rounds\n", o.model.c_str(),
              o.draft.c_str(), o.k, o.max_tokens, o.rounds);
  std::printf("%-5s %-6s %-8s %-10s %-12s %-12s %-7s %-12s %-7s %-8s %-12s %-9s %s\n", "work", "batch", "sampling",
              "proposer", "plain tok/s", "spec tok/s", "ratio", "fixed-K tok/s", "ratio", "accept", "mean length",
              "tok/req", "dropped");
  for (const std::string& workload : o.workloads) {
    const bool json = workload == "json";
    const bool copy = workload == "copy" || json;
    for (int batch : o.batches) {
      std::vector<std::vector<int32_t>> prompts;
      for (int b = 0; b < batch; ++b) {
        const std::string& line = lines[(b * 7) % lines.size()];
        const std::string passage = line + "\n" + lines[(b * 7 + 1) % lines.size()];
        const std::string text = json   ? "Records as JSON: " + json_example + "\nThe records of \"" + first_words(line, 6) + "\":\n"
                                 : copy ? passage + "\n" + passage + "\n" + first_words(line, 4)
                                        : first_words(line, 6);
        prompts.push_back(*(*tokenizer)->encode(text, true));
      }
      for (const SamplingParams* p : {&greedy, &sampled}) {
        const SpeculativeMethod method = copy ? SpeculativeMethod::kNgram : SpeculativeMethod::kDraftModel;
        const auto constraint = json ? json_constraint : nullptr;
        Contender contenders[3] = {make_contender(o, SpeculativeMethod::kNone, false), make_contender(o, method, true),
                                   make_contender(o, method, false)};
        for (int round = 0; round < o.rounds; ++round) {
          for (Contender& c : contenders) run_round(o, c, prompts, *p, constraint);
        }
        const Result plain = result_of(contenders[0], batch);
        const Result spec = result_of(contenders[1], batch);
        const Result fixed = result_of(contenders[2], batch);
        std::printf("%-5s %-6d %-8s %-10s %-12.1f %-12.1f %-7.2f %-13.1f %-7.2f %-8.3f %-12.2f %-9.1f %lld\n",
                    workload.c_str(), batch, p->is_greedy() ? "greedy" : "T=0.8", copy ? "ngram" : "draft",
                    plain.tokens_per_s, spec.tokens_per_s, spec.tokens_per_s / plain.tokens_per_s, fixed.tokens_per_s,
                    fixed.tokens_per_s / plain.tokens_per_s, fixed.acceptance, fixed.mean_length,
                    fixed.tokens_per_request, static_cast<long long>(fixed.grammar_dropped));
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::main_impl(argc, argv); }
