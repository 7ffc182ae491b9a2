// CPU kernel benchmarks (Google Benchmark): linear as GEMV (m = 1, bound by reading the weights)
// and GEMM (m = 16, 128, bound by arithmetic) at Llama-100M-like shapes, paged attention
// decode, and the sampler's rows (a decode step's batch drawn at a temperature). Counters: bytes_per_second counts weight bytes (+ x and y), FLOP/s counts 2*m*n*k.
//   kernels_bench [--threads=N] [--isa=native|avx512-noamx|avx512-novnni|avx2|portable] [google benchmark flags]
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <cstring>
#include <iterator>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/half.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "sampling/sampler.h"
#include "weft/kernels/attention.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/cpu_isa.h"
#include "weft/kernels/linear.h"

namespace weft::kernels {
namespace {

int g_threads = 0;

ThreadPool& pool() {
  static ThreadPool p(g_threads);
  return p;
}

void fill_random(const Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = dist(rng);
    switch (t.dtype()) {
      case DType::kF32:
        t.data_as<float>()[i] = v;
        break;
      case DType::kBF16:
        t.data_as<uint16_t>()[i] = float_to_bf16(v);
        break;
      default:
        t.data_as<uint16_t>()[i] = float_to_f16(v);
        break;
    }
  }
}

// Args: m, n, k, dtype (0 = F32, 1 = F16, 2 = BF16, 3 = BF16 with --matmul-precision bf16:
// BF16-rounded activations through AVX512-BF16 where the CPU has it).
void BM_Linear(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const DType dt = state.range(3) == 0   ? DType::kF32
                   : state.range(3) == 1 ? DType::kF16
                                         : DType::kBF16;
  set_matmul_precision(state.range(3) == 3 ? MatmulPrecision::kBf16 : MatmulPrecision::kF32);
  Tensor x = Tensor::zeros(DType::kF32, {m, k});
  Tensor w = Tensor::zeros(dt, {n, k});
  Tensor y = Tensor::zeros(DType::kF32, {m, n});
  fill_random(x, 1);
  fill_random(w, 2);
  for (auto _ : state) {
    linear(x, w, nullptr, y, pool());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(w.nbytes() + x.nbytes() + y.nbytes()));
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(2 * m * n * k) * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dt)) + " " + std::string(cpu_kernel_isa()) +
                 (linear_uses_bf16_activations(dt) ? " bf16-activations" : ""));
  set_matmul_precision(MatmulPrecision::kF32);
}

void LinearArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "dtype"});
  for (int64_t dt : {3, 2, 0}) {
    for (int64_t m : {1, 16, 128}) {
      for (int64_t n : {768, 2048, 32000}) b->Args({m, n, 768, dt});
    }
  }
  b->Args({1, 2048, 768, 1});
  // The default model's shapes (hidden 256, MLP 768, vocabulary 4096) at 1, 4, 5 and 6 rows: a
  // decode step and speculative verifications of 3 to 5 guesses, where per-call costs and short
  // dot products weigh most.
  for (int64_t m : {1, 4, 5, 6}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 256}, {256, 768}, {4096, 256}}) b->Args({m, n, k, 3});
  }
  // The default draft's (hidden 128, MLP 384): one token, where the per-call costs are most of it.
  for (auto [n, k] : {std::pair<int64_t, int64_t>{256, 128}, {128, 128}, {768, 128}, {128, 384}, {4096, 128}}) {
    b->Args({1, n, k, 3});
  }
  b->UseRealTime();
}
BENCHMARK(BM_Linear)->Apply(LinearArgs);

// Block-quantized weights (linear_block_quantized with --matmul-precision int8: int8
// activations per 16, integer dot products). Args: m, n, k, dtype index into kBenchBlockDTypes,
// copies: distinct weight tensors cycled through, one per iteration (copies > 1 so their total
// exceeds the last-level cache: the weights then stream from memory as a decode step's do).
// bytes_per_second counts the weight bytes only: the GEMV (m = 1) figure to set against memory
// bandwidth.
constexpr DType kBenchBlockDTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                                       DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                                       DType::kI4G64, DType::kI4G128, DType::kI4G128F};

void run_linear_block(benchmark::State& state, MatmulPrecision precision) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const DType dt = kBenchBlockDTypes[state.range(3)];
  const int64_t copies = state.range(4);
  set_matmul_precision(precision);
  Tensor x = Tensor::zeros(DType::kF32, {m, k});
  Tensor dense = Tensor::zeros(DType::kF32, {n, k});
  fill_random(x, 1);
  std::vector<Tensor> ws;
  for (int64_t c = 0; c < copies; ++c) {
    fill_random(dense, 2 + static_cast<uint32_t>(c));
    ws.push_back(quantize_rows(dense.view(), dt, false, pool()));
  }
  Tensor y = Tensor::zeros(DType::kF32, {m, n});
  size_t next = 0;
  for (auto _ : state) {
    linear(x, ws[next], nullptr, y, pool());
    next = (next + 1) % ws.size();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_matmul_precision(MatmulPrecision::kF32);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(ws[0].nbytes()));
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(2 * m * n * k) * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dt)) + " " + std::string(cpu_kernel_isa()) +
                 (cpu_features().avx512vnni && cpu_kernel_isa() == "avx512" ? " vnni" : ""));
}

void LinearBlockArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "dtype", "copies"});
  for (int64_t dt = 0; dt < static_cast<int64_t>(std::size(kBenchBlockDTypes)); ++dt) {
    for (int64_t m : {1, 16, 128}) b->Args({m, 2048, 768, dt, 1});
    b->Args({1, 2048, 2048, dt, 96});  // about 240-400 MB: streamed from memory
    b->Args({1, 2048, 2048, dt, 1});   // the same in the last-level cache: the compute side
  }
  b->UseRealTime();
}
// The int8-activation kernels (MatmulPrecision::kInt8, llama.cpp's way).
void BM_LinearBlock(benchmark::State& state) { run_linear_block(state, MatmulPrecision::kInt8); }
BENCHMARK(BM_LinearBlock)->Apply(LinearBlockArgs);
// The exact product, the default for block-quantized weights (each row dequantized to F32, then
// F32 dot products): the same shapes.
void BM_LinearBlockExact(benchmark::State& state) { run_linear_block(state, MatmulPrecision::kF32); }
BENCHMARK(BM_LinearBlockExact)->Apply(LinearBlockArgs);

// FP8 checkpoints' weights: F8B64 (e4m3 + an F32 scale per 64, linear_f8) against the same
// weights dequantized to F32 (how FP8 checkpoints were held before) and BF16. Args: m, n, k,
// dtype (0 = F8B64, 1 = F32, 2 = BF16), copies: distinct weight tensors cycled through, one per
// iteration (copies > 1 so their total exceeds the last-level cache: the weights then stream
// from memory as a decode step's do). bytes_per_second counts the weight bytes only.
void BM_LinearFp8(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const DType dt = state.range(3) == 0 ? DType::kF8B64 : state.range(3) == 1 ? DType::kF32 : DType::kBF16;
  const int64_t copies = state.range(4);
  Tensor x = Tensor::zeros(DType::kF32, {m, k});
  fill_random(x, 1);
  std::vector<Tensor> ws;
  for (int64_t c = 0; c < copies; ++c) {
    Tensor w = Tensor::zeros(dt, {n, k});
    if (dt == DType::kF8B64) {
      std::mt19937 rng(2 + static_cast<uint32_t>(c));
      uint8_t* b = static_cast<uint8_t*>(w.data());
      for (int64_t blk = 0; blk < n * k / 64; ++blk, b += 68) {
        const float s = 1e-3f;
        std::memcpy(b, &s, 4);
        for (int t = 0; t < 64; ++t) b[4 + t] = static_cast<uint8_t>(rng() % 0x7E);  // no NaN
      }
    } else {
      fill_random(w, 2 + static_cast<uint32_t>(c));
    }
    ws.push_back(std::move(w));
  }
  Tensor y = Tensor::zeros(DType::kF32, {m, n});
  size_t next = 0;
  for (auto _ : state) {
    linear(x, ws[next], nullptr, y, pool());
    next = (next + 1) % ws.size();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(ws[0].nbytes()));
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(2 * m * n * k) * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dt)) + " " + std::string(cpu_kernel_isa()));
}

void LinearFp8Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "dtype", "copies"});
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{576, 1536}, {1536, 576}, {4096, 4096}}) {
    for (int64_t m : {1, 16}) {
      for (int64_t dt : {0, 1, 2}) b->Args({m, n, k, dt, 1});
    }
  }
  // 16 x 4096 x 4096: 272 MB in F8B64, 1 GB in F32, past a 260 MB L3.
  for (int64_t dt : {0, 1, 2}) b->Args({1, 4096, 4096, dt, 16});
  b->UseRealTime();
}
BENCHMARK(BM_LinearFp8)->Apply(LinearFp8Args);

// Decode step: `seqs` sequences of one query each over `context` cached tokens.
// Args: seqs, context, dtype (0 F32, 1 F16, 2 BF16), kv heads (three query heads each, head_dim
// 64): 4 is Llama-100M-like (12 query heads), 3 is SmolLM2-135M (9 query heads).
void BM_PagedAttentionDecode(benchmark::State& state) {
  const int seqs = static_cast<int>(state.range(0));
  const int context = static_cast<int>(state.range(1));
  const DType dt = state.range(2) == 0 ? DType::kF32 : state.range(2) == 1 ? DType::kF16 : DType::kBF16;
  const int64_t kv_heads = state.range(3), heads = 3 * kv_heads, d = 64, bs = 16;
  const int blocks_per_seq = (context + bs - 1) / bs;
  const int num_blocks = seqs * blocks_per_seq;
  Tensor kc = Tensor::zeros(dt, {num_blocks, bs, kv_heads, d});
  Tensor vc = Tensor::zeros(dt, {num_blocks, bs, kv_heads, d});
  fill_random(kc, 3);
  fill_random(vc, 4);
  Tensor q = Tensor::zeros(DType::kF32, {seqs, heads, d});
  Tensor out = Tensor::zeros(DType::kF32, {seqs, heads, d});
  fill_random(q, 5);
  std::vector<int32_t> tables(static_cast<size_t>(num_blocks));
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), std::mt19937(6));
  std::vector<int32_t> qstart(seqs + 1), ctx(seqs, context);
  std::iota(qstart.begin(), qstart.end(), 0);
  AttentionBatch batch;
  batch.num_seqs = seqs;
  batch.query_start = qstart.data();
  batch.context_len = ctx.data();
  batch.block_tables = tables.data();
  batch.max_blocks_per_seq = blocks_per_seq;
  batch.block_size = static_cast<int>(bs);
  for (auto _ : state) {
    paged_attention(q, kc, vc, batch, 0.125f, out, pool());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kc.nbytes() + vc.nbytes()));
  state.counters["FLOP/s"] = benchmark::Counter(
      4.0 * seqs * heads * context * d * state.iterations(), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dt)) + " " + std::string(cpu_kernel_isa()));
}
BENCHMARK(BM_PagedAttentionDecode)
    ->ArgNames({"seqs", "context", "dtype", "kv_heads"})
    ->Args({1, 1024, 2, 4})
    ->Args({8, 1024, 2, 4})
    ->Args({8, 1024, 0, 4})
    ->Args({32, 512, 2, 4})
    ->Args({1, 65536, 2, 4})  // one long context: its 64 MiB of K/V are past the caches
    ->Args({1, 160, 1, 3})    // the peer harness's decode: SmolLM2, a 128-token prompt, f16 KV
    ->Args({16, 160, 1, 3})
    ->Args({16, 2048, 1, 3})  // 16 x 2048: 25 MB of K/V per layer, past the caches
    ->UseRealTime();

// One parallel_for hand-off: a job of one tiny chunk per thread, back to back, as the
// forward pass issues them (a decode step is a few hundred). Args: spin microseconds (0: the
// workers sleep after every job and are woken through the kernel).
void BM_ParallelForHandoff(benchmark::State& state) {
  ThreadPool handoff_pool(g_threads, std::chrono::microseconds(state.range(0)));
  std::vector<int64_t> sink(static_cast<size_t>(handoff_pool.num_threads()) * 16, 0);
  const std::function<void(int64_t, int64_t)> job = [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++sink[static_cast<size_t>(i) * 16];
  };
  for (auto _ : state) {
    handoff_pool.parallel_for(handoff_pool.num_threads(), job);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::to_string(handoff_pool.num_threads()) + " threads");
}
BENCHMARK(BM_ParallelForHandoff)->ArgName("spin_us")->Arg(0)->Arg(200)->UseRealTime();

// Args: rows, vocab, top_p in percent. Temperature 0.8; top_p 100 is the dense path (every token
// weighed, the draw scans the row) that a chat client's default sampling takes, below 100 the
// nucleus cut (the default model at 4096 tokens, as speculative_bench samples).
void BM_SampleRows(benchmark::State& state) {
  const int64_t rows = state.range(0), vocab = state.range(1);
  Tensor logits = Tensor::empty(DType::kF32, Shape{rows, vocab});
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int64_t i = 0; i < logits.numel(); ++i) logits.data_as<float>()[i] = dist(rng);
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_p = static_cast<float>(state.range(2)) / 100.0f;
  std::vector<std::vector<int32_t>> outputs(static_cast<size_t>(rows));
  std::vector<SequenceSamplingState> states(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    states[r].params = &params;
    states[r].seed = 7;
    states[r].seq_index = static_cast<uint32_t>(r);
    states[r].output_ids = outputs[r];
  }
  Sampler sampler;
  for (auto _ : state) {
    auto drawn = sampler.sample(logits.view(), states, pool());
    benchmark::DoNotOptimize(drawn);
  }
  state.SetItemsProcessed(state.iterations() * rows);
}
BENCHMARK(BM_SampleRows)
    ->ArgNames({"rows", "vocab", "top_p"})
    ->Args({64, 49152, 100})
    ->Args({1, 151936, 100})
    ->Args({1, 4096, 95})
    ->Args({1, 151936, 95})
    ->UseRealTime();

}  // namespace
}  // namespace weft::kernels

int main(int argc, char** argv) {
  // Our flags first; the rest go to Google Benchmark.
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      weft::kernels::g_threads = std::atoi(argv[i] + 10);
    } else if (std::strncmp(argv[i], "--isa=", 6) == 0) {
      const absl::Status s = weft::limit_cpu_features(argv[i] + 6);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
        return 2;
      }
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::AddCustomContext("cpu_features", weft::cpu_features().to_string());
  benchmark::AddCustomContext("kernel_isa", std::string(weft::kernels::cpu_kernel_isa()));
  benchmark::AddCustomContext("threads", std::to_string(weft::kernels::pool().num_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
