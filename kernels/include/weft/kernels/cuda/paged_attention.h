// Paged causal attention on the GPU over the paged KV cache of weft/kernels/attention.h (the CPU
// twin, whose AttentionBatch semantics these launchers share). Valid C++17 (included by .cu files).
//
// KV cache (one K and one V tensor per layer, device memory):
//   [num_blocks, block_size, num_kv_heads, head_dim] of F16 or BF16 (the query dtype), or I8 with
//   one F32 scale per (slot, kv head) in k_scale / v_scale [num_blocks, block_size, num_kv_heads]
//   (element = int8 * scale). A token's slot is block_id * block_size + offset_in_block.
// Queries and outputs: [tokens, num_heads, head_dim] of F16 or BF16 (both the same dtype).
// Sequence s owns query rows [query_start[s], query_start[s+1]); query row j of s sits at position
// context_len[s] - query_len + j and attends to cached positions [0, that position] (causal).
// Grouped-query attention: head h reads kv head h / (num_heads / num_kv_heads).
// head_dim: 8, 16, 32, 64, 80, 96, 128 or 256 (every head row is a whole number of 8-element
// vectors, so a row is read with 128-bit loads for F16/BF16 and 64-bit loads for I8). Scores,
// softmax and accumulation are F32; outputs are rounded once to the query dtype.
//
// Every launch is asynchronous on `stream`, allocates nothing and never synchronizes, so it can
// be captured in a CUDA graph. Errors: InvalidArgument for an unsupported dtype / head_dim, a
// shape that is not a valid GQA layout, a misaligned pointer (q, out and 16-bit caches need 16-byte
// alignment, I8 caches 8-byte) or a workspace that is too small, naming the parameter; Internal
// (naming the op) when a launch fails.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// One layer's paged KV cache in device memory.
struct CudaKvCache {
  const void* k = nullptr;
  const void* v = nullptr;
  // I8 caches only: F32 [num_blocks, block_size, num_kv_heads]; null otherwise.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  DType dtype = DType::kBF16;  // the query dtype, or kI8
  int block_size = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
};

// A ragged batch: the device-side twin of weft::kernels::AttentionBatch plus the host-side bounds
// that size the launch grid (the kernels never read metadata back to the host).
struct CudaAttentionBatch {
  int num_seqs = 0;
  const int32_t* query_start = nullptr;   // device [num_seqs + 1]
  const int32_t* context_len = nullptr;   // device [num_seqs], cached tokens including this step's
  const int32_t* block_tables = nullptr;  // device [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq = 0;
  // Upper bounds over the batch, known on the host; a sequence exceeding them is a contract
  // violation (its excess queries / keys are not computed).
  int max_query_len = 0;
  int max_context_len = 0;
};

// Decode (flash-decoding) splits each sequence's context into partitions of at most this many
// tokens, each handled by its own thread block; a second kernel merges the partial softmax
// results. Small batches use smaller partitions (down to kMinDecodePartitionSize) so that the
// launch still has enough blocks to keep the GPU's memory system busy.
inline constexpr int kDecodePartitionSize = 256;
inline constexpr int kMinDecodePartitionSize = 16;

// The partition size paged_attention_decode picks when the workspace allows: the largest power of
// two in [kMinDecodePartitionSize, kDecodePartitionSize] whose launch has at least 256 blocks
// (about two per SM of an H100 / H200), else the smallest. `head_blocks` is the number of blocks
// per sequence and partition (query heads / heads sharing a block).
int decode_partition_size(int num_seqs, int head_blocks, int max_context_len);

// Device workspace paged_attention_decode needs for any batch of at most `num_seqs` sequences of
// at most `max_context_len` tokens (0 when nothing can need more than one partition): partial
// outputs, maxima and sums, F32, under the partition sizes above.
size_t paged_attention_decode_workspace_bytes(int num_seqs, int num_heads, int head_dim,
                                              int max_context_len);

// Decode: every sequence has exactly one query row (query_start[s + 1] - query_start[s] == 1), the
// newest token at position context_len[s] - 1. q, out: [batch.num_seqs, num_heads, head_dim].
// `workspace` holds at least paged_attention_decode_workspace_bytes(...) bytes (may be null when
// that is 0). `scale` multiplies q.k (usually 1/sqrt(head_dim)).
absl::Status paged_attention_decode(const void* q, DType dtype, int num_heads,
                                    const CudaKvCache& cache, const CudaAttentionBatch& batch,
                                    float scale, void* out, void* workspace, size_t workspace_bytes,
                                    cudaStream_t stream);

// Prefill chunks, decode tokens or both in one ragged batch (any query_len >= 0 per sequence,
// query_len <= context_len). q, out: [query_start[num_seqs], num_heads, head_dim].
//
// Kernels: with kTensorCores, F16 / BF16 caches (of the query dtype) at head_dim 64 or 128 run on
// tensor cores (WMMA: Q K^T and P V from 16-bit operands with F32 accumulation; scaling, masking
// and the online softmax in F32; P rounded to the query dtype for the P V product, as
// flash-attention does); I8 caches and the other head dims, and every case with kSimt, run on a
// SIMT kernel with F32 math throughout (kept to compare the two, and as a fallback).
enum class PrefillAttentionKernel { kTensorCores, kSimt };

absl::Status paged_attention_prefill(const void* q, DType dtype, int num_heads,
                                     const CudaKvCache& cache, const CudaAttentionBatch& batch,
                                     float scale, void* out, cudaStream_t stream,
                                     PrefillAttentionKernel kernel =
                                         PrefillAttentionKernel::kTensorCores);

}  // namespace weft::kernels::cuda
