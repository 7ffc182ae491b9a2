// The forward pass of CudaExecutor and CudaStageRunner: the same sequence of operations as
// DecoderModel on the CPU (src/model/decoder_model.cpp), with activations in the compute dtype and
// F32 inside each kernel. Under tensor parallelism each rank computes its heads and intermediate
// columns, and the embedding and the row-parallel products (o_proj, down_proj) are summed over
// the group in the compute dtype (the CPU sums F32).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "engine/cuda/cuda_executor_state.h"
#include "weft/kernels/cuda/activation.h"
#include "weft/kernels/cuda/embedding.h"
#include "weft/kernels/cuda/norm.h"
#include "weft/kernels/cuda/paged_attention.h"
#include "weft/kernels/cuda/rope_kv_cache.h"

namespace weft {

namespace kc = kernels::cuda;

namespace {

// Sums `t` rows of `h` activations over the TP group, in place (stream-ordered or waited for, as
// the communicator does). A no-op without a group.
absl::Status sum_over_tp(Communicator* tp, void* rows, int64_t t, int64_t h, DType dtype) {
  if (tp == nullptr || tp->size() == 1) return absl::OkStatus();
  return tp->all_reduce_sum(TensorView{rows, dtype, Shape{t, h}, Device::kCuda});
}

}  // namespace

absl::Status CudaExecutor::State::enqueue_embedding(const StepShape& sh) {
  const int64_t t = sh.num_tokens, h = config.hidden_size;
  WEFT_RETURN_IF_ERROR(kc::embedding_gather(weights.embedding, dtype, weights.vocab_rows, h,
                                            md<int32_t>(meta.token_ids), t, weights.vocab_begin, ws(act.residual),
                                            dtype, stream));
  return sum_over_tp(tp, ws(act.residual), t, h, dtype);
}

absl::Status CudaExecutor::State::enqueue_layers(const StepShape& sh) {
  const ModelConfig& c = config;
  const int64_t t = sh.num_tokens;
  const int64_t h = c.hidden_size, d = c.head_dim;
  // This rank's heads, KV heads and intermediate columns.
  const int heads = local_heads;
  const int kv_heads = local_kv_heads;
  const int64_t q_width = heads * d, kv_width = kv_heads * d;
  const int64_t qkv_width = q_width + 2 * kv_width;
  const int64_t inter = local_intermediate;
  const size_t es = dtype_size(dtype);
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));

  char* residual = ws(act.residual);
  char* normed = ws(act.normed);
  char* qkv = ws(act.qkv);
  char* q = ws(act.q);
  char* attn_out = ws(act.attn_out);
  char* delta = ws(act.delta);
  char* gate_up = ws(act.gate_up);
  char* mlp_act = ws(act.mlp_act);

  kc::CudaAttentionBatch batch;
  batch.num_seqs = sh.num_seqs;
  batch.query_start = md<int32_t>(meta.query_start);
  batch.context_len = md<int32_t>(meta.context_len);
  batch.block_tables = md<int32_t>(meta.block_tables);
  batch.max_blocks_per_seq = table_stride;
  batch.max_query_len = sh.max_query_len;
  batch.max_context_len = sh.max_context_len;

  for (int i = 0; i < static_cast<int>(weights.layers.size()); ++i) {
    const CudaLayerWeights& w = weights.layers[static_cast<size_t>(i)];
    // The residual add of each sub-block is fused into the next norm, as on the CPU.
    if (i == 0) {
      WEFT_RETURN_IF_ERROR(kc::rms_norm(residual, w.input_norm, normed, t, h, eps, dtype, dtype, stream));
    } else {
      WEFT_RETURN_IF_ERROR(kc::add_rms_norm(residual, delta, w.input_norm, normed, t, h, eps, dtype,
                                            dtype, stream));
    }
    WEFT_RETURN_IF_ERROR(gemm->linear(normed, w.qkv, w.qkv_bias, qkv, t, qkv_width, h, dtype));
    if (w.q_norm != nullptr) {
      WEFT_RETURN_IF_ERROR(kc::head_rms_norm(qkv, w.q_norm, t, heads, static_cast<int>(d), qkv_width,
                                             eps, dtype, dtype, stream));
      WEFT_RETURN_IF_ERROR(kc::head_rms_norm(qkv + q_width * es, w.k_norm, t, kv_heads,
                                             static_cast<int>(d), qkv_width, eps, dtype, dtype,
                                             stream));
    }
    kc::RopeKvCacheArgs rope;
    rope.act = dtype;
    rope.tokens = t;
    rope.num_heads = heads;
    rope.num_kv_heads = kv_heads;
    rope.head_dim = static_cast<int>(d);
    rope.q = qkv;
    rope.q_stride = qkv_width;
    rope.k = qkv + q_width * es;
    rope.k_stride = qkv_width;
    rope.v = qkv + (q_width + kv_width) * es;
    rope.v_stride = qkv_width;
    rope.positions = md<int32_t>(meta.positions);
    rope.inv_freq = inv_freq.as<float>();
    rope.attention_scaling = attention_scaling;
    rope.slots = md<int64_t>(meta.slots);
    rope.k_cache = k_cache(i);
    rope.v_cache = v_cache(i);
    WEFT_RETURN_IF_ERROR(kc::rope_and_write_kv_cache(rope, stream));
    // The attention kernels take contiguous q rows; q sits inside the fused qkv rows.
    WEFT_RETURN_IF_ERROR(kc::cuda_check(
        cudaMemcpy2DAsync(q, q_width * es, qkv, qkv_width * es, q_width * es, t,
                          cudaMemcpyDeviceToDevice, stream),
        "attention q copy (cudaMemcpy2DAsync)"));
    kc::CudaKvCache cache;
    cache.k = k_cache(i);
    cache.v = v_cache(i);
    cache.dtype = dtype;
    cache.block_size = options.block_size;
    cache.num_kv_heads = kv_heads;
    cache.head_dim = static_cast<int>(d);
    if (sh.decode) {
      // The workspace was sized for the largest step; the kernel picks partitions that fit it
      // and names the shortfall if even its largest ones do not.
      WEFT_RETURN_IF_ERROR(kc::paged_attention_decode(q, dtype, heads, cache, batch, scale, attn_out,
                                                      ws(act.decode_attention),
                                                      static_cast<size_t>(decode_workspace_bytes),
                                                      stream));
    } else {
      WEFT_RETURN_IF_ERROR(
          kc::paged_attention_prefill(q, dtype, heads, cache, batch, scale, attn_out, stream,
                                      options.tensor_core_prefill
                                          ? kc::PrefillAttentionKernel::kTensorCores
                                          : kc::PrefillAttentionKernel::kSimt));
    }
    WEFT_RETURN_IF_ERROR(gemm->linear(attn_out, w.o_proj, w.o_bias, delta, t, h, q_width, dtype));
    WEFT_RETURN_IF_ERROR(sum_over_tp(tp, delta, t, h, dtype));
    WEFT_RETURN_IF_ERROR(kc::add_rms_norm(residual, delta, w.post_norm, normed, t, h, eps, dtype,
                                          dtype, stream));
    WEFT_RETURN_IF_ERROR(gemm->linear(normed, w.gate_up, w.gate_up_bias, gate_up, t, 2 * inter, h,
                                      dtype));
    WEFT_RETURN_IF_ERROR(kc::silu_and_mul(gate_up, mlp_act, t, inter, dtype, stream));
    WEFT_RETURN_IF_ERROR(gemm->linear(mlp_act, w.down, w.down_bias, delta, t, h, inter, dtype));
    WEFT_RETURN_IF_ERROR(sum_over_tp(tp, delta, t, h, dtype));
  }
  if (!weights.layers.empty()) {
    WEFT_RETURN_IF_ERROR(kc::add_inplace(residual, delta, t * h, dtype, stream));
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::State::enqueue_head(const StepShape& sh, int64_t row_begin, int64_t rows,
                                               bool greedy) {
  const int64_t h = config.hidden_size, vocab = weights.vocab_rows;  // this rank's vocabulary shard
  const size_t es = dtype_size(dtype);
  const float eps = static_cast<float>(config.rms_norm_eps);
  char* selected = ws(act.selected);
  const char* source = ws(act.residual) + row_begin * h * es;
  if (!sh.identity_rows) {
    // The embedding gather doubles as a row gather: the "table" is the residual stream.
    WEFT_RETURN_IF_ERROR(kc::embedding_gather(ws(act.residual), dtype, sh.num_tokens, h,
                                              md<int32_t>(meta.logit_rows) + row_begin, rows, 0,
                                              selected, dtype, stream));
    source = selected;
  }
  WEFT_RETURN_IF_ERROR(kc::rms_norm(source, weights.final_norm, selected, rows, h, eps, dtype, dtype,
                                    stream));
  // logits[rows, vocab] (F32) = selected[rows, h] @ lm_head[vocab, h]^T. Column-major view:
  // logits^T (vocab x rows) = lm_head^T-as-stored (op T of a k x vocab matrix) * selected^T.
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t in_type = dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
  const cublasStatus_t st = cublasGemmEx(
      cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(vocab), static_cast<int>(rows),
      static_cast<int>(h), &alpha, weights.lm_head, in_type, static_cast<int>(h), selected, in_type,
      static_cast<int>(h), &beta, ws(act.logits), CUDA_R_32F, static_cast<int>(vocab),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("LM head: cublasGemmEx failed with status ",
                                            static_cast<int>(st)));
  }
  if (greedy) {
    WEFT_RETURN_IF_ERROR(kc::argmax_rows(reinterpret_cast<const float*>(ws(act.logits)), rows, vocab,
                                         reinterpret_cast<int32_t*>(ws(act.tokens_out)), stream));
  }
  return absl::OkStatus();
}

}  // namespace weft
