#include "weft/kernels/cuda/activation.h"

#include <algorithm>

#include "ops_common.cuh"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::load16;
using detail::store16;
using detail::to_float;
using detail::Vec16;

constexpr int kThreads = 256;
// Grid-stride kernels: enough blocks to fill an H200 several times over, no more.
constexpr int64_t kMaxBlocks = 4096;

__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

// Grid-stride over `units` = rows * inter / (kVec ? kN : 1) work items.
template <typename T, bool kVec>
__global__ void silu_and_mul_kernel(const T* __restrict__ gate_up, T* __restrict__ out,
                                    int64_t rows, int64_t inter) {
  constexpr int kN = kVec ? Vec16<T>::kN : 1;
  const int64_t per_row = inter / kN;
  const int64_t units = rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = u / per_row;
    const int64_t j = (u - r * per_row) * kN;
    const T* g = gate_up + r * 2 * inter + j;
    T* o = out + r * inter + j;
    if constexpr (kVec) {
      const Vec16<T> gv = load16(g), uv = load16(g + inter);
      Vec16<T> ov;
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        ov.v[k] = from_float<T>(silu(to_float(gv.v[k])) * to_float(uv.v[k]));
      }
      store16(o, ov);
    } else {
      *o = from_float<T>(silu(to_float(g[0])) * to_float(g[inter]));
    }
  }
}

template <typename T, typename B, bool kVec>
__global__ void bias_add_kernel(T* __restrict__ y, const B* __restrict__ bias, int64_t rows,
                                int64_t cols) {
  constexpr int kN = kVec ? Vec16<T>::kN : 1;
  const int64_t per_row = cols / kN;
  const int64_t units = rows * per_row;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = u / per_row;
    const int64_t c = (u - r * per_row) * kN;
    T* p = y + r * cols + c;
    if constexpr (kVec) {
      Vec16<T> v = load16(p);
#pragma unroll
      for (int k = 0; k < kN; ++k) v.v[k] = from_float<T>(to_float(v.v[k]) + to_float(bias[c + k]));
      store16(p, v);
    } else {
      *p = from_float<T>(to_float(*p) + to_float(bias[c]));
    }
  }
}

template <typename T, bool kVec>
__global__ void add_kernel(T* __restrict__ y, const T* __restrict__ x, int64_t n) {
  constexpr int kN = kVec ? Vec16<T>::kN : 1;
  const int64_t units = n / kN;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
       u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (kVec) {
      Vec16<T> a = load16(y + u * kN);
      const Vec16<T> b = load16(x + u * kN);
#pragma unroll
      for (int k = 0; k < kN; ++k) a.v[k] = from_float<T>(to_float(a.v[k]) + to_float(b.v[k]));
      store16(y + u * kN, a);
    } else {
      y[u] = from_float<T>(to_float(y[u]) + to_float(x[u]));
    }
  }
}

unsigned grid_for(int64_t units) {
  return static_cast<unsigned>(std::min<int64_t>(kMaxBlocks, (units + kThreads - 1) / kThreads));
}

}  // namespace

absl::Status silu_and_mul(const void* gate_up, void* out, int64_t rows, int64_t inter, DType act,
                          cudaStream_t stream) {
  if (rows < 0 || inter <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("silu_and_mul: bad sizes rows=", rows, " inter=", inter));
  }
  if (rows == 0) return absl::OkStatus();
  return detail::dispatch_float(act, "silu_and_mul", "activation dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* g = static_cast<const T*>(gate_up);
    auto* o = static_cast<T*>(out);
    if (detail::vec16_ok<T>(inter, gate_up, out)) {
      silu_and_mul_kernel<T, true>
          <<<grid_for(rows * inter / Vec16<T>::kN), kThreads, 0, stream>>>(g, o, rows, inter);
    } else {
      silu_and_mul_kernel<T, false><<<grid_for(rows * inter), kThreads, 0, stream>>>(g, o, rows,
                                                                                     inter);
    }
    return detail::launch_status("silu_and_mul");
  });
}

absl::Status bias_add(void* y, const void* bias, int64_t rows, int64_t cols, DType act,
                      DType bias_dtype, cudaStream_t stream) {
  if (rows < 0 || cols <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias_add: bad sizes rows=", rows, " cols=", cols));
  }
  if (rows == 0) return absl::OkStatus();
  return detail::dispatch_float(act, "bias_add", "activation dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return detail::dispatch_float(bias_dtype, "bias_add", "bias dtype", [&](auto btag) {
      using B = typename decltype(btag)::type;
      auto* yp = static_cast<T*>(y);
      const auto* bp = static_cast<const B*>(bias);
      if (detail::vec16_ok<T>(cols, y)) {
        bias_add_kernel<T, B, true>
            <<<grid_for(rows * cols / Vec16<T>::kN), kThreads, 0, stream>>>(yp, bp, rows, cols);
      } else {
        bias_add_kernel<T, B, false><<<grid_for(rows * cols), kThreads, 0, stream>>>(yp, bp, rows,
                                                                                     cols);
      }
      return detail::launch_status("bias_add");
    });
  });
}

absl::Status add_inplace(void* y, const void* x, int64_t n, DType act, cudaStream_t stream) {
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("add_inplace: bad size n=", n));
  if (n == 0) return absl::OkStatus();
  return detail::dispatch_float(act, "add_inplace", "activation dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* yp = static_cast<T*>(y);
    const auto* xp = static_cast<const T*>(x);
    if (detail::vec16_ok<T>(n, y, x)) {
      add_kernel<T, true><<<grid_for(n / Vec16<T>::kN), kThreads, 0, stream>>>(yp, xp, n);
    } else {
      add_kernel<T, false><<<grid_for(n), kThreads, 0, stream>>>(yp, xp, n);
    }
    return detail::launch_status("add_inplace");
  });
}

}  // namespace weft::kernels::cuda
