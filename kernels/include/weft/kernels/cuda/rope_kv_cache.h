// CUDA rotary position embedding fused with the paged KV-cache write; CPU twins: apply_rope in
// weft/kernels/rope.h and write_kv_cache in weft/kernels/attention.h. Every rope scaling type the
// model supports (default, linear, llama3, ...) reaches the kernel as its inv_freq table and
// attention_scaling factor (model/rope.h: rope_inv_freq, rope_attention_scaling).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/dtype.h"

namespace weft::kernels::cuda {

// Device pointers (all on the same device) and sizes of one launch. Strides are in elements
// between consecutive tokens, so q, k and v may be column slices of one fused qkv projection.
struct RopeKvCacheArgs {
  DType act = DType::kBF16;  // dtype of q, k, v and both caches: F32, F16 or BF16
  int64_t tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;  // even, at most 1024
  void* q = nullptr;  // [tokens, num_heads, head_dim], rotated in place
  int64_t q_stride = 0;
  void* k = nullptr;  // [tokens, num_kv_heads, head_dim], rotated in place
  int64_t k_stride = 0;
  const void* v = nullptr;  // [tokens, num_kv_heads, head_dim]; read only when slots is set
  int64_t v_stride = 0;
  const int32_t* positions = nullptr;  // [tokens]
  const float* inv_freq = nullptr;     // [head_dim / 2]
  float attention_scaling = 1.0f;      // multiplies cos and sin
  // [tokens] cache slots (block_id * block_size + offset); a negative slot skips the token's
  // cache write. Null: rotate q and k only.
  const int64_t* slots = nullptr;
  void* k_cache = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim]
  void* v_cache = nullptr;  // same layout
};

// For each token t, head h (of q and of k) and i < head_dim / 2, with a = positions[t] *
// inv_freq[i] (F32, as the CPU computes it), c = cos(a) * attention_scaling, s likewise:
//   x1 = x[t,h,i], x2 = x[t,h,i + d/2];  x[t,h,i] = x1 c - x2 s;  x[t,h,i + d/2] = x2 c + x1 s
// (math in F32, one rounding to act). Then, when slots[t] >= 0, the rotated k[t] and v[t] are
// stored at k_cache / v_cache[slots[t]]. Asynchronous on `stream`. InvalidArgument for a bad
// dtype, odd or oversized head_dim, a stride smaller than its row, or missing pointers; Internal
// for a failed launch. Slots are not bounds-checked (the block manager owns them).
absl::Status rope_and_write_kv_cache(const RopeKvCacheArgs& args, cudaStream_t stream);

}  // namespace weft::kernels::cuda
