#include "weft/kernels/cuda/norm.h"

#include "ops_common.cuh"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::load16;
using detail::store16;
using detail::to_float;
using detail::Vec16;

constexpr int kRowThreads = 256;
constexpr int kHeadWarps = 8;

// One block per row. Pass 1 sums squares (and, when fused, writes the rounded residual); pass 2
// re-reads the row (each thread its own elements, so no barrier is needed for the residual it
// wrote) and scales it. kVec: the row is walked in 16-byte vectors of T.
template <typename T, typename W, bool kFused, bool kVec>
__global__ void rms_norm_kernel(const T* x, T* residual, const W* __restrict__ weight,
                                T* out, int64_t hidden, float eps) {
  __shared__ float scratch[33];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * hidden;
  T* rr = kFused ? residual + row * hidden : nullptr;
  const T* src = kFused ? rr : xr;  // what pass 2 normalises
  T* orow = out + row * hidden;
  float ss = 0.0f;
  if constexpr (kVec) {
    constexpr int kN = Vec16<T>::kN;
    for (int64_t v = threadIdx.x; v < hidden / kN; v += blockDim.x) {
      Vec16<T> a = load16(xr + v * kN);
      if constexpr (kFused) {
        const Vec16<T> b = load16(rr + v * kN);
#pragma unroll
        for (int j = 0; j < kN; ++j) a.v[j] = from_float<T>(to_float(b.v[j]) + to_float(a.v[j]));
        store16(rr + v * kN, a);
      }
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        const float f = to_float(a.v[j]);
        ss += f * f;
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
      T a = xr[i];
      if constexpr (kFused) {
        a = from_float<T>(to_float(rr[i]) + to_float(a));
        rr[i] = a;
      }
      const float f = to_float(a);
      ss += f * f;
    }
  }
  ss = detail::block_sum(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(hidden) + eps);
  if constexpr (kVec) {
    constexpr int kN = Vec16<T>::kN;
    for (int64_t v = threadIdx.x; v < hidden / kN; v += blockDim.x) {
      Vec16<T> a = load16(src + v * kN);
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        a.v[j] = from_float<T>(to_float(a.v[j]) * inv * to_float(weight[v * kN + j]));
      }
      store16(orow + v * kN, a);
    }
  } else {
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
      orow[i] = from_float<T>(to_float(src[i]) * inv * to_float(weight[i]));
    }
  }
}

// One warp per (token, head) row of head_dim values, in place.
template <typename T, typename W>
__global__ void head_rms_norm_kernel(T* x, const W* __restrict__ weight, int64_t rows, int heads,
                                     int head_dim, int64_t token_stride, float eps) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kHeadWarps + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int lane = threadIdx.x & 31;
  T* p = x + (r / heads) * token_stride + (r % heads) * static_cast<int64_t>(head_dim);
  float ss = 0.0f;
  for (int i = lane; i < head_dim; i += 32) {
    const float f = to_float(p[i]);
    ss += f * f;
  }
  ss = detail::warp_sum(ss);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32) {
    p[i] = from_float<T>(to_float(p[i]) * inv * to_float(weight[i]));
  }
}

template <bool kFused>
absl::Status launch_rms(const char* op, const void* x, void* residual, const void* weight,
                        void* out, int64_t rows, int64_t hidden, float eps, DType act,
                        DType weight_dtype, cudaStream_t stream) {
  if (rows < 0 || hidden <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": bad sizes rows=", rows, " hidden=", hidden));
  }
  if (rows == 0) return absl::OkStatus();
  return detail::dispatch_float(act, op, "activation dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return detail::dispatch_float(weight_dtype, op, "weight dtype", [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      const auto* xp = static_cast<const T*>(x);
      auto* rp = static_cast<T*>(residual);
      const auto* wp = static_cast<const W*>(weight);
      auto* op_ = static_cast<T*>(out);
      const unsigned grid = static_cast<unsigned>(rows);
      if (detail::vec16_ok<T>(hidden, x, residual, out)) {
        rms_norm_kernel<T, W, kFused, true>
            <<<grid, kRowThreads, 0, stream>>>(xp, rp, wp, op_, hidden, eps);
      } else {
        rms_norm_kernel<T, W, kFused, false>
            <<<grid, kRowThreads, 0, stream>>>(xp, rp, wp, op_, hidden, eps);
      }
      return detail::launch_status(op);
    });
  });
}

}  // namespace

absl::Status rms_norm(const void* x, const void* weight, void* out, int64_t rows, int64_t hidden,
                      float eps, DType act, DType weight_dtype, cudaStream_t stream) {
  return launch_rms<false>("rms_norm", x, nullptr, weight, out, rows, hidden, eps, act,
                           weight_dtype, stream);
}

absl::Status add_rms_norm(void* residual, const void* x, const void* weight, void* out,
                          int64_t rows, int64_t hidden, float eps, DType act, DType weight_dtype,
                          cudaStream_t stream) {
  if (residual == out && rows > 0) {
    return absl::InvalidArgumentError("add_rms_norm: out must not alias residual");
  }
  return launch_rms<true>("add_rms_norm", x, residual, weight, out, rows, hidden, eps, act,
                          weight_dtype, stream);
}

absl::Status head_rms_norm(void* x, const void* weight, int64_t tokens, int heads, int head_dim,
                           int64_t token_stride, float eps, DType act, DType weight_dtype,
                           cudaStream_t stream) {
  if (tokens < 0 || heads <= 0 || head_dim <= 0 ||
      token_stride < static_cast<int64_t>(heads) * head_dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "head_rms_norm: bad sizes tokens=", tokens, " heads=", heads, " head_dim=", head_dim,
        " token_stride=", token_stride));
  }
  if (tokens == 0) return absl::OkStatus();
  const int64_t rows = tokens * heads;
  return detail::dispatch_float(act, "head_rms_norm", "activation dtype", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return detail::dispatch_float(weight_dtype, "head_rms_norm", "weight dtype", [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      head_rms_norm_kernel<T, W>
          <<<detail::grid_1d(rows, kHeadWarps), kHeadWarps * 32, 0, stream>>>(
              static_cast<T*>(x), static_cast<const W*>(weight), rows, heads, head_dim,
              token_stride, eps);
      return detail::launch_status("head_rms_norm");
    });
  });
}

}  // namespace weft::kernels::cuda
