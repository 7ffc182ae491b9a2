// gpu_bench: the CUDA executor on a generated ~1B-parameter Llama-shaped BF16 model (hidden 2048,
// 16 layers, 32 heads, 8 KV heads, intermediate 8192, vocab 32000: ~1.1e9 parameters).
//
// Prints one line per number, then a JSON summary:
//   d2d_copy_GBps        cudaMemcpy device-to-device of a 1 GiB buffer, counted as bytes read +
//                        bytes written per second (the traffic a weight read competes with)
//   decode_b1_tok_s      one sequence (128-token prompt), greedy decode steps
//   decode_b1_bw_fraction  model bytes x decode_b1_tok_s / d2d_copy_GBps (target >= 0.8)
//   prefill_tok_s        8 prompts of 1024 tokens in one step
//   decode_b64_tok_s, decode_b256_tok_s  output tokens/s of 64 / 256 sequences decoding together
// Steps are built directly as StepPlans (no scheduler), so the numbers are the executor's.
// Exit codes: 0 ok, 1 error, 3 no GPU visible.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/cuda/cuda_executor.h"
#include "model/model_config.h"
#include "model/random_model.h"
#include "model/weight_store.h"
#include "weft/kernels/cuda/device_buffer.h"
#include "weft/kernels/cuda_device.h"

namespace weft {
namespace {

namespace kc = kernels::cuda;

constexpr int kBlockSize = 16;
constexpr int kMaxModelLen = 2048;
constexpr int kBlocksPerSeq = kMaxModelLen / kBlockSize;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define BENCH_CHECK(expr)                                                        \
  do {                                                                           \
    absl::Status _s = (expr);                                                    \
    if (!_s.ok()) {                                                              \
      std::fprintf(stderr, "gpu_bench: %s: %s\n", #expr, std::string(_s.message()).c_str()); \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

// Sequence s owns blocks [s * kBlocksPerSeq, (s + 1) * kBlocksPerSeq).
PlannedChunk chunk(int seq, int start, int len, int64_t vocab, LogitsWanted logits) {
  PlannedChunk c;
  c.seq_id = seq;
  c.start_position = start;
  c.prompt_len = start + len;
  for (int i = 0; i < len; ++i) c.token_ids.push_back(static_cast<int32_t>((seq * 7919 + start + i) % vocab));
  const int blocks = (start + len + kBlockSize - 1) / kBlockSize;
  for (int b = 0; b < blocks; ++b) c.block_table.push_back(seq * kBlocksPerSeq + b);
  c.logits = logits;
  return c;
}

// Prefills `seqs` sequences with `prompt` tokens each (steps of at most `budget` tokens).
absl::Status prefill(CudaExecutor& ex, int seqs, int prompt, int64_t vocab, int budget) {
  StepPlan plan;
  plan.sample_candidates = 1;  // argmax tokens
  int64_t tokens = 0;
  for (int s = 0; s < seqs; ++s) {
    if (tokens + prompt > budget && !plan.chunks.empty()) {
      auto out = ex.execute(plan);
      if (!out.ok()) return out.status();
      plan.chunks.clear();
      tokens = 0;
    }
    plan.chunks.push_back(chunk(s, 0, prompt, vocab, LogitsWanted::kLast));
    tokens += prompt;
  }
  return ex.execute(plan).status();
}

// Runs `steps` decode steps of `seqs` sequences whose contexts start at `start`; returns seconds
// of the last `steps - warmup` steps.
absl::StatusOr<double> decode(CudaExecutor& ex, int seqs, int start, int steps, int warmup,
                              int64_t vocab) {
  double t0 = 0;
  for (int step = 0; step < steps; ++step) {
    if (step == warmup) t0 = now_s();
    StepPlan plan;
    plan.sample_candidates = 1;  // argmax tokens
    for (int s = 0; s < seqs; ++s) plan.chunks.push_back(chunk(s, start + step, 1, vocab, LogitsWanted::kLast));
    auto out = ex.execute(plan);
    if (!out.ok()) return out.status();
  }
  return now_s() - t0;
}

int run(int argc, char** argv) {
  if (kernels::cuda_device_count() == 0) {
    std::printf("gpu_bench: no GPU visible\n");
    return 3;
  }
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "weft_gpu_bench_model";
  // --only b1 | prefill: just that phase, briefly (for a profiler such as ncu to attribute time
  // to kernels); no numbers printed. --simt-prefill / --gemv: the alternative kernels.
  std::string only;
  bool tensor_core_prefill = true, decode_gemv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--simt-prefill") {
      tensor_core_prefill = false;
    } else if (arg == "--gemv") {
      decode_gemv = true;
    } else {
      dir = arg;
    }
  }
  if (!only.empty() && only != "b1" && only != "prefill") {
    std::fprintf(stderr, "gpu_bench: --only takes b1 or prefill, not %s\n", only.c_str());
    return 1;
  }
  std::printf("device: %s\n", kernels::cuda_device_description(0).c_str());

  RandomModelSpec spec;
  spec.vocab_size = 32000;
  spec.hidden_size = 2048;
  spec.intermediate_size = 8192;
  spec.num_layers = 16;
  spec.num_heads = 32;
  spec.num_kv_heads = 8;
  spec.max_position_embeddings = kMaxModelLen;
  spec.dtype = DType::kBF16;
  if (!std::filesystem::exists(dir / "model.safetensors")) {
    const double t = now_s();
    BENCH_CHECK(write_random_model(dir, spec));
    std::printf("generated %.2fB-parameter model in %s (%.1f s)\n", spec.num_parameters() / 1e9,
                dir.c_str(), now_s() - t);
  }
  auto config = load_model_config(dir);
  BENCH_CHECK(config.status());
  auto weights = WeightStore::open(dir);
  BENCH_CHECK(weights.status());

  // Copy bandwidth first, before the executor takes most of the memory.
  double copy_gbps = 0;
  {
    const size_t bytes = size_t{1} << 30;
    auto a = kc::DeviceBuffer::allocate(bytes);
    auto b = kc::DeviceBuffer::allocate(bytes);
    BENCH_CHECK(a.status());
    BENCH_CHECK(b.status());
    BENCH_CHECK(a->zero());
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int i = 0; i < 3; ++i) cudaMemcpy(b->data(), a->data(), bytes, cudaMemcpyDeviceToDevice);
    const int iters = 20;
    cudaEventRecord(start);
    for (int i = 0; i < iters; ++i) cudaMemcpyAsync(b->data(), a->data(), bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    BENCH_CHECK(kc::cuda_check(cudaEventSynchronize(stop), "copy bandwidth"));
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    copy_gbps = 2.0 * static_cast<double>(bytes) * iters / (ms * 1e-3) / 1e9;
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  std::printf("d2d_copy_GBps: %.1f\n", copy_gbps);

  CudaExecutorOptions options;
  options.block_size = kBlockSize;
  options.max_num_batched_tokens = 8192;
  options.max_num_seqs = 256;
  options.max_model_len = kMaxModelLen;
  // Half the free memory for the KV pool, except under --only: a profiler replaying kernels
  // saves and restores the memory they may touch, and a 68 GiB pool made that take minutes.
  options.kv_memory_fraction = only.empty() ? 0.5 : 0.02;
  options.tensor_core_prefill = tensor_core_prefill;
  options.decode_gemv = decode_gemv;
  auto ex_or = CudaExecutor::create(*config, *weights, options);
  BENCH_CHECK(ex_or.status());
  CudaExecutor& ex = **ex_or;
  const int64_t vocab = config->vocab_size;
  const double model_bytes = static_cast<double>(ex.memory_plan().weight_bytes);
  if (only.empty() && ex.num_kv_blocks() < 256 * kBlocksPerSeq) {
    std::fprintf(stderr, "gpu_bench: %lld KV blocks, %d needed\n",
                 static_cast<long long>(ex.num_kv_blocks()), 256 * kBlocksPerSeq);
    return 1;
  }

  if (only == "b1") {
    BENCH_CHECK(prefill(ex, 1, 128, vocab, 8192));
    return decode(ex, 1, 128, 24, 4, vocab).ok() ? 0 : 1;
  }
  if (only == "prefill") {
    StepPlan pre;
    pre.sample_candidates = 1;
    for (int s = 0; s < 8; ++s) pre.chunks.push_back(chunk(s, 0, 1024, vocab, LogitsWanted::kLast));
    for (int r = 0; r < 2; ++r) BENCH_CHECK(ex.execute(pre).status());
    return 0;
  }

  // Batch-1 decode.
  BENCH_CHECK(prefill(ex, 1, 128, vocab, 8192));
  const int b1_steps = 256, b1_warmup = 16;
  auto b1 = decode(ex, 1, 128, b1_steps, b1_warmup, vocab);
  BENCH_CHECK(b1.status());
  const double b1_tok_s = (b1_steps - b1_warmup) / *b1;
  const double fraction = model_bytes * b1_tok_s / (copy_gbps * 1e9);
  std::printf("decode_b1_tok_s: %.1f\n", b1_tok_s);
  std::printf("decode_b1_bw_fraction: %.3f (model %.2f GB x %.1f tok/s / %.1f GB/s)\n", fraction,
              model_bytes / 1e9, b1_tok_s, copy_gbps);

  // Prefill: 8 x 1024 tokens in one step.
  StepPlan pre;
  pre.sample_candidates = 1;  // argmax tokens
  for (int s = 0; s < 8; ++s) pre.chunks.push_back(chunk(s, 0, 1024, vocab, LogitsWanted::kLast));
  BENCH_CHECK(ex.execute(pre).status());
  const int reps = 5;
  double t = now_s();
  for (int r = 0; r < reps; ++r) BENCH_CHECK(ex.execute(pre).status());
  const double prefill_tok_s = 8.0 * 1024 * reps / (now_s() - t);
  std::printf("prefill_tok_s: %.0f\n", prefill_tok_s);

  double batch_tok_s[2] = {0, 0};
  const int batches[2] = {64, 256};
  for (int i = 0; i < 2; ++i) {
    BENCH_CHECK(prefill(ex, batches[i], 128, vocab, 8192));
    const int steps = 96, warmup = 8;
    auto secs = decode(ex, batches[i], 128, steps, warmup, vocab);
    BENCH_CHECK(secs.status());
    batch_tok_s[i] = static_cast<double>(batches[i]) * (steps - warmup) / *secs;
    std::printf("decode_b%d_tok_s: %.0f\n", batches[i], batch_tok_s[i]);
  }
  const CudaExecutorStats st = ex.stats();
  std::printf("executor: %lld eager steps, %lld graph replays, %lld graphs captured, %lld failed\n",
              static_cast<long long>(st.eager_steps), static_cast<long long>(st.graph_replays),
              static_cast<long long>(st.graphs_captured), static_cast<long long>(st.graph_failures));
  std::printf(
      "{\"device\": \"%s\", \"model_params\": %lld, \"model_bytes\": %.0f, \"d2d_copy_GBps\": %.1f, "
      "\"decode_b1_tok_s\": %.1f, \"decode_b1_bw_fraction\": %.3f, \"prefill_tok_s\": %.0f, "
      "\"decode_b64_tok_s\": %.0f, \"decode_b256_tok_s\": %.0f, \"graph_replays\": %lld}\n",
      kernels::cuda_device_description(0).c_str(), static_cast<long long>(spec.num_parameters()),
      model_bytes, copy_gbps, b1_tok_s, fraction, prefill_tok_s, batch_tok_s[0], batch_tok_s[1],
      static_cast<long long>(st.graph_replays));
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::run(argc, argv); }
