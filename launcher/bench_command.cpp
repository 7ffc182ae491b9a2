// weft bench: prefill and decode throughput of the engine, on one process or under mpirun with
// --tp / --pp, and what limits it:
//   * one process: decode bytes moved per second as a fraction of this machine's memory read
//     bandwidth, measured by the same program;
//   * several ranks: step latency, and the pipeline bubble (the fraction of the run's wall time
//     the ranks spent not computing).
// Without --model (one process only) it generates a ~125M-parameter Llama-shaped BF16 model
// (hidden 768, 12 layers, vocab 32000) in a temporary directory; `weft bench --write-model DIR`
// writes that model for multi-rank runs. --sampling picks what the decode steps sample with:
// greedy (the last stage returns argmax tokens), greedy-logprobs (logprobs 5: 5 candidates and
// the log-sum-exp per row), top-k (temperature 1, top_k 50: 50 candidates per row), full-logits
// (top-k plus a zero logit_bias, which needs the full logits gathered and sent). With
// --experts E [--experts-per-token K] the generated model is a Mixtral-shaped mixture whose
// experts have intermediate 2048 / K, so a token reads as many parameters as in the dense model.
// For a mixture it prints the expert load of the decode steps on rank 0's layers: experts hit per
// layer per step, and the busiest expert's tokens over the mean (1.0: balanced); the bandwidth
// figure then counts only the experts a step hit. A benchmark prints numbers; it asserts nothing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include "core/cpu_features.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "launcher/engine_flags.h"
#include "launcher/engine_session.h"
#include "launcher/bench_plot.h"
#include "launcher/memory_bandwidth.h"
#include "model/random_model.h"
#include "weft/kernels/linear.h"

namespace weft {
namespace {

using Clock = std::chrono::steady_clock;

struct Measurement {
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  double decode_step_ms = 0;
  double kv_bytes_per_step = 0;  // average KV bytes one decode step reads (this rank's slice)
  // Mixtures of experts, decode steps, averaged over steps and rank 0's sparse layers:
  double experts_hit = 0;          // experts with at least one token, per layer
  double expert_imbalance = 0;     // max tokens of an expert / mean over experts
  double unread_expert_bytes = 0;  // weight bytes of rank 0's experts a step did not touch
};

// Reads and resets the expert counters of rank 0's sparse layers after one step.
struct ExpertLoad {
  double hit = 0, imbalance = 0, unread_bytes = 0;
  int layers = 0;
};

ExpertLoad take_expert_load(const DecoderModel& model) {
  ExpertLoad load;
  for (const SparseMoe* block : model.sparse_blocks()) {
    const std::vector<int64_t>& tokens = block->routed_tokens();
    int64_t hit = 0, total = 0, busiest = 0;
    for (size_t e = 0; e < tokens.size(); ++e) {
      total += tokens[e];
      busiest = std::max(busiest, tokens[e]);
      const bool local = static_cast<int64_t>(e) >= block->first_local_expert() &&
                         static_cast<int64_t>(e) < block->first_local_expert() + block->num_local_experts();
      if (tokens[e] > 0) {
        ++hit;
      } else if (local) {
        load.unread_bytes += static_cast<double>(block->expert_weight_bytes());
      }
    }
    load.hit += static_cast<double>(hit);
    if (total > 0) load.imbalance += static_cast<double>(busiest) * tokens.size() / total;
    ++load.layers;
    block->reset_routed_tokens();
  }
  return load;
}

// Submits `batch` prompts of `prompt_len` random tokens, times the steps that prefill and the
// pure decode steps that follow.
absl::StatusOr<Measurement> measure(EngineSession& session, const SamplingParams& sampling, int batch,
                                    int prompt_len, int decode_steps, uint64_t seed) {
  Engine& engine = session.engine();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(session.model().config.vocab_size) - 1);
  for (int b = 0; b < batch; ++b) {
    Request r;
    for (int i = 0; i < prompt_len; ++i) r.prompt_ids.push_back(token(rng));
    r.params = sampling;
    r.params.seed = seed + b;
    r.params.ignore_eos = true;
    r.params.max_tokens = decode_steps + 1;
    auto id = engine.add_request(std::move(r));
    if (!id.ok()) return id.status();
  }
  Measurement m;
  double prefill_s = 0, decode_s = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0, decode_step_count = 0;
  double kv_tokens = 0;
  const KvCacheShape kv = session.model().kv_shape(session.options().kv);
  const double kv_bytes_per_token = static_cast<double>(kv.bytes_per_block()) / kv.block_size;
  const DecoderModel& model = *session.model().model;
  take_expert_load(model);
  while (engine.has_unfinished()) {
    const int64_t before = engine.num_prefilled_tokens();
    const auto start = Clock::now();
    auto outputs = engine.step();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (!outputs.ok()) return outputs.status();
    const int64_t prefilled = engine.num_prefilled_tokens() - before;
    const ExpertLoad load = take_expert_load(model);
    if (prefilled > 0) {
      prefill_s += s;
      prefill_tokens += prefilled;
    } else if (!outputs->empty()) {
      decode_s += s;
      // Speculative decoding may emit several tokens per sequence in one step.
      for (const SequenceOutput& o : *outputs) decode_tokens += static_cast<int64_t>(o.token_ids.size());
      ++decode_step_count;
      kv_tokens += static_cast<double>(outputs->size()) *
                   (prompt_len + static_cast<double>(decode_step_count) * outputs->size() / batch);
      if (load.layers > 0) {
        m.experts_hit += load.hit / load.layers;
        m.expert_imbalance += load.imbalance / load.layers;
        m.unread_expert_bytes += load.unread_bytes;
      }
    }
  }
  const double steps = static_cast<double>(std::max<int64_t>(1, decode_step_count));
  m.experts_hit /= steps;
  m.expert_imbalance /= steps;
  m.unread_expert_bytes /= steps;
  m.prefill_tokens_per_s = prefill_tokens / std::max(prefill_s, 1e-9);
  m.decode_tokens_per_s = decode_tokens / std::max(decode_s, 1e-9);
  m.decode_step_ms = 1000.0 * decode_s / std::max<int64_t>(1, decode_step_count);
  m.kv_bytes_per_step = kv_tokens * kv_bytes_per_token / std::max<int64_t>(1, decode_step_count);
  return m;
}

// The decode sampling of --sampling (see the top of this file).
absl::StatusOr<SamplingParams> bench_sampling(const std::string& mode) {
  SamplingParams p;
  if (mode == "greedy" || mode == "greedy-logprobs") {
    p.temperature = 0;
    if (mode == "greedy-logprobs") p.logprobs = 5;
    return p;
  }
  p.temperature = 1.0f;
  p.top_k = 50;
  if (mode == "full-logits") p.logit_bias[0] = 0.0f;
  if (mode != "top-k" && mode != "full-logits") {
    return absl::InvalidArgumentError("--sampling: expected greedy, greedy-logprobs, top-k or full-logits, got '" +
                                      mode + "'");
  }
  return p;
}

// `table`: what the run printed, as data (bench_plot.h draws it).
int bench(EngineSession& session, const SamplingParams& sampling, const std::vector<int32_t>& batches,
          int prompt_len, int decode_steps, double* wall_seconds, nlohmann::ordered_json& table) {
  const double weight_bytes = static_cast<double>(session.model().model->weight_bytes());
  const bool single = session.world_size() == 1;
  double bandwidth = 0;
  std::printf("cpu: %s, ranks: %d, decode sampling: %s\n", cpu_features().to_string().c_str(),
              session.world_size(),
              sampling.is_greedy()           ? (sampling.logprobs ? "greedy with logprobs 5" : "greedy")
              : sampling.logit_bias.empty() ? "top-k 50 from candidates"
                                            : "top-k 50 from full logits");
  std::printf("matmul activations: %s\n",
              kernels::matmul_precision() == kernels::MatmulPrecision::kInt8
                  ? "int8 per 16 elements for block-quantized and --quantize int8 weights, f32 for the others"
              : !kernels::linear_uses_bf16_activations(session.model().config.torch_dtype) ? "f32"
              : cpu_features().amx_bf16
                  ? "bf16 (AMX tiles, AVX512-BF16 where k is not a multiple of 32; --matmul-precision f32 for F32 activations)"
                  : "bf16 (AVX512-BF16; --matmul-precision f32 for F32 activations)");
  std::printf("model: %s, rank 0 holds %.1f MB of weights (%s), KV cache %s\n",
              session.options().model_dir.c_str(), weight_bytes / 1e6,
              dtype_name(session.model().config.torch_dtype),
              dtype_name(session.model().kv_shape(session.options().kv).dtype));
  if (single) {
    ThreadPool pool(session.options().num_threads);
    bandwidth = measure_read_bandwidth(pool);
    std::printf("memory read bandwidth (measured, %d threads): %.2f GB/s\n", pool.num_threads(),
                bandwidth / 1e9);
  }
  table = {{"cpu", cpu_features().to_string()},
           {"model", session.options().model_dir.string()},
           {"ranks", session.world_size()},
           {"weight_bytes", weight_bytes},
           {"memory_read_bandwidth_bytes_per_s", single ? nlohmann::ordered_json(bandwidth) : nullptr},
           {"rows", nlohmann::ordered_json::array()}};
  const std::vector<const SparseMoe*> sparse = session.model().model->sparse_blocks();
  const MoeConfig& moe = session.model().config.moe;
  if (moe.enabled()) {
    std::printf("mixture of experts: %lld experts, top-%lld; expert load from rank 0's %zu sparse layers\n",
                static_cast<long long>(moe.num_experts), static_cast<long long>(moe.experts_per_token),
                sparse.size());
  }
  std::printf("%-6s %-8s %-15s %-14s %-10s %s%s\n", "batch", "prompt", "prefill tok/s",
              "decode tok/s", "step ms", single ? "decode bytes/s vs bandwidth" : "",
              moe.enabled() ? "   experts hit/layer/step, busiest/mean" : "");
  // One untimed round first: it pages in the weights (memory-mapped, and a mixture's experts are
  // first touched only when some token chooses them), so the first measured batch is not slowed
  // by page faults the later ones do not pay.
  if (auto warm = measure(session, sampling, *std::max_element(batches.begin(), batches.end()),
                          std::min(prompt_len, 32), 2, 7);
      !warm.ok()) {
    std::cerr << "weft bench: " << warm.status().message() << "\n";
    return 1;
  }
  const auto start = Clock::now();
  for (int32_t batch : batches) {
    auto m = measure(session, sampling, batch, prompt_len, decode_steps, 42 + batch);
    if (!m.ok()) {
      std::cerr << "weft bench: " << m.status().message() << "\n";
      return 1;
    }
    std::printf("%-6d %-8d %-15.1f %-14.1f %-10.2f", batch, prompt_len, m->prefill_tokens_per_s,
                m->decode_tokens_per_s, m->decode_step_ms);
    nlohmann::ordered_json row = {{"batch", batch},
                                  {"prompt_len", prompt_len},
                                  {"prefill_tokens_per_s", m->prefill_tokens_per_s},
                                  {"decode_tokens_per_s", m->decode_tokens_per_s},
                                  {"decode_step_ms", m->decode_step_ms},
                                  {"bandwidth_fraction", nullptr}};
    if (single) {
      // Each decode step reads every weight once plus the KV cache of every sequence.
      // (A mixture's step reads only the experts some token chose.)
      const double bytes_per_s = (weight_bytes - m->unread_expert_bytes + m->kv_bytes_per_step) *
                                 1000.0 / m->decode_step_ms;
      std::printf(" %.1f%% (%.2f GB/s)", 100.0 * bytes_per_s / bandwidth, bytes_per_s / 1e9);
      row["bandwidth_fraction"] = bytes_per_s / bandwidth;
    }
    table["rows"].push_back(std::move(row));
    if (moe.enabled()) std::printf("   %.2f of %lld, %.2f", m->experts_hit,
                                   static_cast<long long>(moe.num_experts), m->expert_imbalance);
    std::printf("\n");
  }
  if (const Engine& engine = session.engine(); engine.speculating()) {
    // Over the whole run (warm-up round included): random-token prompts give a draft or an
    // n-gram lookup little to go on, so these are a floor, not what text gets.
    const SpeculationStats& st = engine.speculation_stats();
    std::printf("speculative decoding (%s, K = %d, adaptive %s): %lld guesses verified, acceptance %.3f, "
                "mean tokens per verifying step %.2f, k > 0 in %lld of %lld steps\n",
                std::string(engine.proposer()->name()).c_str(), engine.speculation_policy()->max_tokens(),
                engine.speculation_policy()->adaptive() ? "on" : "off", static_cast<long long>(st.num_draft_tokens),
                st.acceptance_rate(), st.mean_accepted_length(), static_cast<long long>(st.num_steps_speculating),
                static_cast<long long>(st.num_steps));
  }
  *wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return 0;
}

}  // namespace

int run_bench(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("bench"), args, [](const absl::Status& status) {
    std::cerr << "weft bench: " << status.message() << "\n";
    return 2;
  });
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs* cli = &std::get<CliArgs>(parsed);
  RandomModelSpec spec;
  auto experts = cli->get_int("experts", 0);
  auto experts_per_token = cli->get_int("experts-per-token", 2);
  if (!experts.ok() || !experts_per_token.ok() || *experts < 0 || *experts_per_token < 1 ||
      (*experts > 0 && (*experts_per_token > *experts || spec.intermediate_size % *experts_per_token != 0))) {
    std::cerr << "weft bench: --experts E --experts-per-token K: need 1 <= K <= E and K dividing "
              << spec.intermediate_size << "\n";
    return 2;
  }
  if (*experts > 0) {
    spec.num_experts = *experts;
    spec.experts_per_token = *experts_per_token;
    spec.intermediate_size /= *experts_per_token;
  }
  if (cli->has("write-model")) {
    absl::Status s = write_random_model(*cli->get("write-model"), spec);
    if (!s.ok()) std::cerr << "weft bench: " << s.message() << "\n";
    std::printf("wrote a %.1fM-parameter model to %s\n", spec.num_parameters() / 1e6,
                cli->get("write-model")->c_str());
    return s.ok() ? 0 : 1;
  }
  auto sampling = bench_sampling(cli->get_or("sampling", "greedy"));
  if (!sampling.ok()) {
    std::cerr << "weft bench: " << sampling.status().message() << "\n";
    return 2;
  }
  std::filesystem::path generated;
  std::string model = cli->get_or("model", "");
  if (model.empty()) {
    generated = std::filesystem::temp_directory_path() / ("weft-bench-model-" + std::to_string(::getpid()));
    std::printf("generating a %.1fM-parameter (%.1fM per token) %s BF16 model in %s\n",
                spec.num_parameters() / 1e6, spec.active_parameters() / 1e6,
                spec.num_experts > 0 ? "Mixtral-shaped" : "Llama-shaped", generated.c_str());
    if (absl::Status s = write_random_model(generated, spec); !s.ok()) {
      std::cerr << "weft bench: " << s.message() << "\n";
      return 1;
    }
    model = generated.string();
  }
  auto prompt_len = cli->get_int("prompt-len", 256);
  auto decode_steps = cli->get_int("decode-steps", 32);
  auto batches = cli->get_int_list("batches");
  auto started = EngineSession::start(*cli, model);
  if (!prompt_len.ok() || !decode_steps.ok() || !batches.ok() || !started.ok()) {
    std::cerr << "weft bench: "
              << (started.ok() ? "invalid --prompt-len/--decode-steps/--batches" : started.status().message())
              << "\n";
    return 2;
  }
  if (batches->empty()) *batches = {1, 16};
  EngineSession& session = **started;
  if (absl::Status s = session.load({}); !s.ok()) {
    std::cerr << "weft bench: " << s.message() << "\n";
    return 1;
  }
  double wall = 0;
  nlohmann::ordered_json table;
  const int code = run_session(session, [&] {
    const int measured = bench(session, *sampling, *batches, static_cast<int>(*prompt_len),
                               static_cast<int>(*decode_steps), &wall, table);
    if (measured != 0 || !cli->has("plot")) return measured;
    if (absl::Status s = plot_bench(table, cli->get_or("plot", "")); !s.ok()) {
      std::cerr << "weft bench: " << s.message() << "\n";
      return 1;
    }
    return 0;
  });
  auto compute = session.gather_compute_seconds();
  if (compute.ok() && !compute->empty() && wall > 0) {
    double idle = 0;
    std::printf("compute seconds per rank:");
    for (double c : *compute) {
      std::printf(" %.2f", c);
      idle += std::max(0.0, 1.0 - c / wall);
    }
    std::printf(" of %.2f s wall; pipeline bubble (mean idle fraction): %.1f%%\n", wall,
                100.0 * idle / compute->size());
  }
  if (!generated.empty()) std::filesystem::remove_all(generated);
  return code;
}

}  // namespace weft
