// Internal to src/engine/cuda: the device state of a CudaExecutor and the forward pass it
// enqueues. Not a public header.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/cuda/cuda_executor.h"
#include "engine/cuda/cuda_weights.h"
#include "parallel/communicator.h"
#include "weft/kernels/cuda/device_buffer.h"
#include "weft/kernels/cuda/gemm.h"
#include "weft/kernels/cuda/sampling.h"

namespace weft {

// Byte offsets of the per-step metadata inside one device block (and its pinned host twin), so
// one copy moves all of it and CUDA graphs see fixed addresses. Ordered so the used prefix of the
// block tables ends the copied range.
struct MetadataLayout {
  int64_t query_start = 0;   // I32 [max_seqs + 1]
  int64_t context_len = 0;   // I32 [max_seqs]
  int64_t logit_rows = 0;    // I32 [max_tokens]
  int64_t token_ids = 0;     // I32 [max_tokens]
  int64_t positions = 0;     // I32 [max_tokens]
  int64_t slots = 0;         // I64 [max_tokens]
  int64_t block_tables = 0;  // I32 [max_seqs, table_stride]
  int64_t total_bytes = 0;
};

// What the host knows about one forward pass: sizes the kernels' grids and the GEMMs.
struct StepShape {
  int64_t num_tokens = 0;
  int num_seqs = 0;
  int max_query_len = 0;
  int max_context_len = 0;
  bool decode = false;         // every sequence has one query token
  bool identity_rows = false;  // logit row r is token row r (decode steps)
};

// A plan's metadata as staged on the device (CudaExecutor::State::stage_metadata).
struct StagedStep {
  StepShape shape;          // as run: a graph step is padded to its batch and context buckets
  int64_t logit_rows = 0;   // the plan's logits rows
  bool use_graph = false;
  std::pair<int, int> graph_key{0, 0};  // (batch bucket, context bucket)
  int head_rows = 0;        // rows a graph step's head computes (its batch bucket)
};

struct CudaExecutor::State {
  ~State();

  ModelConfig config;
  CudaExecutorOptions options;
  // This rank's part of the model (the default: all of it) and its tensor-parallel group over
  // device tensors (null when the group is this rank alone). The activation sizes below are the
  // rank's: its heads, KV heads and intermediate columns (model/layers/layer_shards.h), its
  // vocabulary shard and its stage's layers.
  CudaRankShare share;
  Communicator* tp = nullptr;
  int local_heads = 0;
  int local_kv_heads = 0;
  int64_t local_intermediate = 0;
  DType dtype = DType::kBF16;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;  // the F32-output LM head GEMM
  std::unique_ptr<kernels::cuda::CublasGemm> gemm;
  CudaModelWeights weights;

  int64_t max_tokens = 0;
  int max_seqs = 0;
  int64_t max_logit_rows = 0;
  int table_stride = 0;  // blocks per sequence in the block-table array
  int64_t num_blocks = 0;
  DeviceMemoryPlan plan;
  ActivationLayout act;
  MetadataLayout meta;
  kernels::cuda::DeviceBuffer workspace;
  kernels::cuda::DeviceBuffer metadata;
  kernels::cuda::DeviceBuffer kv_pool;
  kernels::cuda::DeviceBuffer cublas_workspace;
  kernels::cuda::DeviceBuffer inv_freq;  // F32 [head_dim / 2]
  void* host_metadata = nullptr;  // pinned, meta.total_bytes
  int64_t kv_layer_bytes = 0;     // one layer's K (or V) tensor
  int64_t decode_workspace_bytes = 0;  // at act.decode_attention
  float attention_scaling = 1.0f;

  // CUDA graphs by (batch bucket, context bucket); `seen` marks buckets already run eagerly.
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs;
  std::map<std::pair<int, int>, bool> seen;
  // Buckets whose capture or instantiation failed once: they run eagerly from then on.
  std::map<std::pair<int, int>, bool> graph_failed;
  CudaExecutorStats stats;
  std::deque<StepOutput> done;

  char* ws(int64_t offset) const { return workspace.as<char>() + offset; }
  template <typename T>
  T* md(int64_t offset) const {
    return reinterpret_cast<T*>(metadata.as<char>() + offset);
  }
  void* k_cache(int layer) const { return kv_pool.as<char>() + 2 * layer * kv_layer_bytes; }
  void* v_cache(int layer) const { return kv_pool.as<char>() + (2 * layer + 1) * kv_layer_bytes; }

  // Enqueues the embedding of the step's tokens into `residual`: each rank its vocabulary
  // shard's rows, summed over the TP group. (cuda_forward.cpp)
  absl::Status enqueue_embedding(const StepShape& shape);
  // Enqueues this rank's layers over `residual` (each row-parallel product summed over the TP
  // group); the stage's output residual stream is left in `residual`. (cuda_forward.cpp)
  absl::Status enqueue_layers(const StepShape& shape);
  // Enqueues final norm + LM head for logit rows [row_begin, row_begin + rows) of the step (the
  // rows named by the metadata's logit_rows, or token rows directly when identity_rows), leaving
  // F32 logits [rows, vocab_rows] of this rank's vocabulary shard in `logits` and, when `greedy`
  // (a whole vocabulary: tp 1), the argmax ids in `tokens_out`.
  absl::Status enqueue_head(const StepShape& shape, int64_t row_begin, int64_t rows, bool greedy);
  // Checks `plan` against the capacities (tokens, sequences, block tables), packs its metadata
  // into the pinned block and queues the copy to the device. With `allow_graph`, a decode step
  // that a CUDA graph serves is padded to its buckets. (cuda_executor.cpp)
  absl::StatusOr<StagedStep> stage_metadata(const StepPlan& plan, bool allow_graph);
  // Captures the embedding, the layers and a greedy enqueue_head of `rows` rows into an instantiated graph.
  // On failure nothing is left behind (no graph, no pending CUDA error). (cuda_executor.cpp)
  absl::StatusOr<cudaGraphExec_t> capture_graph(const StepShape& shape, int64_t rows);
};

// Checks that the CUDA path implements `config` (refusals name what it lacks), plans the rank's
// device memory, uploads its share of the weights and allocates its KV pool and workspace on
// options.device. The TP communicator is the caller's to set. (cuda_executor.cpp)
absl::StatusOr<std::unique_ptr<CudaExecutor::State>> create_cuda_state(const ModelConfig& config,
                                                                       const WeightStore& weights,
                                                                       const CudaExecutorOptions& options,
                                                                       const CudaRankShare& share);

}  // namespace weft
