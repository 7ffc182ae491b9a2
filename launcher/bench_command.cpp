// weft bench: prefill and decode throughput of the CPU engine, and decode as a fraction of this
// machine's measured memory bandwidth. Without --model it generates a ~125M-parameter
// Llama-shaped BF16 model (hidden 768, 12 layers, vocab 32000) in a temporary directory.
// A benchmark prints numbers; it asserts nothing.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/cpu_features.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "launcher/memory_bandwidth.h"
#include "model/random_model.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  double decode_step_ms = 0;
  double kv_bytes_per_step = 0;  // average KV bytes read by one decode step
};

// Submits `batch` prompts of `prompt_len` random tokens, times the steps that prefill and the
// pure decode steps that follow.
absl::StatusOr<Measurement> measure(LocalEngine& local, int batch, int prompt_len, int decode_steps,
                                    uint64_t seed) {
  Engine& engine = local.engine();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(local.model().config.vocab_size) - 1);
  for (int b = 0; b < batch; ++b) {
    Request r;
    for (int i = 0; i < prompt_len; ++i) r.prompt_ids.push_back(token(rng));
    r.params.temperature = 0;
    r.params.ignore_eos = true;
    r.params.max_tokens = decode_steps + 1;
    auto id = engine.add_request(std::move(r));
    if (!id.ok()) return id.status();
  }
  Measurement m;
  double prefill_s = 0, decode_s = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0, decode_step_count = 0;
  double kv_tokens = 0;
  const KvCacheShape kv = local.kv_cache().shape();
  const double kv_bytes_per_token = static_cast<double>(kv.bytes_per_block()) / kv.block_size;
  while (engine.has_unfinished()) {
    const int64_t before = engine.num_prefilled_tokens();
    const auto start = Clock::now();
    auto outputs = engine.step();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!outputs.ok()) return outputs.status();
    const int64_t prefilled = engine.num_prefilled_tokens() - before;
    if (prefilled > 0) {
      prefill_s += s;
      prefill_tokens += prefilled;
    } else {
      decode_s += s;
      decode_tokens += static_cast<int64_t>(outputs->size());
      ++decode_step_count;
      kv_tokens += static_cast<double>(outputs->size()) *
                   (prompt_len + static_cast<double>(decode_step_count));
    }
  }
  m.prefill_tokens_per_s = prefill_tokens / prefill_s;
  m.decode_tokens_per_s = decode_tokens / decode_s;
  m.decode_step_ms = 1000.0 * decode_s / std::max<int64_t>(1, decode_step_count);
  m.kv_bytes_per_step = kv_tokens * kv_bytes_per_token / std::max<int64_t>(1, decode_step_count);
  return m;
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  std::set<std::string> value_flags = engine_value_flags();
  value_flags.insert({"prompt-len", "decode-steps", "batches"});
  auto cli = CliArgs::parse(args, value_flags, engine_bool_flags());
  if (!cli.ok()) {
    std::cerr << "weft bench: " << cli.status().message() << "\n";
    return 2;
  }
  std::filesystem::path model_dir;
  std::filesystem::path generated;
  if (cli->has("model")) {
    model_dir = *cli->get("model");
  } else {
    generated = std::filesystem::temp_directory_path() / ("weft-bench-model-" + std::to_string(::getpid()));
    RandomModelSpec spec;
    std::printf("generating a %.1fM-parameter Llama-shaped BF16 model in %s\n",
                spec.num_parameters() / 1e6, generated.c_str());
    if (absl::Status s = write_random_model(generated, spec); !s.ok()) {
      std::cerr << "weft bench: " << s.message() << "\n";
      return 1;
    }
    model_dir = generated;
  }
  auto options = engine_options_from(*cli, model_dir.string());
  auto prompt_len = cli->get_int("prompt-len", 256);
  auto decode_steps = cli->get_int("decode-steps", 32);
  auto batches = cli->get_int_list("batches");
  if (!options.ok() || !prompt_len.ok() || !decode_steps.ok() || !batches.ok()) {
    std::cerr << "weft bench: invalid flags\n";
    return 2;
  }
  if (batches->empty()) *batches = {1, 16};

  int exit_code = 0;
  {
    auto local = LocalEngine::create(*options);
    if (!local.ok()) {
      std::cerr << "weft bench: " << local.status().message() << "\n";
      exit_code = 1;
    } else {
      LocalEngine& e = **local;
      const double bandwidth = measure_read_bandwidth(e.pool());
      const double weight_bytes = static_cast<double>(e.model().model->weight_bytes());
      std::printf("cpu: %s, threads: %d\n", cpu_features().to_string().c_str(), e.pool().num_threads());
      std::printf("model: %s, weights %.1f MB (%s), kv cache %s\n", model_dir.c_str(), weight_bytes / 1e6,
                  dtype_name(e.model().config.torch_dtype), dtype_name(e.kv_cache().shape().dtype));
      std::printf("memory read bandwidth (measured): %.2f GB/s\n", bandwidth / 1e9);
      std::printf("%-6s %-10s %-16s %-16s %-14s %-22s\n", "batch", "prompt", "prefill tok/s",
                  "decode tok/s", "step ms", "decode bytes/bandwidth");
      for (int64_t batch : *batches) {
        auto m = measure(e, static_cast<int>(batch), static_cast<int>(*prompt_len),
                         static_cast<int>(*decode_steps), 42 + batch);
        if (!m.ok()) {
          std::cerr << "weft bench: " << m.status().message() << "\n";
          exit_code = 1;
          break;
        }
        // Each decode step reads every weight once plus the KV cache of every sequence.
        const double bytes_per_s = (weight_bytes + m->kv_bytes_per_step) * 1000.0 / m->decode_step_ms;
        std::printf("%-6lld %-10lld %-16.1f %-16.1f %-14.2f %.1f%% (%.2f GB/s)\n",
                    static_cast<long long>(batch), static_cast<long long>(*prompt_len),
                    m->prefill_tokens_per_s, m->decode_tokens_per_s, m->decode_step_ms,
                    100.0 * bytes_per_s / bandwidth, bytes_per_s / 1e9);
      }
    }
  }
  if (!generated.empty()) std::filesystem::remove_all(generated);
  return exit_code;
}

}  // namespace weft
