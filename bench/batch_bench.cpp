// batch_bench: offline generation throughput of the engine on a generated small Llama model.
//
//   batch_bench [--requests N] [--threads T] [--static-batch B] [--max-num-seqs S]
//
// Workload 1 (mixed lengths): N requests (default 240), prompts of 16..256 tokens and outputs of
// 16..128 tokens (uniform, seeded), greedy, eos ignored. Three schedules of the same requests:
//   one at a time     a request runs alone until it finishes;
//   static batches    B requests start together; the next B start when all of them finished;
//   continuous        every request is queued at once; the scheduler admits new ones as soon
//                     as others finish (iteration-level batching, max-num-seqs running).
// Workload 2 (shared prefix): N requests = one 512-token system prompt + a 32-token question
// each, 16 output tokens, continuous batching with and without prefix caching.
// Reports output tokens/s (wall clock), steps and prefilled prompt tokens. Outputs are checked
// to be identical across schedules (greedy) so the comparison is of the same work.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/local_engine.h"
#include "model/random_model.h"

namespace weft {
namespace {

struct Work {
  std::vector<int32_t> prompt;
  int max_tokens = 16;
};

struct Result {
  double seconds = 0;
  int64_t output_tokens = 0;
  int64_t steps = 0;
  int64_t prefilled = 0;
  std::vector<std::vector<int32_t>> outputs;
};

std::unique_ptr<LocalEngine> make_engine(const std::filesystem::path& dir, int threads, int max_seqs,
                                         bool prefix_caching) {
  LocalEngineOptions o;
  o.model_dir = dir;
  o.num_threads = threads;
  o.kv.block_size = 16;
  o.kv.memory_bytes = 512ll << 20;
  o.scheduler.max_num_seqs = max_seqs;
  o.scheduler.max_num_batched_tokens = 2048;
  o.scheduler.enable_prefix_caching = prefix_caching;
  auto e = LocalEngine::create(o);
  if (!e.ok()) {
    std::fprintf(stderr, "batch_bench: %s\n", std::string(e.status().message()).c_str());
    std::exit(1);
  }
  return std::move(*e);
}

// Runs `work` in groups: each group is submitted at once and run until it is done.
Result run_groups(Engine& engine, const std::vector<Work>& work, size_t group) {
  Result r;
  r.outputs.resize(work.size());
  const int64_t prefilled0 = engine.num_prefilled_tokens();
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t begin = 0; begin < work.size(); begin += group) {
    std::map<int64_t, size_t> index;
    for (size_t i = begin; i < std::min(work.size(), begin + group); ++i) {
      Request req;
      req.prompt_ids = work[i].prompt;
      req.params.temperature = 0.0f;
      req.params.max_tokens = work[i].max_tokens;
      req.params.ignore_eos = true;
      auto id = engine.add_request(req);
      if (!id.ok()) {
        std::fprintf(stderr, "batch_bench: %s\n", std::string(id.status().message()).c_str());
        std::exit(1);
      }
      index[*id] = i;
    }
    while (engine.has_unfinished()) {
      auto outs = engine.step();
      if (!outs.ok()) {
        std::fprintf(stderr, "batch_bench: %s\n", std::string(outs.status().message()).c_str());
        std::exit(1);
      }
      ++r.steps;
      for (const SequenceOutput& o : *outs) {
        auto& ids = r.outputs[index.at(o.request_id)];
        ids.insert(ids.end(), o.token_ids.begin(), o.token_ids.end());
        r.output_tokens += static_cast<int64_t>(o.token_ids.size());
      }
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.prefilled = engine.num_prefilled_tokens() - prefilled0;
  return r;
}

void report(const char* name, const Result& r, const Result* baseline) {
  std::printf("  %-34s %8.1f output tok/s  %7.2f s  %6lld steps  %7lld prompt tokens prefilled",
              name, r.output_tokens / r.seconds, r.seconds, static_cast<long long>(r.steps),
              static_cast<long long>(r.prefilled));
  if (baseline != nullptr) {
    std::printf("  x%.2f", (r.output_tokens / r.seconds) / (baseline->output_tokens / baseline->seconds));
    if (r.outputs != baseline->outputs) std::printf("  (OUTPUTS DIFFER)");
  }
  std::printf("\n");
}

constexpr const char* kFlags[] = {"--requests", "--threads", "--static-batch", "--max-num-seqs"};

// Every argument is one of kFlags followed by its value; anything else ends the run with the usage
// (a mistyped flag would otherwise measure the defaults).
bool arguments_known(int argc, char** argv) {
  for (int i = 1; i < argc; i += 2) {
    const bool known = std::any_of(std::begin(kFlags), std::end(kFlags),
                                   [&](const char* f) { return std::strcmp(argv[i], f) == 0; });
    if (!known || i + 1 >= argc) return false;
  }
  return true;
}

int arg_int(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return fallback;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) {
  using namespace weft;
  if (!arguments_known(argc, argv)) {
    std::fprintf(stderr, "usage: batch_bench [--requests 240] [--threads N] [--static-batch 16] [--max-num-seqs 64]\n");
    return 2;
  }
  const int n = arg_int(argc, argv, "--requests", 240);
  const int threads = arg_int(argc, argv, "--threads", 0);
  const int static_batch = arg_int(argc, argv, "--static-batch", 16);
  const int max_seqs = arg_int(argc, argv, "--max-num-seqs", 64);

  RandomModelSpec spec;
  spec.vocab_size = 8192;
  spec.hidden_size = 512;
  spec.intermediate_size = 1408;
  spec.num_layers = 4;
  spec.num_heads = 8;
  spec.num_kv_heads = 4;
  spec.max_position_embeddings = 2048;
  spec.dtype = DType::kBF16;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("weft_batch_bench_" + std::to_string(::getpid()));
  if (absl::Status s = write_random_model(dir, spec); !s.ok()) {
    std::fprintf(stderr, "batch_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::printf("model: generated Llama, %.1fM parameters (hidden %lld, %lld layers, vocab %lld, BF16)\n",
              spec.num_parameters() / 1e6, static_cast<long long>(spec.hidden_size),
              static_cast<long long>(spec.num_layers), static_cast<long long>(spec.vocab_size));

  std::mt19937 rng(42);
  std::uniform_int_distribution<int> tok(3, static_cast<int>(spec.vocab_size) - 1);
  std::vector<Work> mixed(n);
  int64_t out_total = 0;
  for (Work& w : mixed) {
    w.prompt.resize(std::uniform_int_distribution<int>(16, 256)(rng));
    for (int32_t& t : w.prompt) t = tok(rng);
    w.max_tokens = std::uniform_int_distribution<int>(16, 128)(rng);
    out_total += w.max_tokens;
  }
  std::printf("\nworkload 1: %d requests, prompts 16..256 tokens, outputs 16..128 tokens (%lld in all)\n",
              n, static_cast<long long>(out_total));
  auto engine = make_engine(dir, threads, max_seqs, false);
  const Result one = run_groups(engine->engine(), mixed, 1);
  report("one request at a time", one, nullptr);
  const Result statics = run_groups(engine->engine(), mixed, static_cast<size_t>(static_batch));
  report(("static batches of " + std::to_string(static_batch)).c_str(), statics, &one);
  const Result continuous = run_groups(engine->engine(), mixed, mixed.size());
  report(("continuous (max-num-seqs " + std::to_string(max_seqs) + ")").c_str(), continuous, &one);

  std::vector<Work> shared(n);
  std::vector<int32_t> system(512);
  for (int32_t& t : system) t = tok(rng);
  for (Work& w : shared) {
    w.prompt = system;
    for (int i = 0; i < 32; ++i) w.prompt.push_back(tok(rng));
    w.max_tokens = 16;
  }
  std::printf("\nworkload 2: %d requests = shared 512-token prefix + 32 own tokens, 16 output tokens\n", n);
  auto plain = make_engine(dir, threads, max_seqs, false);
  const Result no_cache = run_groups(plain->engine(), shared, shared.size());
  report("continuous, no prefix caching", no_cache, nullptr);
  auto cached = make_engine(dir, threads, max_seqs, true);
  const Result with_cache = run_groups(cached->engine(), shared, shared.size());
  report("continuous, prefix caching", with_cache, &no_cache);
  std::printf("  prefix cache: %lld of %lld looked-up prompt tokens found\n",
              static_cast<long long>(cached->engine().num_prefix_hit_tokens()),
              static_cast<long long>(cached->engine().num_prefix_query_tokens()));
  std::filesystem::remove_all(dir);
  return 0;
}
