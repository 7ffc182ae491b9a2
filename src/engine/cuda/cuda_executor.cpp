#include "engine/cuda/cuda_executor.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/cuda/cuda_executor_state.h"
#include "engine/model_runner.h"
#include "model/rope.h"
#include "weft/kernels/cuda/paged_attention.h"
#include "weft/kernels/cuda_device.h"

namespace weft {
namespace {

namespace kc = kernels::cuda;
using kc::cuda_check;

constexpr int kLargestGraphBatch = kGraphBatchBuckets[std::size(kGraphBatchBuckets) - 1];
// Left free for the CUDA context's own allocations, cuBLAS internals and graph instantiation.
constexpr int64_t kReserveBytes = int64_t{512} << 20;
// Logits rows computed at once; a step wanting more (scoring every prompt position) runs the
// head in chunks of this many rows.
constexpr int64_t kLogitChunkRows = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

MetadataLayout plan_metadata(int64_t max_tokens, int max_seqs, int table_stride) {
  MetadataLayout m;
  int64_t at = 0;
  auto take = [&at](int64_t bytes) {
    const int64_t offset = at;
    at += align_device_bytes(bytes);
    return offset;
  };
  m.query_start = take((max_seqs + 1) * 4);
  m.context_len = take(max_seqs * 4);
  m.logit_rows = take(max_tokens * 4);
  m.token_ids = take(max_tokens * 4);
  m.positions = take(max_tokens * 4);
  m.slots = take(max_tokens * 8);
  m.block_tables = take(static_cast<int64_t>(max_seqs) * table_stride * 4);
  m.total_bytes = at;
  return m;
}

// The smallest graph bucket holding n sequences (n <= kLargestGraphBatch).
int batch_bucket(int n) {
  for (int b : kGraphBatchBuckets) {
    if (n <= b) return b;
  }
  return kLargestGraphBatch;
}

}  // namespace

absl::StatusOr<cudaGraphExec_t> CudaExecutor::State::capture_graph(const StepShape& shape,
                                                                   int64_t rows) {
  cudaGraph_t graph = nullptr;
  WEFT_RETURN_IF_ERROR(
      cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "graph capture begin"));
  absl::Status captured = enqueue_embedding(shape);
  if (captured.ok()) captured = enqueue_layers(shape);
  if (captured.ok()) captured = enqueue_head(shape, 0, rows, /*greedy=*/true);
  // End the capture whatever happened, so the stream is usable again, and clear the error the
  // failed capture left (it is not sticky) so the eager run that follows starts clean.
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (captured.ok()) captured = cuda_check(end, "graph capture end");
  cudaGraphExec_t exec = nullptr;
  if (captured.ok()) captured = cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (!captured.ok()) {
    cudaGetLastError();
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    return captured;
  }
  return exec;
}

CudaExecutor::State::~State() {
  for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
  if (host_metadata != nullptr) cudaFreeHost(host_metadata);
  gemm.reset();
  if (cublas != nullptr) cublasDestroy(cublas);
  // Device buffers free themselves; the stream goes last (nothing may still run on it).
  if (stream != nullptr) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
}

CudaExecutor::CudaExecutor(std::unique_ptr<State> state) : s_(std::move(state)) {}
CudaExecutor::~CudaExecutor() = default;

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::create(
    const ModelConfig& config, const WeightStore& weights, const CudaExecutorOptions& options) {
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<State> s, create_cuda_state(config, weights, options, CudaRankShare{}));
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(s)));
}

absl::StatusOr<std::unique_ptr<CudaExecutor::State>> create_cuda_state(const ModelConfig& config,
                                                                       const WeightStore& weights,
                                                                       const CudaExecutorOptions& options,
                                                                       const CudaRankShare& share) {
  using State = CudaExecutor::State;
  // What the CUDA path does not implement yet is refused by name rather than computed wrong:
  // Phi3's fused checkpoint tensors, partial rotary, mixtures of experts, longrope, and (below)
  // sliding windows.
  if (config.fused_qkv_proj || config.fused_gate_up_proj) {
    return absl::UnimplementedError(absl::StrCat(
        "--device cuda: ", config.architecture, "'s fused qkv_proj / gate_up_proj checkpoint tensors are "
        "not loaded by the CUDA executor yet; use --device cpu"));
  }
  if (config.rotary_dim != config.head_dim) {
    return absl::UnimplementedError(absl::StrCat("--device cuda: partial rotary embeddings (rotary_dim ",
                                                 config.rotary_dim, " of head_dim ", config.head_dim,
                                                 ") are not implemented on the GPU yet; use --device cpu"));
  }
  if (config.moe.enabled()) {
    return absl::UnimplementedError(absl::StrCat(
        "--device cuda: ", config.architecture, " is a mixture of experts (", config.moe.num_experts,
        " experts), which the CUDA executor does not run yet; use --device cpu"));
  }
  // Gemma 2 / 3: 1 + w and sandwich norms, GeGLU, scaled embeddings, the attention scale,
  // soft-capping and a second RoPE table have no CUDA kernels yet.
  if (config.norm_weight_plus_one || config.sandwich_norms ||
      config.mlp_activation != MlpActivation::kSilu || config.embedding_multiplier != 1.0f ||
      config.query_pre_attn_scalar || config.attn_logit_softcapping ||
      config.final_logit_softcapping || config.sliding_rope) {
    return absl::UnimplementedError(absl::StrCat(
        "--device cuda: ", config.architecture,
        " (Gemma norms, GeGLU, embedding scale, "
        "query_pre_attn_scalar, soft-capping, per-layer RoPE) is not implemented on the GPU yet; "
        "use --device cpu"));
  }
  if (config.rope_scaling.type == RopeScalingType::kLongRope) {
    return absl::UnimplementedError("--device cuda: longrope RoPE scaling is not implemented on the GPU yet; use --device cpu");
  }
  // The GPU RoPE kernel has one frequency table; dynamic NTK needs one per token length.
  if (config.rope_scaling.type == RopeScalingType::kDynamic) {
    return absl::UnimplementedError("--device cuda: dynamic RoPE scaling is not implemented on the GPU yet; use --device cpu");
  }
  // The GPU attention kernels attend over the whole causal context; running a windowed layer on
  // them would silently answer wrong from the first token past the window.
  for (size_t i = 0; i < config.layer_window.size(); ++i) {
    if (config.layer_window[i] > 0) {
      return absl::UnimplementedError(absl::StrCat(
          "--device cuda: layer ", i, " uses sliding-window attention (window ", config.layer_window[i],
          "), which the CUDA kernels do not implement yet; use --device cpu"));
    }
  }
  if (kernels::cuda_device_count() <= options.device) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device cuda: no CUDA GPU ", options.device, " is visible (", kernels::cuda_device_count(),
        " device(s)); use --device cpu"));
  }
  auto s = std::make_unique<State>();
  s->config = config;
  s->options = options;
  s->share = share;
  s->dtype = cuda_compute_dtype(config.torch_dtype);
  // The rank's heads, KV heads and intermediate columns, as its weights are cut.
  WEFT_ASSIGN_OR_RETURN(const CudaWeightLayout weight_layout, cuda_weight_layout(config, s->dtype, share));
  WEFT_ASSIGN_OR_RETURN(const AttentionShards attention, attention_shards(config, "", share.tp_rank, share.tp_size));
  s->local_heads = static_cast<int>(attention.q_rows.count / config.head_dim);
  s->local_kv_heads = static_cast<int>(attention.kv_rows.count / config.head_dim);
  s->local_intermediate = mlp_shards(config, "", share.tp_rank, share.tp_size).intermediate.count;
  const int64_t local_layers = weight_layout.end_layer - weight_layout.first_layer;
  if (options.kv_dtype && *options.kv_dtype != s->dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv-cache-dtype: the CUDA executor keeps the KV cache in the compute dtype ",
        dtype_name(s->dtype), ", got ", dtype_name(*options.kv_dtype)));
  }
  if (options.block_size < 1 || options.max_num_batched_tokens < 1 || options.max_num_seqs < 1) {
    return absl::InvalidArgumentError(
        "CUDA executor: block_size, max_num_batched_tokens and max_num_seqs must be positive");
  }
  if (config.torch_dtype == DType::kF32) {
    std::cerr << "weft: the model's weights are F32; the CUDA executor computes in BF16 "
                 "(weights rounded to BF16 on upload)\n";
  }
  WEFT_RETURN_IF_ERROR(cuda_check(cudaSetDevice(options.device), "cudaSetDevice"));
  WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                                  "cudaStreamCreateWithFlags"));

  // Sizes of the largest step: decode graphs pad up to their bucket, so those must fit too.
  const int64_t max_model_len =
      options.max_model_len > 0 ? options.max_model_len : default_max_model_len(config);
  // Only the buckets up to --max-num-seqs' own bucket are ever replayed, so the workspace (the
  // decode attention's partials above all) is sized for that bucket, not for the largest one.
  const int largest_bucket =
      options.cuda_graphs ? batch_bucket(std::min(options.max_num_seqs, kLargestGraphBatch)) : 1;
  s->max_seqs = std::max(options.max_num_seqs, largest_bucket);
  s->max_tokens = std::max<int64_t>(options.max_num_batched_tokens, s->max_seqs);
  s->max_logit_rows = std::max<int64_t>(kLogitChunkRows, largest_bucket);
  // +1: a block table may hold one block past max_model_len when a sequence ends on a boundary.
  s->table_stride = static_cast<int>(ceil_div(max_model_len, options.block_size) + 1);
  const int max_context = s->table_stride * options.block_size;

  ActivationShape shape;
  shape.max_tokens = s->max_tokens;
  shape.max_seqs = s->max_seqs;
  shape.max_logit_rows = s->max_logit_rows;
  shape.hidden = config.hidden_size;
  shape.num_heads = s->local_heads;
  shape.num_kv_heads = s->local_kv_heads;
  shape.head_dim = config.head_dim;
  shape.intermediate = s->local_intermediate;
  shape.vocab = weight_layout.vocab_rows;
  shape.act_bytes = static_cast<int64_t>(dtype_size(s->dtype));
  shape.decode_attention_bytes = static_cast<int64_t>(kc::paged_attention_decode_workspace_bytes(
      s->max_seqs, s->local_heads, static_cast<int>(config.head_dim), max_context));
  s->decode_workspace_bytes = shape.decode_attention_bytes;
  WEFT_ASSIGN_OR_RETURN(s->act, plan_activation_layout(shape));
  s->meta = plan_metadata(s->max_tokens, s->max_seqs, s->table_stride);

  size_t free_bytes = 0, total_bytes = 0;
  WEFT_RETURN_IF_ERROR(cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  DeviceMemoryRequest request;
  request.free_bytes = static_cast<int64_t>(free_bytes);
  request.weight_bytes = weight_layout.total_bytes;
  request.workspace_bytes = s->act.total_bytes + s->meta.total_bytes +
                            2 * static_cast<int64_t>(kc::CublasGemm::kDefaultWorkspaceBytes) +
                            static_cast<int64_t>(kc::CublasGemm::kBiasScratchBytes);
  request.reserve_bytes = kReserveBytes;
  request.kv_bytes_per_block = 2 * local_layers * options.block_size * s->local_kv_heads * config.head_dim *
                               static_cast<int64_t>(dtype_size(s->dtype));
  request.kv_memory_fraction = options.kv_memory_fraction;
  request.kv_memory_bytes = options.kv_memory_bytes;
  request.max_blocks = options.max_kv_blocks;
  request.min_blocks = 1;
  WEFT_ASSIGN_OR_RETURN(s->plan, plan_device_memory(request));
  if (options.print_plan) std::cerr << "weft: " << s->plan.describe();
  s->num_blocks = s->plan.kv_blocks;

  WEFT_ASSIGN_OR_RETURN(s->weights, upload_cuda_weights(weight_layout, weights, s->stream));
  WEFT_ASSIGN_OR_RETURN(s->workspace, kc::DeviceBuffer::allocate(s->act.total_bytes));
  WEFT_ASSIGN_OR_RETURN(s->metadata, kc::DeviceBuffer::allocate(s->meta.total_bytes));
  s->kv_layer_bytes = s->num_blocks * options.block_size * s->local_kv_heads * config.head_dim *
                      static_cast<int64_t>(dtype_size(s->dtype));
  WEFT_ASSIGN_OR_RETURN(s->kv_pool, kc::DeviceBuffer::allocate(s->plan.kv_bytes));
  WEFT_RETURN_IF_ERROR(cuda_check(cudaHostAlloc(&s->host_metadata, s->meta.total_bytes,
                                                cudaHostAllocDefault),
                                  "cudaHostAlloc (step metadata)"));
  WEFT_ASSIGN_OR_RETURN(s->gemm, kc::CublasGemm::create(s->stream));
  s->gemm->set_use_gemv(options.decode_gemv);

  // The LM head's own cuBLAS handle: F32 output (CublasGemm rounds to the activation dtype), a
  // fixed workspace so the call can be captured in a graph.
  if (cublasCreate(&s->cublas) != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError("cublasCreate failed (LM head)");
  }
  WEFT_ASSIGN_OR_RETURN(s->cublas_workspace,
                        kc::DeviceBuffer::allocate(kc::CublasGemm::kDefaultWorkspaceBytes));
  if (cublasSetStream(s->cublas, s->stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(s->cublas, s->cublas_workspace.data(), s->cublas_workspace.size()) !=
          CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError("cublasSetStream / cublasSetWorkspace failed (LM head)");
  }

  const std::vector<float> inv_freq = rope_inv_freq(config);
  s->attention_scaling = rope_attention_scaling(config);
  WEFT_ASSIGN_OR_RETURN(s->inv_freq, kc::DeviceBuffer::allocate(inv_freq.size() * sizeof(float)));
  WEFT_RETURN_IF_ERROR(s->inv_freq.copy_from_host(inv_freq.data(), inv_freq.size() * sizeof(float),
                                                  s->stream));
  return s;
}

absl::StatusOr<StagedStep> CudaExecutor::State::stage_metadata(const StepPlan& plan, bool allow_graph) {
  const int n = static_cast<int>(plan.chunks.size());
  if (!plan.record_attention.empty()) {
    return absl::UnimplementedError(
        "CUDA executor: recording attention weights (weft_debug) is not implemented on the GPU; use --device cpu");
  }
  if (plan.num_tokens() > max_tokens) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA executor: step of ", plan.num_tokens(),
                                                   " tokens exceeds --max-num-batched-tokens ",
                                                   max_tokens));
  }
  if (n > max_seqs) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA executor: step of ", n,
                                                   " sequences exceeds --max-num-seqs ", max_seqs));
  }
  WEFT_ASSIGN_OR_RETURN(ForwardBatch fb, build_forward_batch(plan, options.block_size, num_blocks));
  if (fb.max_blocks_per_seq > table_stride) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA executor: a block table of ", fb.max_blocks_per_seq, " blocks exceeds ",
        table_stride, " (--max-model-len / --block-size)"));
  }
  StepShape shape;
  shape.num_tokens = fb.num_tokens;
  shape.num_seqs = n;
  shape.decode = n > 0 && fb.num_tokens == n;
  for (int i = 0; i < n; ++i) {
    shape.max_query_len = std::max(shape.max_query_len, fb.query_start[i + 1] - fb.query_start[i]);
    shape.max_context_len = std::max(shape.max_context_len, fb.context_len[i]);
  }
  const int64_t logit_rows = static_cast<int64_t>(fb.logit_rows.size());
  bool identity = shape.decode && logit_rows == n;
  for (int64_t r = 0; identity && r < logit_rows; ++r) identity = fb.logit_rows[r] == r;
  shape.identity_rows = identity;
  const bool use_graph = allow_graph && options.cuda_graphs && identity && n <= kLargestGraphBatch;

  // Graph steps run a padded batch with the decode kernel sized for a power-of-two context bucket
  // (in partitions), so one graph serves every context up to it.
  int rows = n;
  std::pair<int, int> key{0, 0};
  if (use_graph) {
    rows = batch_bucket(n);
    int context = kc::kDecodePartitionSize;
    while (context < shape.max_context_len) context *= 2;
    context = std::min(context, table_stride * options.block_size);
    key = {rows, context};
    shape.num_tokens = rows;
    shape.num_seqs = rows;
    shape.max_query_len = 1;
    shape.max_context_len = context;
  }

  // Pack the metadata (padded rows: token 0 at position 0 writing no KV, context 1, block 0).
  char* host = static_cast<char*>(host_metadata);
  auto* query_start = reinterpret_cast<int32_t*>(host + meta.query_start);
  auto* context_len = reinterpret_cast<int32_t*>(host + meta.context_len);
  auto* rows_out = reinterpret_cast<int32_t*>(host + meta.logit_rows);
  auto* token_ids = reinterpret_cast<int32_t*>(host + meta.token_ids);
  auto* positions = reinterpret_cast<int32_t*>(host + meta.positions);
  auto* slots = reinterpret_cast<int64_t*>(host + meta.slots);
  auto* tables = reinterpret_cast<int32_t*>(host + meta.block_tables);
  const int64_t t = shape.num_tokens;
  std::memcpy(token_ids, fb.token_ids.data(), fb.num_tokens * sizeof(int32_t));
  std::memcpy(positions, fb.positions.data(), fb.num_tokens * sizeof(int32_t));
  std::memcpy(slots, fb.slots.data(), fb.num_tokens * sizeof(int64_t));
  for (int64_t i = fb.num_tokens; i < t; ++i) {
    token_ids[i] = 0;
    positions[i] = 0;
    slots[i] = -1;
  }
  for (int i = 0; i <= shape.num_seqs; ++i) {
    query_start[i] = i <= n ? fb.query_start[i] : fb.query_start[n] + (i - n);
  }
  for (int i = 0; i < shape.num_seqs; ++i) context_len[i] = i < n ? fb.context_len[i] : 1;
  std::memset(tables, 0, static_cast<size_t>(shape.num_seqs) * table_stride * sizeof(int32_t));
  for (int i = 0; i < n; ++i) {
    std::memcpy(tables + static_cast<int64_t>(i) * table_stride,
                fb.block_tables.data() + static_cast<int64_t>(i) * fb.max_blocks_per_seq,
                fb.max_blocks_per_seq * sizeof(int32_t));
  }
  for (int64_t r = 0; r < logit_rows; ++r) rows_out[r] = fb.logit_rows[r];
  const int64_t copy_bytes = meta.block_tables +
                             static_cast<int64_t>(shape.num_seqs) * table_stride * 4;
  WEFT_RETURN_IF_ERROR(cuda_check(cudaMemcpyAsync(metadata.data(), host_metadata, copy_bytes,
                                                  cudaMemcpyHostToDevice, stream),
                                  "step metadata (cudaMemcpyAsync)"));

  StagedStep staged;
  staged.shape = shape;
  staged.logit_rows = logit_rows;
  staged.use_graph = use_graph;
  staged.graph_key = key;
  staged.head_rows = rows;
  return staged;
}

absl::Status CudaExecutor::submit(const StepPlan& plan) {
  State& s = *s_;
  WEFT_ASSIGN_OR_RETURN(const StagedStep staged, s.stage_metadata(plan, /*allow_graph=*/true));
  const StepShape& shape = staged.shape;
  const int64_t logit_rows = staged.logit_rows;
  const bool use_graph = staged.use_graph;
  const std::pair<int, int> key = staged.graph_key;
  const int rows = staged.head_rows;

  // Argmax tokens; any other plan gets full logits, which the contract allows.
  const bool greedy = plan.sample_candidates == 1 && !plan.candidate_logsumexp;
  StepOutput out;
  if (greedy) {
    out.tokens.resize(static_cast<size_t>(logit_rows));
  } else {
    out.logits = Tensor::empty(DType::kF32, Shape{logit_rows, s.config.vocab_size});
  }
  const int64_t vocab = s.config.vocab_size;
  auto copy_out = [&](int64_t row_begin, int64_t count) -> absl::Status {
    if (greedy) {
      WEFT_RETURN_IF_ERROR(cuda_check(
          cudaMemcpyAsync(out.tokens.data() + row_begin, s.ws(s.act.tokens_out), count * 4,
                          cudaMemcpyDeviceToHost, s.stream),
          "sampled tokens to host"));
    } else {
      WEFT_RETURN_IF_ERROR(cuda_check(
          cudaMemcpyAsync(out.logits.data_as<float>() + row_begin * vocab, s.ws(s.act.logits),
                          count * vocab * sizeof(float), cudaMemcpyDeviceToHost, s.stream),
          "logits to host"));
    }
    return cuda_check(cudaStreamSynchronize(s.stream), "step (cudaStreamSynchronize)");
  };

  // Captures the bucket's graph on its second run. A capture or instantiation that fails leaves
  // no graph behind: the bucket runs eagerly from then on (logged once), the step is not lost.
  cudaGraphExec_t exec = nullptr;
  if (use_graph && s.seen[key] && !s.graph_failed[key]) {
    auto it = s.graphs.find(key);
    if (it == s.graphs.end()) {
      absl::StatusOr<cudaGraphExec_t> captured = s.capture_graph(shape, rows);
      if (captured.ok()) {
        it = s.graphs.emplace(key, *captured).first;
        ++s.stats.graphs_captured;
      } else {
        s.graph_failed[key] = true;
        ++s.stats.graph_failures;
        std::cerr << "weft: CUDA graph for " << key.first << " sequences, context " << key.second
                  << " not captured (" << captured.status().message()
                  << "); that bucket runs eagerly\n";
      }
    }
    if (it != s.graphs.end()) exec = it->second;
  }
  if (exec != nullptr) {
    WEFT_RETURN_IF_ERROR(cuda_check(cudaGraphLaunch(exec, s.stream), "cudaGraphLaunch"));
    ++s.stats.graph_replays;
    WEFT_RETURN_IF_ERROR(copy_out(0, logit_rows));
  } else {
    // Eager. A graph bucket's first run also goes here, with the graph's exact shapes, so the
    // cuBLASLt algorithm choice (host work) is done before the capture.
    if (use_graph) s.seen[key] = true;
    ++s.stats.eager_steps;
    WEFT_RETURN_IF_ERROR(s.enqueue_embedding(shape));
    WEFT_RETURN_IF_ERROR(s.enqueue_layers(shape));
    for (int64_t begin = 0; begin < logit_rows; begin += s.max_logit_rows) {
      const int64_t count = std::min(s.max_logit_rows, logit_rows - begin);
      const int64_t computed = use_graph ? rows : count;
      WEFT_RETURN_IF_ERROR(s.enqueue_head(shape, begin, computed, greedy || use_graph));
      WEFT_RETURN_IF_ERROR(copy_out(begin, count));
    }
    if (logit_rows == 0) {
      WEFT_RETURN_IF_ERROR(cuda_check(cudaStreamSynchronize(s.stream), "step (cudaStreamSynchronize)"));
    }
  }
  s.done.push_back(std::move(out));
  return absl::OkStatus();
}

absl::StatusOr<StepOutput> CudaExecutor::collect() {
  if (s_->done.empty()) return absl::FailedPreconditionError("collect() with no step submitted");
  StepOutput out = std::move(s_->done.front());
  s_->done.pop_front();
  return out;
}

int64_t CudaExecutor::num_kv_blocks() const { return s_->num_blocks; }
int CudaExecutor::block_size() const { return s_->options.block_size; }
DType CudaExecutor::compute_dtype() const { return s_->dtype; }
const DeviceMemoryPlan& CudaExecutor::memory_plan() const { return s_->plan; }
CudaExecutorStats CudaExecutor::stats() const { return s_->stats; }

}  // namespace weft
