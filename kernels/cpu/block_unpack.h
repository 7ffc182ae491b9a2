// Private to kernels/cpu: the one decoder of block-quantized bytes (core/dtype.h layouts). Every
// type is read into a common form for a row of n elements:
//
//   w[t] = a[t / 16] * (u[t] - zero) + c[t / 16]
//
// u: one unsigned byte per element (0..255); a, c: an F32 scale and offset per group of 16
// elements (Q6_K has a scale per 16; the others repeat theirs over 2, 4 or 8 groups); zero: a
// constant of the type (8 for Q4_0, 16 for Q5_0, 32 for Q6_K, 128 for Q8_0 whose signed values are
// stored offset by 128, 0 for the types with a minimum). Evaluated in that order (integer
// difference, product, sum) it is bit-exact with ggml's dequantize_row_* (block_dequantize.cpp,
// compiled without FMA contraction); the linear kernels take u as int8 dot-product operands.
//
// Internal linkage: each kernel translation unit includes this after its `#pragma GCC target` so
// the loops are vectorized for that file's instruction set.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/dtype.h"
#include "core/half.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kUnpackGroup = 16;

inline int unpack_zero(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0: return 128;
    case DType::kQ4_0: return 8;
    case DType::kQ5_0: return 16;
    case DType::kQ6_K: return 32;
    default: return 0;
  }
}

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return f16_to_float(h);
}

inline float f32_at(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline uint32_t u32_at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;  // little-endian hosts only, as GGUF files are
}

inline void fill_groups(float* a, float* c, int groups, float av, float cv) {
  for (int g = 0; g < groups; ++g) {
    a[g] = av;
    c[g] = cv;
  }
}

// Q4_0 / Q4_1 / I4G*: `half` bytes of nibbles (a multiple of 16), low nibbles first half, high
// nibbles second. In SSE2 (every x86-64 has it) 16 bytes at a time: the compilers' own
// vectorization of the byte loop runs slower than scalar code at these lengths.
inline void unpack_nibbles(const uint8_t* qs, int half, uint8_t* u) {
#if defined(__SSE2__)
  const __m128i low = _mm_set1_epi8(0x0F);
  for (int j = 0; j < half; j += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(u + j), _mm_and_si128(v, low));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(u + half + j),
                     _mm_and_si128(_mm_srli_epi16(v, 4), low));
  }
#else
  for (int j = 0; j < half; ++j) {
    u[j] = qs[j] & 0x0F;
    u[j + half] = qs[j] >> 4;
  }
#endif
}

// Q8_0: the 32 signed values offset by 128 (u = q ^ 0x80).
inline void unpack_offset_bytes(const uint8_t* q, uint8_t* u) {
#if defined(__SSE2__)
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
  for (int j = 0; j < 32; j += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(u + j), _mm_xor_si128(v, flip));
  }
#else
  for (int t = 0; t < 32; ++t) u[t] = static_cast<uint8_t>(q[t] ^ 0x80u);
#endif
}

// Q5_0 / Q5_1: 32 nibbles plus a fifth bit per element from qh (bit j for element j).
inline void unpack_5bit(const uint8_t* qh_bytes, const uint8_t* qs, uint8_t* u) {
  unpack_nibbles(qs, 16, u);
  const uint32_t qh = u32_at(qh_bytes);
#if defined(__SSE2__)
  // Byte j of each half gets qh's byte j / 8, then its bit j % 8 becomes 16 or 0.
  const __m128i v = _mm_cvtsi32_si128(static_cast<int>(qh));
  const __m128i b2 = _mm_unpacklo_epi8(v, v);     // b0 b0 b1 b1 b2 b2 b3 b3
  const __m128i b4 = _mm_unpacklo_epi16(b2, b2);  // b0 x4, b1 x4, b2 x4, b3 x4
  const __m128i bits = _mm_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m128i sixteen = _mm_set1_epi8(16);
  const __m128i halves[2] = {_mm_unpacklo_epi32(b4, b4), _mm_unpackhi_epi32(b4, b4)};
  for (int h = 0; h < 2; ++h) {
    const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(halves[h], bits), bits);
    __m128i* out = reinterpret_cast<__m128i*>(u + 16 * h);
    _mm_storeu_si128(out, _mm_or_si128(_mm_loadu_si128(out), _mm_and_si128(set, sixteen)));
  }
#else
  for (int j = 0; j < 32; ++j) u[j] = static_cast<uint8_t>(u[j] | (((qh >> j) & 1u) << 4));
#endif
}

// Q5_K: u[l] += 16 where qh[l] has bit `mask` (l < 32).
inline void add_k5_high_bits(const uint8_t* qh, uint8_t mask, uint8_t* u) {
#if defined(__SSE2__)
  const __m128i m = _mm_set1_epi8(static_cast<char>(mask));
  const __m128i sixteen = _mm_set1_epi8(16);
  for (int l = 0; l < 32; l += 16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qh + l));
    const __m128i set = _mm_cmpeq_epi8(_mm_and_si128(h, m), m);
    __m128i* out = reinterpret_cast<__m128i*>(u + l);
    _mm_storeu_si128(out, _mm_add_epi8(_mm_loadu_si128(out), _mm_and_si128(set, sixteen)));
  }
#else
  for (int l = 0; l < 32; ++l) u[l] = static_cast<uint8_t>(u[l] + ((qh[l] & mask) ? 16 : 0));
#endif
}

// Q4_K / Q5_K: the 6-bit scale and minimum of sub-block j (0..7) from the 12 packed bytes.
inline void k_scale_min(int j, const uint8_t* q, int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

struct BlockScale {
  float a = 0.0f;
  float c = 0.0f;
};

// Q4_K / Q5_K sub-block j (0..7) of the block at b: a = d * scale, c = -(dmin * min).
inline BlockScale k4_sub_block_scale(const uint8_t* b, int j) {
  int scale, min;
  k_scale_min(j, b + 4, scale, min);
  return {half_at(b) * static_cast<float>(scale), -(half_at(b + 2) * static_cast<float>(min))};
}

// Q4_K and Q5_K (qh null for Q4_K): 8 sub-blocks of 32, a and c from k4_sub_block_scale.
inline void unpack_k4_k5(const uint8_t* b, const uint8_t* __restrict qh,
                         const uint8_t* __restrict qs, uint8_t* __restrict u, float* a, float* c) {
  for (int j = 0; j < 4; ++j) {
    uint8_t* out = u + 64 * j;
    unpack_nibbles(qs + 32 * j, 32, out);
    if (qh != nullptr) {
      add_k5_high_bits(qh, static_cast<uint8_t>(1u << (2 * j)), out);
      add_k5_high_bits(qh, static_cast<uint8_t>(2u << (2 * j)), out + 32);
    }
    for (int s = 0; s < 2; ++s) {
      const BlockScale sub = k4_sub_block_scale(b, 2 * j + s);
      fill_groups(a + 4 * j + 2 * s, c + 4 * j + 2 * s, 2, sub.a, sub.c);
    }
  }
}

inline void unpack_q6_k(const uint8_t* __restrict b, uint8_t* __restrict u, float* a, float* c) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half_at(b + 208);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* l0 = ql + 64 * n;
    const uint8_t* h0 = qh + 32 * n;
    uint8_t* out = u + 128 * n;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<uint8_t>((l0[l] & 0x0F) | ((h0[l] & 3) << 4));
      out[l + 32] = static_cast<uint8_t>((l0[l + 32] & 0x0F) | (((h0[l] >> 2) & 3) << 4));
      out[l + 64] = static_cast<uint8_t>((l0[l] >> 4) | (((h0[l] >> 4) & 3) << 4));
      out[l + 96] = static_cast<uint8_t>((l0[l + 32] >> 4) | (((h0[l] >> 6) & 3) << 4));
    }
  }
  // Element group g (of 16) takes sub-scale g: ggml's y[l + 32 i] uses sc[l / 16 + 2 i].
  for (int g = 0; g < 16; ++g) {
    a[g] = d * static_cast<float>(sc[g]);
    c[g] = 0.0f;
  }
}

// The 4-bit types whose block is one scale a and one offset c over packed nibbles (Q4_0, Q4_1,
// I4G*, I4G*F): where the nibbles start in the block and how many bytes they take (unpack_nibbles'
// `half`: the low nibbles are the block's first `half` elements, the high ones the next `half`);
// half 0 for every other type.
struct NibbleLayout {
  int values = 0;
  int half = 0;
};
template <DType D>
constexpr NibbleLayout nibble_layout() {
  switch (D) {
    case DType::kQ4_0: return {2, 16};
    case DType::kQ4_1: return {4, 16};
    case DType::kI4G64: return {4, 32};
    case DType::kI4G128: return {4, 64};
    case DType::kI4G32F: return {8, 16};
    case DType::kI4G64F: return {8, 32};
    case DType::kI4G128F: return {8, 64};
    default: return {};
  }
}

// a and c of a nibble_layout type's block: F16 fields (F32 for I4G*F), Q4_0 without an offset.
template <DType D>
inline BlockScale nibble_block_scale(const uint8_t* b) {
  if constexpr (D == DType::kQ4_0) return {half_at(b), 0.0f};
  if constexpr (D == DType::kI4G32F || D == DType::kI4G64F || D == DType::kI4G128F) {
    return {f32_at(b), f32_at(b + 4)};
  }
  return {half_at(b), half_at(b + 2)};
}

// One block of D at b: its dtype_block_elems(D) values into u, its groups into a and c.
template <DType D>
inline void unpack_block_of(const uint8_t* b, uint8_t* u, float* a, float* c) {
  if constexpr (D == DType::kQ8_0) {
    unpack_offset_bytes(b + 2, u);
    fill_groups(a, c, 2, half_at(b), 0.0f);
  } else if constexpr (nibble_layout<D>().half > 0) {
    constexpr NibbleLayout L = nibble_layout<D>();
    unpack_nibbles(b + L.values, L.half, u);
    const BlockScale s = nibble_block_scale<D>(b);
    fill_groups(a, c, 2 * L.half / kUnpackGroup, s.a, s.c);
  } else if constexpr (D == DType::kQ5_0) {
    unpack_5bit(b + 2, b + 6, u);
    fill_groups(a, c, 2, half_at(b), 0.0f);
  } else if constexpr (D == DType::kQ5_1) {
    unpack_5bit(b + 4, b + 8, u);
    fill_groups(a, c, 2, half_at(b), half_at(b + 2));
  } else if constexpr (D == DType::kQ4_K) {
    unpack_k4_k5(b, nullptr, b + 16, u, a, c);
  } else if constexpr (D == DType::kQ5_K) {
    unpack_k4_k5(b, b + 16, b + 48, u, a, c);
  } else if constexpr (D == DType::kQ6_K) {
    unpack_q6_k(b, u, a, c);
  }
}

// Calls f(std::integral_constant<DType, D>) for the block-quantized dtype D == dtype: the one
// switch over the types, so the loops inside f are compiled per type.
template <class F>
inline void with_block_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kQ8_0: return f(std::integral_constant<DType, DType::kQ8_0>{});
    case DType::kQ4_0: return f(std::integral_constant<DType, DType::kQ4_0>{});
    case DType::kQ4_1: return f(std::integral_constant<DType, DType::kQ4_1>{});
    case DType::kQ5_0: return f(std::integral_constant<DType, DType::kQ5_0>{});
    case DType::kQ5_1: return f(std::integral_constant<DType, DType::kQ5_1>{});
    case DType::kQ4_K: return f(std::integral_constant<DType, DType::kQ4_K>{});
    case DType::kQ5_K: return f(std::integral_constant<DType, DType::kQ5_K>{});
    case DType::kQ6_K: return f(std::integral_constant<DType, DType::kQ6_K>{});
    case DType::kI4G64: return f(std::integral_constant<DType, DType::kI4G64>{});
    case DType::kI4G128: return f(std::integral_constant<DType, DType::kI4G128>{});
    case DType::kI4G32F: return f(std::integral_constant<DType, DType::kI4G32F>{});
    case DType::kI4G64F: return f(std::integral_constant<DType, DType::kI4G64F>{});
    case DType::kI4G128F: return f(std::integral_constant<DType, DType::kI4G128F>{});
    default: return;
  }
}

inline void unpack_block(DType dtype, const uint8_t* b, uint8_t* u, float* a, float* c) {
  with_block_dtype(dtype, [&](auto d) { unpack_block_of<decltype(d)::value>(b, u, a, c); });
}

// A row of n elements (n a multiple of the block) at src: u[0..n), a and c [0..n / 16).
template <DType D>
inline void unpack_row_of(const void* src, int64_t n, uint8_t* u, float* a, float* c) {
  const int64_t block = dtype_block_elems(D);
  const size_t bytes = dtype_block_bytes(D);
  const int64_t groups = block / kUnpackGroup;
  const uint8_t* b = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n / block; ++i) {
    unpack_block_of<D>(b + i * bytes, u + i * block, a + i * groups, c + i * groups);
  }
}

}  // namespace
}  // namespace weft::kernels::cpu
