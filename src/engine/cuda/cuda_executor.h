// The StepExecutor of one process running the whole model on one CUDA GPU (tp = pp = 1).
//
// Per step, on one explicit stream: the plan's metadata (token ids, positions, KV slots, query
// starts, context lengths, block tables, logit rows) is packed on the host into pinned memory and
// copied to fixed device addresses with one cudaMemcpyAsync; then embedding -> per layer
// [RMSNorm (fused with the residual add), QKV GEMM (+bias), q/k norm (Qwen3), RoPE + KV-cache
// write, paged attention (decode kernel when every chunk is one token, prefill kernel otherwise),
// o_proj GEMM, fused residual + RMSNorm, gate/up GEMM, SwiGLU, down GEMM] -> final norm of only
// the logit rows -> LM head GEMM (F32 logits) -> for sample_candidates == 1 plans without candidate_logsumexp the argmax on the
// GPU (sample_tokens with temperature 0) and a copy of one id per row; otherwise a copy of the
// wanted logits rows to the host so the CPU Sampler keeps working unchanged.
//
// GPU sampling: kernels::cuda::sample_tokens implements the whole CPU sampler (penalties, top-k/p,
// min-p, Philox draws) and count_output_tokens keeps penalty counts on the device. Wiring it needs
// the engine to hand per-sequence SamplingRowParams (and penalty state) to the executor with the
// plan instead of sampling returned logits; until then only greedy plans stay on the GPU.
//
// Decode-only steps of at most kGraphBatchBuckets.back() sequences replay a CUDA graph captured
// per (batch bucket, context bucket): the batch is padded up to the bucket (padded rows write no
// KV and their outputs are dropped) and the decode kernel is sized for the context bucket. A
// bucket is first run eagerly (so cuBLASLt has chosen its algorithms), captured the second time
// it is seen, and replayed from then on.
//
// Memory: see device_memory_plan.h; the plan is computed before allocating and printed to stderr
// at creation. The KV cache is in the compute dtype (BF16 or F16).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "engine/cuda/device_memory_plan.h"
#include "engine/step_executor.h"
#include "model/model_config.h"
#include "model/weight_store.h"

namespace weft {

inline constexpr int kGraphBatchBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

struct CudaExecutorOptions {
  int device = 0;
  int block_size = 16;
  int64_t max_num_batched_tokens = 2048;  // tokens of the largest step
  int max_num_seqs = 64;                  // sequences of the largest step
  int64_t max_model_len = 0;              // 0: config.max_position_embeddings
  double kv_memory_fraction = 0;          // > 0: of the free memory after weights + workspace
  int64_t kv_memory_bytes = int64_t{1} << 30;  // otherwise this budget
  int64_t max_kv_blocks = 0;                   // > 0: cap
  std::optional<DType> kv_dtype;  // must be the compute dtype when given (the kernels write it)
  bool cuda_graphs = true;
  // Kernel choices: tensor-core prefill attention (else the SIMT kernel, kept to compare and as
  // a fallback); weft's gemv for decode-shaped products instead of cuBLAS (opt-in: on an H200 it
  // measured 855-907 batch-1 tok/s against cuBLAS's 911-933, see kernels/cuda/gemv.cu).
  bool tensor_core_prefill = true;
  bool decode_gemv = false;
  bool print_plan = true;  // the memory plan to stderr at creation
};

struct CudaExecutorStats {
  int64_t eager_steps = 0;
  int64_t graph_replays = 0;
  int64_t graphs_captured = 0;
  int64_t graph_failures = 0;  // buckets whose capture failed; they run eagerly
};

class CudaExecutor final : public StepExecutor {
 public:
  // Selects `options.device`, plans memory, uploads the weights and allocates the KV pool and
  // workspace. Errors: FailedPrecondition naming --device when no GPU is visible;
  // InvalidArgument for an unsupported kv dtype (naming --kv-cache-dtype) or model shape;
  // ResourceExhausted from the memory plan; Internal for a failed CUDA call.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> create(const ModelConfig& config,
                                                              const WeightStore& weights,
                                                              const CudaExecutorOptions& options);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  // Runs the plan to completion (the result is waited for). Block ids must lie in
  // [0, num_kv_blocks()). InvalidArgument when the plan exceeds max_num_batched_tokens,
  // the sequence capacity or the block-table capacity (max_model_len / block_size).
  absl::Status submit(const StepPlan& plan) override;
  absl::StatusOr<StepOutput> collect() override;

  int64_t num_kv_blocks() const;
  int block_size() const;
  DType compute_dtype() const;
  const DeviceMemoryPlan& memory_plan() const;
  CudaExecutorStats stats() const;

  struct State;

 private:
  explicit CudaExecutor(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace weft
