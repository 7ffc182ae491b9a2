// Paged causal attention over a ragged batch, and the KV-cache write that precedes it.
//
// KV cache layout (one tensor per layer for K and one for V):
//   [num_blocks, block_size, num_kv_heads, head_dim], dtype F32, F16 or BF16,
//   or I8 with one F32 scale per (slot, kv head) in a scale tensor per cache
//   [num_blocks, block_size, num_kv_heads]: element = int8 * scale (symmetric, scale =
//   max |x| / 127 over the head's head_dim values of that token, 0 for an all-zero row).
// A token's slot is block_id * block_size + offset_in_block.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace weft::kernels {

// Writes k, v (F32 [tokens, num_kv_heads, head_dim]) into the caches at slots (I64 [tokens];
// a negative slot skips the token).
void write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slots,
                    const TensorView& k_cache, const TensorView& v_cache, ThreadPool& pool);

// The I8 cache variant: quantizes each (token, kv head) row of k and v to int8 with its own
// scale, written to k_scale / v_scale (F32 [num_blocks, block_size, num_kv_heads]).
void write_kv_cache(const TensorView& k, const TensorView& v, const TensorView& slots,
                    const TensorView& k_cache, const TensorView& v_cache,
                    const TensorView& k_scale, const TensorView& v_scale, ThreadPool& pool);

// Opt-in output of the softmax weights themselves (weft inspect): for each batch token t with
// row[t] >= 0, weights[(row[t] * num_heads + h) * stride + p] is the weight query head h of t
// gave key position p, for every position p the token attends to; positions it does not attend
// to (after it, before its window) are left as the caller set them (zero them first). stride must
// be at least that sequence's context_len. Only rows asked for cost anything.
struct AttentionWeightsOut {
  const int32_t* row = nullptr;  // [num_tokens]; -1: not recorded
  float* weights = nullptr;      // [recorded rows, num_heads, stride]
  int64_t stride = 0;
};

// Describes the sequences of one ragged batch. Sequence s owns query rows
// [query_start[s], query_start[s+1]) of q; those are its newest tokens, so query row j of s sits
// at position context_len[s] - query_len + j and attends to cached positions [0, that position]
// (causal), or with window W > 0 to the W positions (that position - W, that position] (sliding
// window attention). Its cached tokens live in blocks block_tables[s * max_blocks_per_seq + b];
// blocks wholly before every query row's window are never read (their entries may be -1: the
// KV manager freed them).
struct AttentionBatch {
  int num_seqs = 0;
  const int32_t* query_start = nullptr;  // [num_seqs + 1]
  const int32_t* context_len = nullptr;  // [num_seqs], tokens in cache including this step's
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int max_blocks_per_seq = 0;
  int block_size = 0;
  int32_t window = 0;  // 0: full causal attention; W > 0: each query sees its W newest positions
  // > 0: each score (scale * q.k) becomes softcap * tanh(score / softcap) before the softmax
  // (Gemma 2's attn_logit_softcapping); 0: none.
  float softcap = 0.0f;
  // Set: also write the softmax weights of the recorded rows (see AttentionWeightsOut).
  const AttentionWeightsOut* weights_out = nullptr;
};

// q: F32 [tokens, num_heads, head_dim]; out: F32 [tokens, num_heads, head_dim].
// num_heads must be a multiple of num_kv_heads (grouped-query attention: head h reads kv head
// h / (num_heads / num_kv_heads)). scale multiplies q.k (usually 1/sqrt(head_dim)).
// Softmax in F32 with a running max (online softmax), restarted every key segment (4 chunks, 512 keys) and
// folded over the segments in order; threads split over (sequence, kv head, query tile), and when
// those are too few, over key segments (long contexts) or query heads, so one long sequence or a
// lone decode row still uses every thread. A row's result is the same bits in any batch.
void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const AttentionBatch& batch, float scale, const TensorView& out,
                     ThreadPool& pool);

// The I8 cache variant: dequantizes each cached row with its scale (k_scale / v_scale as in
// write_kv_cache above) and otherwise computes exactly as the float variant.
void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& k_scale, const TensorView& v_scale,
                     const AttentionBatch& batch, float scale, const TensorView& out,
                     ThreadPool& pool);

}  // namespace weft::kernels
