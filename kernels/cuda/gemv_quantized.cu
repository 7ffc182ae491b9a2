// gemv_quantized: the decode-shaped product with int8 / int4 weights decoded in registers (see
// gemv_quantized.h for the contract).
//
// Grid ceil(n / 8), 256 threads: warp w of block b owns output feature 8 b + w and walks its row.
//   - kI8: lane l reads 16 int8 weights (one 128-bit load) at vectors l, l + 32, ... and the
//     matching 16 elements of each x row; one F32 partial sum per x row.
//   - 4-bit groups of G elements (G / 2 bytes of nibbles after the block's fields): G / 8 lanes
//     share a block, each reading 4 nibble bytes: elements 4p..4p+3 (low nibbles) and
//     G/2 + 4p.. (high nibbles) of the block, so a warp covers 32 / (G / 8) consecutive blocks
//     per step and its loads are contiguous but for the fields between blocks. A lane decodes its
//     8 weights as the CPU does (integer difference, product, sum, each rounded: __fmul_rn and
//     __fadd_rn keep nvcc from contracting them into an FMA).
// Warp shuffles sum the lanes; lane 0 adds the bias and writes y rounded once to T.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "ops_common.cuh"
#include "weft/kernels/cuda/gemv_quantized.h"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;
using detail::warp_sum;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

// A 4-bit group type's block (core/dtype.h): G elements in `bytes` bytes, nibbles from `values`;
// scale a and offset c F16 (F32 with f32_fields; Q4_0 has no offset), zero 8 for Q4_0.
struct Int4Layout {
  int elems = 0, bytes = 0, values = 0, zero = 0;
  bool f32_fields = false, offset = true;
};

__host__ __device__ constexpr Int4Layout int4_layout(DType d) {
  switch (d) {
    case DType::kQ4_0: return {32, 18, 2, 8, false, false};
    case DType::kQ4_1: return {32, 20, 4, 0, false, true};
    case DType::kI4G64: return {64, 36, 4, 0, false, true};
    case DType::kI4G128: return {128, 68, 4, 0, false, true};
    case DType::kI4G32F: return {32, 24, 8, 0, true, true};
    case DType::kI4G64F: return {64, 40, 8, 0, true, true};
    case DType::kI4G128F: return {128, 72, 8, 0, true, true};
    default: return {};
  }
}

__device__ __forceinline__ uint32_t bytes4(const uint8_t* p, bool aligned4) {
  if (aligned4) return __ldg(reinterpret_cast<const uint32_t*>(p));
  const uint16_t lo = __ldg(reinterpret_cast<const uint16_t*>(p));  // Q4_0: 2-byte aligned
  const uint16_t hi = __ldg(reinterpret_cast<const uint16_t*>(p + 2));
  return lo | (static_cast<uint32_t>(hi) << 16);
}

__device__ __forceinline__ float f16_field(const uint8_t* p) {
  return __half2float(__ushort_as_half(__ldg(reinterpret_cast<const uint16_t*>(p))));
}

__device__ __forceinline__ float f32_field(const uint8_t* p) {
  return __ldg(reinterpret_cast<const float*>(p));
}

template <typename T, DType D, int M>
__global__ void __launch_bounds__(kThreads)
    gemv_int4_kernel(const T* __restrict__ x, const uint8_t* __restrict__ w,
                     const T* __restrict__ bias, T* __restrict__ y, int n, int k) {
  constexpr Int4Layout L = int4_layout(D);
  constexpr int kLanesPerBlock = L.elems / 8;
  constexpr int kBlocksPerStep = 32 / kLanesPerBlock;
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const int feature = blockIdx.x * kWarpsPerBlock + warp;
  const bool active = feature < n;  // uniform over the warp
  const int blocks = k / L.elems;
  const uint8_t* row = w + static_cast<int64_t>(feature) * blocks * L.bytes;
  const int part = lane % kLanesPerBlock;

  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.0f;

  for (int b = active ? lane / kLanesPerBlock : blocks; b < blocks; b += kBlocksPerStep) {
    const uint8_t* block = row + static_cast<int64_t>(b) * L.bytes;
    const float a = L.f32_fields ? f32_field(block) : f16_field(block);
    const float c = !L.offset ? 0.0f : L.f32_fields ? f32_field(block + 4) : f16_field(block + 2);
    const uint32_t q = bytes4(block + L.values + 4 * part, L.bytes % 4 == 0);
    float lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int byte = static_cast<int>((q >> (8 * i)) & 0xFF);
      lo[i] = __fadd_rn(__fmul_rn(a, static_cast<float>((byte & 15) - L.zero)), c);
      hi[i] = __fadd_rn(__fmul_rn(a, static_cast<float>((byte >> 4) - L.zero)), c);
    }
    const int64_t e_lo = static_cast<int64_t>(b) * L.elems + 4 * part;
    const int64_t e_hi = e_lo + L.elems / 2;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      const T* xr = x + static_cast<int64_t>(r) * k;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        acc[r] = fmaf(to_float(xr[e_lo + i]), lo[i], acc[r]);
        acc[r] = fmaf(to_float(xr[e_hi + i]), hi[i], acc[r]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = warp_sum(acc[r]);
  if (active && lane == 0) {
    const float bv = bias != nullptr ? to_float(bias[feature]) : 0.0f;
#pragma unroll
    for (int r = 0; r < M; ++r) y[static_cast<int64_t>(r) * n + feature] = from_float<T>(acc[r] + bv);
  }
}

template <typename T, int M>
__global__ void __launch_bounds__(kThreads)
    gemv_i8_kernel(const T* __restrict__ x, const int8_t* __restrict__ w,
                   const float* __restrict__ w_scale, const T* __restrict__ bias,
                   T* __restrict__ y, int n, int k) {
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const int feature = blockIdx.x * kWarpsPerBlock + warp;
  const bool active = feature < n;
  const int vectors = k / 16;
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(feature) * k);
  const uint4* xv = reinterpret_cast<const uint4*>(x);  // 8 elements of T per vector

  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.0f;

  for (int v = active ? lane : vectors; v < vectors; v += 32) {
    const uint4 wv = __ldg(wrow + v);
    const int8_t* q = reinterpret_cast<const int8_t*>(&wv);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float first[8], second[8];
      const int64_t base = static_cast<int64_t>(r) * (k / 8) + 2 * v;
      detail::unpack8(__ldg(xv + base), static_cast<const T*>(nullptr), first);
      detail::unpack8(__ldg(xv + base + 1), static_cast<const T*>(nullptr), second);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r] = fmaf(first[e], static_cast<float>(q[e]), acc[r]);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r] = fmaf(second[e], static_cast<float>(q[8 + e]), acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = warp_sum(acc[r]);
  if (active && lane == 0) {
    const float scale = w_scale[feature];
    const float bv = bias != nullptr ? to_float(bias[feature]) : 0.0f;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      y[static_cast<int64_t>(r) * n + feature] = from_float<T>(__fadd_rn(__fmul_rn(acc[r], scale), bv));
    }
  }
}

template <typename T, int M>
void launch(const void* x, const void* w, const float* w_scale, const void* bias, void* y, int n,
            int k, DType w_dtype, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>((n + kWarpsPerBlock - 1) / kWarpsPerBlock);
  const T* xt = static_cast<const T*>(x);
  const T* bt = static_cast<const T*>(bias);
  T* yt = static_cast<T*>(y);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  switch (w_dtype) {
    case DType::kI8:
      gemv_i8_kernel<T, M><<<blocks, kThreads, 0, stream>>>(
          xt, static_cast<const int8_t*>(w), w_scale, bt, yt, n, k);
      return;
#define WEFT_INT4_CASE(D)                                                                 \
  case D:                                                                                 \
    gemv_int4_kernel<T, D, M><<<blocks, kThreads, 0, stream>>>(xt, wb, bt, yt, n, k); \
    return;
    WEFT_INT4_CASE(DType::kQ4_0)
    WEFT_INT4_CASE(DType::kQ4_1)
    WEFT_INT4_CASE(DType::kI4G64)
    WEFT_INT4_CASE(DType::kI4G128)
    WEFT_INT4_CASE(DType::kI4G32F)
    WEFT_INT4_CASE(DType::kI4G64F)
    WEFT_INT4_CASE(DType::kI4G128F)
#undef WEFT_INT4_CASE
    default:
      return;  // gemv_quantized_supported() refused it before
  }
}

template <typename T>
void launch_rows(int64_t m, const void* x, const void* w, const float* w_scale, const void* bias,
                 void* y, int n, int k, DType w_dtype, cudaStream_t stream) {
  switch (m) {
    case 1: return launch<T, 1>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 2: return launch<T, 2>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 3: return launch<T, 3>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 4: return launch<T, 4>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 5: return launch<T, 5>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 6: return launch<T, 6>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    case 7: return launch<T, 7>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
    default: return launch<T, 8>(x, w, w_scale, bias, y, n, k, w_dtype, stream);
  }
}

bool aligned(const void* p, uintptr_t to) { return (reinterpret_cast<uintptr_t>(p) & (to - 1)) == 0; }

}  // namespace

bool gemv_quantized_supported(DType w_dtype, int64_t m, int64_t k, const void* x, const void* w) {
  if (m < 1 || m > kGemvMaxRows || k <= 0 || !aligned(x, 16)) return false;
  if (w_dtype == DType::kI8) return k % 16 == 0 && aligned(w, 16);
  const Int4Layout layout = int4_layout(w_dtype);
  return layout.elems > 0 && k % layout.elems == 0 && aligned(w, 4);
}

absl::Status gemv_quantized(const void* x, const void* w, const float* w_scale, const void* bias,
                            void* y, int64_t m, int64_t n, int64_t k, DType dtype, DType w_dtype,
                            cudaStream_t stream) {
  if (!gemv_quantized_supported(w_dtype, m, k, x, w) || n <= 0 || n > 0x7fffffff ||
      k > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemv_quantized: unsupported problem ", dtype_name(w_dtype), " m=", m, " n=", n, " k=", k,
        " (expected i8 or a 4-bit group type, 1 <= m <= ", kGemvMaxRows,
        ", k a multiple of the block, 16-byte aligned x, aligned w)"));
  }
  if (w_dtype == DType::kI8 && w_scale == nullptr) {
    return absl::InvalidArgumentError("gemv_quantized: i8 weights need their row scales");
  }
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  if (dtype == DType::kBF16) {
    launch_rows<__nv_bfloat16>(m, x, w, w_scale, bias, y, ni, ki, w_dtype, stream);
  } else if (dtype == DType::kF16) {
    launch_rows<__half>(m, x, w, w_scale, bias, y, ni, ki, w_dtype, stream);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("gemv_quantized: dtype ", dtype_name(dtype),
                                                   " unsupported (expected f16 or bf16)"));
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("gemv_quantized: launch failed: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace weft::kernels::cuda
