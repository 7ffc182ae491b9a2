// Device building blocks of the GPU sampler (kernels/cuda/sampling.cu): the CPU sampler's
// Philox and exp bit for bit, order keys for floats, and deterministic block-wide reductions and
// scans for a block of kSampleThreads threads.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace weft::kernels::cuda::detail {

constexpr int kSampleThreads = 1024;
constexpr int kSampleWarps = kSampleThreads / 32;

// Philox4x32-10 exactly as src/sampling/rng.h (the CPU sampler's SamplingRng).
__device__ __forceinline__ uint4 philox4x32_10(uint4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint32_t hi0 = __umulhi(kMul0, ctr.x), lo0 = kMul0 * ctr.x;
    const uint32_t hi1 = __umulhi(kMul1, ctr.z), lo1 = kMul1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0);
  }
  return ctr;
}

// SamplingRng(seed, stream, step).uniform(0): 53 random bits scaled to [0, 1).
__device__ __forceinline__ double philox_uniform(uint64_t seed, uint32_t stream, uint64_t step) {
  const uint4 r = philox4x32_10(
      make_uint4(0u, static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32), stream),
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint64_t bits = (static_cast<uint64_t>(r.x >> 5) << 26) | (r.y >> 6);
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

// exp(x) for x <= 0: the CPU sampler's exp_nonpositive (Cephes expf) with the same F32
// operations, each explicitly rounded so nvcc cannot contract them into FMAs; bit-identical to
// the host (which compiles it without FMA).
__device__ __forceinline__ float exp_nonpositive(float x) {
  const bool underflow = !(x >= -87.0f);
  x = underflow ? -87.0f : x;
  const float fx = __fadd_rn(__fmul_rn(x, 1.44269504088896341f), 0.5f);
  int n = static_cast<int>(fx);
  n -= fx < static_cast<float>(n);
  const float nf = static_cast<float>(n);
  const float r =
      __fadd_rn(__fsub_rn(x, __fmul_rn(nf, 0.693359375f)), __fmul_rn(nf, 2.12194440e-4f));
  float y = 1.9875691500e-4f;
  y = __fadd_rn(__fmul_rn(y, r), 1.3981999507e-3f);
  y = __fadd_rn(__fmul_rn(y, r), 8.3334519073e-3f);
  y = __fadd_rn(__fmul_rn(y, r), 4.1665795894e-2f);
  y = __fadd_rn(__fmul_rn(y, r), 1.6666665459e-1f);
  y = __fadd_rn(__fmul_rn(y, r), 5.0000001201e-1f);
  y = __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(y, r), r), r), 1.0f);
  const float scale = __uint_as_float(static_cast<uint32_t>(n + 127) << 23);
  return underflow ? 0.0f : __fmul_rn(y, scale);
}

// Unsigned keys ordered like the floats (NaN lowest, -0.0 == +0.0).
__device__ __forceinline__ uint32_t order_key(float x) {
  if (x != x) return 0u;
  if (x == 0.0f) x = 0.0f;
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__device__ __forceinline__ float key_value(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// Running maximum with the lowest index among equal values; -inf and NaN never win.
struct ArgMax {
  float value;
  int32_t index;
  __device__ void init() {
    value = -INFINITY;
    index = INT_MAX;
  }
  __device__ void add(float v, int32_t i) {
    if (v > value || (v == value && v > -INFINITY && i < index)) {
      value = v;
      index = i;
    }
  }
  __device__ bool valid() const { return value > -INFINITY; }
};

__device__ __forceinline__ ArgMax better(const ArgMax& a, const ArgMax& b) {
  return (a.value > b.value || (a.value == b.value && a.index < b.index)) ? a : b;
}

// Online log-sum-exp: sum of exp(v - max) with its max; -inf and NaN are skipped.
struct Lse {
  float max;
  float sum;
  __device__ void init() {
    max = -INFINITY;
    sum = 0.0f;
  }
  __device__ void add(float v) {
    if (!(v > -INFINITY)) return;
    if (v > max) {
      sum = sum * expf(max - v) + 1.0f;
      max = v;
    } else {
      sum += expf(v - max);
    }
  }
};

__device__ __forceinline__ Lse combine(const Lse& a, const Lse& b) {
  if (!(a.max > -INFINITY)) return b;
  if (!(b.max > -INFINITY)) return a;
  Lse r;
  r.max = fmaxf(a.max, b.max);
  r.sum = a.sum * expf(a.max - r.max) + b.sum * expf(b.max - r.max);
  return r;
}

template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int o) {
  static_assert(sizeof(T) % 4 == 0, "shuffled types are whole 32-bit words");
  T r;
  const uint32_t* src = reinterpret_cast<const uint32_t*>(&v);
  uint32_t* dst = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(T) / 4); ++w) {
    dst[w] = __shfl_xor_sync(0xffffffffu, src[w], o);
  }
  return r;
}

// Block-wide reduction with a fixed combination order (deterministic for any op). `scratch`
// holds kSampleWarps + 1 values of T in shared memory; every thread gets the result.
template <typename T, typename Op>
__device__ T block_reduce(T v, T* scratch, Op op) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, shfl_xor(v, o));
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = scratch[lane];  // kSampleWarps == 32: every lane holds one warp's value
    for (int o = 16; o > 0; o >>= 1) w = op(w, shfl_xor(w, o));
    if (lane == 0) scratch[kSampleWarps] = w;
  }
  __syncthreads();
  const T r = scratch[kSampleWarps];
  __syncthreads();
  return r;
}

// Exclusive prefix sum over the block in thread order; *total gets the sum. `scratch` holds
// kSampleWarps + 1 values in shared memory.
__device__ __forceinline__ unsigned long long block_exclusive_scan(unsigned long long v,
                                                                   unsigned long long* scratch,
                                                                   unsigned long long* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long up = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += up;
  }
  if (lane == 31) scratch[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    const unsigned long long mine = scratch[lane];
    unsigned long long s = mine;
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned long long up = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += up;
    }
    scratch[lane] = s - mine;  // exclusive prefix of the warps before `lane`
    if (lane == 31) scratch[kSampleWarps] = s;
  }
  __syncthreads();
  const unsigned long long r = scratch[warp] + inc - v;
  *total = scratch[kSampleWarps];
  __syncthreads();
  return r;
}

}  // namespace weft::kernels::cuda::detail
