#include "weft/kernels/cuda/rope_kv_cache.h"

#include "ops_common.cuh"

namespace weft::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr int kThreads = 256;
constexpr int kMaxHeadDim = 1024;

// C consecutive elements of T: 16 bytes in the vectorised instantiation, one element otherwise.
template <typename T, int C>
struct alignas(C * sizeof(T)) Chunk {
  T v[C];
};

template <typename T, int C>
__device__ __forceinline__ Chunk<T, C> load_chunk(const T* p) {
  return *reinterpret_cast<const Chunk<T, C>*>(p);
}
template <typename T, int C>
__device__ __forceinline__ void store_chunk(T* p, const Chunk<T, C>& c) {
  *reinterpret_cast<Chunk<T, C>*>(p) = c;
}

// One block per token: the token's cos/sin table goes to shared memory, then the block walks
// (head, chunk of C rotary pairs) over q heads followed by k heads, then copies v.
template <typename T, int C>
__global__ void rope_kv_kernel(RopeKvCacheArgs a) {
  __shared__ float cos_s[kMaxHeadDim / 2];
  __shared__ float sin_s[kMaxHeadDim / 2];
  const int64_t t = blockIdx.x;
  const int d = a.head_dim, half = d / 2;
  const float pos = static_cast<float>(a.positions[t]);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    float s, c;
    sincosf(pos * a.inv_freq[i], &s, &c);  // full-precision sincos (range reduction for big angles)
    cos_s[i] = c * a.attention_scaling;
    sin_s[i] = s * a.attention_scaling;
  }
  __syncthreads();
  const int64_t slot = a.slots != nullptr ? a.slots[t] : -1;
  const int chunks = half / C;
  const int rot_units = (a.num_heads + a.num_kv_heads) * chunks;
  T* q = static_cast<T*>(a.q) + t * a.q_stride;
  T* k = static_cast<T*>(a.k) + t * a.k_stride;
  const int64_t kv_row = static_cast<int64_t>(a.num_kv_heads) * d;
  for (int u = threadIdx.x; u < rot_units; u += blockDim.x) {
    const int h = u / chunks;
    const int i = (u - h * chunks) * C;
    const bool is_k = h >= a.num_heads;
    const int kh = h - a.num_heads;
    T* x = is_k ? k + static_cast<int64_t>(kh) * d : q + static_cast<int64_t>(h) * d;
    const Chunk<T, C> x1 = load_chunk<T, C>(x + i), x2 = load_chunk<T, C>(x + i + half);
    Chunk<T, C> y1, y2;
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const float a1 = to_float(x1.v[j]), a2 = to_float(x2.v[j]);
      const float c = cos_s[i + j], s = sin_s[i + j];
      y1.v[j] = from_float<T>(a1 * c - a2 * s);
      y2.v[j] = from_float<T>(a2 * c + a1 * s);
    }
    store_chunk<T, C>(x + i, y1);
    store_chunk<T, C>(x + i + half, y2);
    if (is_k && slot >= 0) {
      T* dst = static_cast<T*>(a.k_cache) + slot * kv_row + static_cast<int64_t>(kh) * d;
      store_chunk<T, C>(dst + i, y1);
      store_chunk<T, C>(dst + i + half, y2);
    }
  }
  if (slot < 0) return;
  const T* v = static_cast<const T*>(a.v) + t * a.v_stride;
  T* vdst = static_cast<T*>(a.v_cache) + slot * kv_row;
  const int v_chunks = d / C;
  for (int u = threadIdx.x; u < a.num_kv_heads * v_chunks; u += blockDim.x) {
    const int h = u / v_chunks;
    const int64_t off = static_cast<int64_t>(h) * d + (u - h * v_chunks) * C;
    store_chunk<T, C>(vdst + off, load_chunk<T, C>(v + off));
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

absl::Status rope_and_write_kv_cache(const RopeKvCacheArgs& a, cudaStream_t stream) {
  const char* op = "rope_and_write_kv_cache";
  if (a.tokens < 0 || a.num_heads < 0 || a.num_kv_heads < 0 || a.head_dim <= 0 ||
      a.head_dim % 2 != 0 || a.head_dim > kMaxHeadDim) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": bad sizes tokens=", a.tokens, " num_heads=", a.num_heads,
                     " num_kv_heads=", a.num_kv_heads, " head_dim=", a.head_dim,
                     " (head_dim must be even and at most ", kMaxHeadDim, ")"));
  }
  const int64_t q_row = static_cast<int64_t>(a.num_heads) * a.head_dim;
  const int64_t kv_row = static_cast<int64_t>(a.num_kv_heads) * a.head_dim;
  if (a.q_stride < q_row || a.k_stride < kv_row || (a.slots != nullptr && a.v_stride < kv_row)) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": strides q=", a.q_stride, " k=",
                                                   a.k_stride, " v=", a.v_stride,
                                                   " are shorter than their rows"));
  }
  if (a.tokens == 0) return absl::OkStatus();
  if ((a.num_heads > 0 && a.q == nullptr) || (a.num_kv_heads > 0 && a.k == nullptr) ||
      a.positions == nullptr || a.inv_freq == nullptr ||
      (a.slots != nullptr && (a.v == nullptr || a.k_cache == nullptr || a.v_cache == nullptr))) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": a required pointer is null"));
  }
  return detail::dispatch_float(a.act, op, "act", [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr int kN = 16 / sizeof(T);
    const int64_t es = sizeof(T);
    const bool vec = (a.head_dim / 2) % kN == 0 && aligned16(a.q) && aligned16(a.k) &&
                     aligned16(a.v) && aligned16(a.k_cache) && aligned16(a.v_cache) &&
                     (a.q_stride * es) % 16 == 0 && (a.k_stride * es) % 16 == 0 &&
                     (a.v_stride * es) % 16 == 0;
    const unsigned grid = static_cast<unsigned>(a.tokens);
    if (vec) {
      rope_kv_kernel<T, kN><<<grid, kThreads, 0, stream>>>(a);
    } else {
      rope_kv_kernel<T, 1><<<grid, kThreads, 0, stream>>>(a);
    }
    return detail::launch_status("rope_and_write_kv_cache");
  });
}

}  // namespace weft::kernels::cuda
