// Device helpers shared by the elementwise, norm, RoPE and sampling kernels (private to
// kernels/cuda): float <-> 16-bit conversions, 16-byte vector access, warp / block reductions and
// the one place a float DType is mapped to its CUDA element type.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "weft/kernels/cuda/device_buffer.h"

namespace weft::kernels::cuda::detail {

template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// The 8 F16 / BF16 values of one 128-bit word as floats (the second argument picks the type).
__device__ __forceinline__ void unpack8(const uint4& u, const __half*, float (&f)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__device__ __forceinline__ void unpack8(const uint4& u, const __nv_bfloat16*, float (&f)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

// 16 bytes of T, loaded and stored as one 128-bit access.
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kN = 16 / static_cast<int>(sizeof(T));
  T v[kN];
};

template <typename T>
__device__ __forceinline__ Vec16<T> load16(const T* p) {
  Vec16<T> r;
  *reinterpret_cast<uint4*>(&r) = *reinterpret_cast<const uint4*>(p);
  return r;
}

template <typename T>
__device__ __forceinline__ void store16(T* p, const Vec16<T>& r) {
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&r);
}

// True when every pointer is 16-byte aligned and `elems` T fill whole 16-byte vectors, so rows of
// `elems` elements can be walked with load16 / store16.
template <typename T>
inline bool vec16_ok(int64_t elems, const void* a, const void* b = nullptr,
                     const void* c = nullptr) {
  auto aligned = [](const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; };
  return elems % Vec16<T>::kN == 0 && aligned(a) && aligned(b) && aligned(c);
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `scratch` holds 33 floats of shared memory; the call synchronises the block.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : 0.0f;
    w = warp_sum(w);
    if (lane == 0) scratch[32] = w;
  }
  __syncthreads();
  const float total = scratch[32];
  __syncthreads();  // scratch may be reused by the caller's next reduction
  return total;
}

// The CUDA element type of a float DType.
template <typename T>
struct TypeTag {
  using type = T;
};

// Calls f(TypeTag<T>{}) for the element type of `dtype` (F32, F16, BF16); InvalidArgument naming
// `op` and `what` for any other dtype.
template <typename F>
absl::Status dispatch_float(DType dtype, const char* op, const char* what, F&& f) {
  switch (dtype) {
    case DType::kF32:
      return f(TypeTag<float>{});
    case DType::kF16:
      return f(TypeTag<__half>{});
    case DType::kBF16:
      return f(TypeTag<__nv_bfloat16>{});
    default:
      return absl::InvalidArgumentError(absl::StrCat(op, ": ", what, " must be f32, f16 or bf16, got ",
                                                     dtype_name(dtype)));
  }
}

// The status of the kernel launch just made (configuration errors, not asynchronous faults).
inline absl::Status launch_status(const char* op) { return cuda_check(cudaGetLastError(), op); }

inline unsigned grid_1d(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace weft::kernels::cuda::detail
