// Pieces shared by the decode and prefill paged-attention kernels (private to kernels/cuda):
// 8-element vector loads that widen F16 / BF16 / I8 to F32, warp reductions, slot lookup, the
// host-side argument checks and the one place (query dtype, cache dtype, head_dim) is dispatched
// to a kernel instantiation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "ops_common.cuh"
#include "weft/kernels/cuda/paged_attention.h"

namespace weft::kernels::cuda::attn {

// Elements per vector access: 16 bytes of F16 / BF16 (one 128-bit load) or 8 bytes of I8.
inline constexpr int kVec = 8;
// Scores live in the log2 domain (q is pre-multiplied by scale * log2(e)) so the softmax uses
// exp2f, one MUFU instruction, instead of expf.
inline constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ void load8(const __half* p, float (&f)[kVec]) {
  detail::unpack8(*reinterpret_cast<const uint4*>(p), p, f);
}

__device__ __forceinline__ void load8(const __nv_bfloat16* p, float (&f)[kVec]) {
  detail::unpack8(*reinterpret_cast<const uint4*>(p), p, f);
}

__device__ __forceinline__ void load8(const int8_t* p, float (&f)[kVec]) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const int8_t* b = reinterpret_cast<const int8_t*>(&u);
#pragma unroll
  for (int i = 0; i < kVec; ++i) f[i] = static_cast<float>(b[i]);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Slot of the token at `pos` of a sequence whose block table row is `table`.
__device__ __forceinline__ int64_t slot_of(const int32_t* table, int pos, int block_size) {
  return static_cast<int64_t>(table[pos / block_size]) * block_size + pos % block_size;
}

// Whether the cache element type carries per-(slot, kv head) scales.
template <typename CacheT>
inline constexpr bool kQuantized = sizeof(CacheT) == 1;

// Everything a launch needs, checked once on the host.
struct Args {
  DType dtype = DType::kBF16;  // of q and out
  const void* q = nullptr;
  void* out = nullptr;
  int num_heads = 0;
  float scale_log2 = 0.0f;  // scale * log2(e)
  CudaKvCache cache;
  CudaAttentionBatch batch;
  void* workspace = nullptr;  // decode only
  size_t workspace_bytes = 0;
  cudaStream_t stream = nullptr;
};

// The head dims dispatch_head_dim instantiates; validate() rejects every other one.
inline constexpr bool supported_head_dim(int d) {
  return d == 8 || d == 16 || d == 32 || d == 64 || d == 80 || d == 96 || d == 128 || d == 256;
}

inline bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The checks both launchers share; `op` names the launcher in messages.
inline absl::Status validate(const char* op, const void* q, DType dtype, int num_heads,
                             const CudaKvCache& cache, const CudaAttentionBatch& batch,
                             const void* out) {
  auto bad = [op](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", parts...));
  };
  if (dtype != DType::kF16 && dtype != DType::kBF16) {
    return bad("query dtype ", dtype_name(dtype), " unsupported (expected f16 or bf16)");
  }
  if (cache.dtype != dtype && cache.dtype != DType::kI8) {
    return bad("cache dtype ", dtype_name(cache.dtype), " must equal the query dtype ",
               dtype_name(dtype), " or be i8");
  }
  if (!supported_head_dim(cache.head_dim)) {
    return bad("head_dim ", cache.head_dim,
               " unsupported (expected 8, 16, 32, 64, 80, 96, 128 or 256)");
  }
  if (cache.num_kv_heads <= 0 || num_heads <= 0 || num_heads % cache.num_kv_heads != 0) {
    return bad("num_heads ", num_heads, " must be a positive multiple of num_kv_heads ",
               cache.num_kv_heads);
  }
  if (cache.block_size <= 0) return bad("block_size ", cache.block_size, " must be positive");
  if (batch.num_seqs < 0 || batch.max_query_len < 0 || batch.max_context_len < 0) {
    return bad("num_seqs, max_query_len and max_context_len must be non-negative (got ",
               batch.num_seqs, ", ", batch.max_query_len, ", ", batch.max_context_len, ")");
  }
  if (batch.num_seqs == 0) return absl::OkStatus();
  if (batch.query_start == nullptr || batch.context_len == nullptr ||
      batch.block_tables == nullptr || batch.max_blocks_per_seq <= 0) {
    return bad(
        "batch metadata (query_start, context_len, block_tables, max_blocks_per_seq) "
        "must be set");
  }
  if (q == nullptr || out == nullptr || cache.k == nullptr || cache.v == nullptr) {
    return bad("q, out, cache.k and cache.v must be non-null");
  }
  if (cache.dtype == DType::kI8 && (cache.k_scale == nullptr || cache.v_scale == nullptr)) {
    return bad("an i8 cache needs k_scale and v_scale");
  }
  if (!aligned(q, 16) || !aligned(out, 16)) return bad("q and out must be 16-byte aligned");
  const uintptr_t cache_align = cache.dtype == DType::kI8 ? 8 : 16;
  if (!aligned(cache.k, cache_align) || !aligned(cache.v, cache_align)) {
    return bad("cache.k and cache.v must be ", cache_align, "-byte aligned");
  }
  return absl::OkStatus();
}

inline absl::Status launch_status(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op, ": kernel launch failed: ", cudaGetErrorString(err)));
}

// Calls Launch::template run<T, CacheT, D>(a) for the (query dtype, cache dtype, head_dim) of
// `a`; validate() has already rejected every other combination. The one place head dims are
// listed for instantiation: keep it in step with supported_head_dim.
template <typename Launch, typename T, typename CacheT>
absl::Status dispatch_head_dim(const Args& a) {
  switch (a.cache.head_dim) {
    case 8:
      return Launch::template run<T, CacheT, 8>(a);
    case 16:
      return Launch::template run<T, CacheT, 16>(a);
    case 32:
      return Launch::template run<T, CacheT, 32>(a);
    case 64:
      return Launch::template run<T, CacheT, 64>(a);
    case 80:
      return Launch::template run<T, CacheT, 80>(a);
    case 96:
      return Launch::template run<T, CacheT, 96>(a);
    case 128:
      return Launch::template run<T, CacheT, 128>(a);
    case 256:
      return Launch::template run<T, CacheT, 256>(a);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("paged attention: head_dim ", a.cache.head_dim, " unsupported"));
  }
}

// The prefill grid: (row tiles of `tile_rows` rows, kv heads, sequences), where a sequence's rows
// are its (query, head-in-group) pairs; x is 0 when no sequence has a query. InvalidArgument
// naming `op` when the grid exceeds CUDA's limits.
inline absl::StatusOr<dim3> prefill_grid(const Args& a, int tile_rows, const char* op) {
  const int group = a.num_heads / a.cache.num_kv_heads;
  const int64_t tiles =
      (static_cast<int64_t>(a.batch.max_query_len) * group + tile_rows - 1) / tile_rows;
  if (tiles > 0x7fffffff || a.cache.num_kv_heads > 65535 || a.batch.num_seqs > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": launch grid too large (max_query_len ", a.batch.max_query_len, ", num_kv_heads ",
        a.cache.num_kv_heads, ", num_seqs ", a.batch.num_seqs, ")"));
  }
  return dim3(static_cast<unsigned>(tiles), a.cache.num_kv_heads, a.batch.num_seqs);
}

// Lets `kernel` take `bytes` of dynamic shared memory: above 48 KiB a kernel must opt in (a
// host-side attribute, so it is also fine during stream capture). Internal naming `op` if refused.
template <typename Kernel>
absl::Status allow_shared_memory(Kernel kernel, size_t bytes, const char* op) {
  const cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(op, ": cudaFuncSetAttribute(", bytes,
                                          " bytes of shared memory) failed: ",
                                          cudaGetErrorString(err)));
}

// The tensor-core prefill kernel (paged_attention_prefill_tc.cu): whether it covers `a` (F16 or
// BF16 queries with a cache of the same dtype, head_dim 64 or 128), and its launcher, for
// validated arguments it covers.
bool prefill_tc_supported(const Args& a);
absl::Status launch_prefill_tc(const Args& a);

template <typename Launch>
absl::Status dispatch(const Args& a) {
  const bool i8 = a.cache.dtype == DType::kI8;
  if (a.dtype == DType::kF16) {
    return i8 ? dispatch_head_dim<Launch, __half, int8_t>(a)
              : dispatch_head_dim<Launch, __half, __half>(a);
  }
  return i8 ? dispatch_head_dim<Launch, __nv_bfloat16, int8_t>(a)
            : dispatch_head_dim<Launch, __nv_bfloat16, __nv_bfloat16>(a);
}

}  // namespace weft::kernels::cuda::attn
