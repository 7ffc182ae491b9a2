// gemv: y[m, n] = x[m, k] @ w[n, k]^T (+ bias) for m <= kGemvMaxRows (see gemv.h).
//
// Grid ceil(n / (8 / S)), 256 threads (8 warps). Each output feature f is owned by S warps of one
// block (S = 1, 2, 4 or 8, the split of its row; see split_for): warp (f, s) walks w's row f in
// 16-byte vectors (8 elements), lane l taking vectors 32 (s + S i) + l, eight vectors at a time so
// eight loads are in flight per lane before any is used. The split keeps more warps streaming
// when n is small (an H200 needs ~30 KiB of loads in flight per SM): with one warp per row and
// four loads in flight, o_proj / down_proj of a 1B Llama (n = 2048) ran at 32% of the bandwidth,
// split four ways at 35%; cuBLAS does better still on most of these shapes (see gemv.h). For
// each w vector the lane reads the matching 8 elements of all M rows of x (small, L1 / L2
// resident) and keeps M F32 partial sums; warp shuffles, then the S warps' partials in shared
// memory, give y[r, f], written (with the bias) after one rounding to T. Weights are read with
// ld.global.nc, once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "absl/strings/str_cat.h"
#include "ops_common.cuh"
#include "weft/kernels/cuda/gemv.h"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;
using detail::warp_sum;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kInFlight = 8;  // 16-byte weight vectors each lane loads before using them
// Warps the whole launch should have at least (two 4-warp-scheduler waves of 16 warps on each of
// the 132 SMs of an H100 / H200); a smaller n splits its rows over more warps.
constexpr int64_t kTargetWarps = 132 * 32;

int split_for(int64_t n) {
  int split = 1;
  while (split < kWarpsPerBlock && n * split < kTargetWarps) split *= 2;
  return split;
}

template <typename T, int M>
__global__ void __launch_bounds__(kThreads)
    gemv_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                T* __restrict__ y, int n, int k, int split) {
  __shared__ float partial[kWarpsPerBlock][M];
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  const int part = warp % split;
  const int feature = blockIdx.x * (kWarpsPerBlock / split) + warp / split;
  const bool active = feature < n;  // uniform over the warp; every warp reaches the barrier
  const int vectors = k / 8;
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(feature) * k);
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const int step = 32 * split;  // between one lane's consecutive vectors

  float acc[M];
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = 0.0f;

  for (int v0 = active ? 32 * part + lane : vectors; v0 < vectors; v0 += step * kInFlight) {
    uint4 wv[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int v = v0 + step * i;
      wv[i] = v < vectors ? __ldg(wrow + v) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int v = v0 + step * i;
      if (v < vectors) {
        float wf[8];
        detail::unpack8(wv[i], static_cast<const T*>(nullptr), wf);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          detail::unpack8(__ldg(xv + static_cast<int64_t>(r) * vectors + v),
                    static_cast<const T*>(nullptr), xf);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r] = fmaf(xf[e], wf[e], acc[r]);
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < M; ++r) acc[r] = warp_sum(acc[r]);
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < M; ++r) partial[warp][r] = acc[r];
  }
  __syncthreads();
  // Lane r of the row's first warp sums the S partials of x row r, in a fixed order.
  if (active && part == 0 && lane < M) {
    float sum = 0.0f;
    for (int j = 0; j < split; ++j) sum += partial[warp + j][lane];
    const float b = bias != nullptr ? to_float(bias[feature]) : 0.0f;
    y[static_cast<int64_t>(lane) * n + feature] = from_float<T>(sum + b);
  }
}

template <typename T, int M>
void launch(const void* x, const void* w, const void* bias, void* y, int n, int k,
            cudaStream_t stream) {
  const int split = split_for(n);
  const int rows_per_block = kWarpsPerBlock / split;
  const unsigned blocks = static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block);
  gemv_kernel<T, M><<<blocks, kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
      static_cast<T*>(y), n, k, split);
}

template <typename T>
void launch_rows(int64_t m, const void* x, const void* w, const void* bias, void* y, int n, int k,
                 cudaStream_t stream) {
  switch (m) {
    case 1:
      return launch<T, 1>(x, w, bias, y, n, k, stream);
    case 2:
      return launch<T, 2>(x, w, bias, y, n, k, stream);
    case 3:
      return launch<T, 3>(x, w, bias, y, n, k, stream);
    case 4:
      return launch<T, 4>(x, w, bias, y, n, k, stream);
    case 5:
      return launch<T, 5>(x, w, bias, y, n, k, stream);
    case 6:
      return launch<T, 6>(x, w, bias, y, n, k, stream);
    case 7:
      return launch<T, 7>(x, w, bias, y, n, k, stream);
    default:
      return launch<T, 8>(x, w, bias, y, n, k, stream);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

static_assert(kGemvMaxRows == 8, "launch_rows instantiates M = 1..8");

bool gemv_supported(int64_t m, int64_t k, const void* x, const void* w, const void* y) {
  return m >= 1 && m <= kGemvMaxRows && k > 0 && k % 8 == 0 && aligned16(x) && aligned16(w) &&
         aligned16(y);
}

absl::Status gemv(const void* x, const void* w, const void* bias, void* y, int64_t m, int64_t n,
                  int64_t k, DType dtype, cudaStream_t stream) {
  if (!gemv_supported(m, k, x, w, y) || n <= 0 || n > 0x7fffffff || k > 0x7fffffff) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gemv: unsupported problem m=", m, " n=", n, " k=", k,
        " (expected 1 <= m <= ", kGemvMaxRows, ", k a multiple of 8, 16-byte aligned x, w, y)"));
  }
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  if (dtype == DType::kBF16) {
    launch_rows<__nv_bfloat16>(m, x, w, bias, y, ni, ki, stream);
  } else if (dtype == DType::kF16) {
    launch_rows<__half>(m, x, w, bias, y, ni, ki, stream);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("gemv: dtype ", dtype_name(dtype), " unsupported (expected f16 or bf16)"));
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrCat("gemv: launch failed: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace weft::kernels::cuda
