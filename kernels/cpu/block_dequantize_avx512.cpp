// AVX-512 twin of the reference dequantization (block_dequantize.cpp), which calls it where the
// CPU has AVX-512: the same decoder (block_unpack.h) and the same arithmetic per element,
// a * float(u - zero) then + c, rounded twice (this file too is built with -ffp-contract=off), so
// the rows are bit-identical, 16 at a time. The F32-activation path of linear_block_quantized()
// dequantizes every weight row of every call through it, so every GGUF type (Q8_0, the 4- and 5-bit
// types, Q4_K, Q5_K and Q6_K) is decoded from the block's bytes straight into registers instead of
// through unpack_block_of's buffers (SmolLM2 Q4_1 at batch 1: about 100 -> 124 tok/s on Zen 4).
// BlockQuant.DequantizeIsTheSameOnEveryPath checks the bits against the portable loop.
#include <immintrin.h>

#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_*() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/block_unpack.h"

namespace weft::kernels::cpu {

namespace {

// The 16 bytes at p as int32 lanes.
inline __m512i bytes16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// a * float(u - zero) + c for 16 values u (int32 lanes), rounded twice as the reference does.
inline __m512 dequantized16(__m512i u, __m512i zero, __m512 a, __m512 c) {
  return _mm512_add_ps(_mm512_mul_ps(a, _mm512_cvtepi32_ps(_mm512_sub_epi32(u, zero))), c);
}

// The values a block's codes can take: a * float(v - zero) + c for v = 0..15 (first) and, for
// the 5-bit types, v = 16..31 (second), each computed by dequantized16 itself, so looking a code
// up gives the bits computing it would. One table serves a whole block or sub-block: the
// per-element work is then one permute instead of a subtraction, a conversion, a product and a sum.
struct Levels {
  __m512 first, second;
};
template <bool kFiveBits>
inline Levels levels(__m512i zero, float a, float c) {
  const __m512i codes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 av = _mm512_set1_ps(a), cv = _mm512_set1_ps(c);
  Levels l;
  l.first = dequantized16(codes, zero, av, cv);
  l.second = kFiveBits ? dequantized16(_mm512_add_epi32(codes, _mm512_set1_epi32(16)), zero, av, cv)
                       : l.first;  // unused
  return l;
}

// The levels of the codes u (int32 lanes, below 16, or 32 with kFiveBits).
template <bool kFiveBits>
inline __m512 looked_up(__m512i u, const Levels& l) {
  if constexpr (kFiveBits) return _mm512_permutex2var_ps(l.first, u, l.second);
  return _mm512_permutexvar_ps(u, l.first);
}

// The 16 bytes of nibbles at p, each low nibble into lo[0..16) and each high one into hi[0..16),
// with their own levels. The 5-bit types (kFiveBits) add 16 to the lanes of fifth_lo / fifth_hi
// (their fifth bits).
template <bool kFiveBits = false>
inline void dequantize_nibbles16(const uint8_t* p, float* lo, const Levels& l_lo, float* hi,
                                 const Levels& l_hi, __mmask16 fifth_lo = 0,
                                 __mmask16 fifth_hi = 0) {
  const __m512i v = bytes16(p);
  __m512i u_lo = _mm512_and_si512(v, _mm512_set1_epi32(0x0F));
  __m512i u_hi = _mm512_srli_epi32(v, 4);
  if constexpr (kFiveBits) {
    const __m512i sixteen = _mm512_set1_epi32(16);
    u_lo = _mm512_mask_or_epi32(u_lo, fifth_lo, u_lo, sixteen);
    u_hi = _mm512_mask_or_epi32(u_hi, fifth_hi, u_hi, sixteen);
  }
  _mm512_storeu_ps(lo, looked_up<kFiveBits>(u_lo, l_lo));
  _mm512_storeu_ps(hi, looked_up<kFiveBits>(u_hi, l_hi));
}

// The nibble types (nibble_layout) straight from the block's bytes into registers: the same
// values, scale and offset as unpack_block_of writes to its buffers, without the round trip.
template <DType D>
void dequantize_nibble_row(const uint8_t* b, float* dst, int64_t n) {
  constexpr NibbleLayout L = nibble_layout<D>();
  constexpr int64_t block = 2 * L.half;
  const size_t bytes = dtype_block_bytes(D);
  const __m512i zero = _mm512_set1_epi32(unpack_zero(D));
  for (int64_t i = 0; i < n / block; ++i, b += bytes) {
    const BlockScale s = nibble_block_scale<D>(b);
    const Levels l = levels<false>(zero, s.a, s.c);
    float* out = dst + i * block;
    for (int j = 0; j < L.half; j += 16) {
      dequantize_nibbles16(b + L.values + j, out + j, l, out + L.half + j, l);
    }
  }
}

// Q5_0 / Q5_1 likewise: 16 bytes of nibbles (elements 0..15 low, 16..31 high) and a 32-bit word
// whose bit j is element j's fifth bit (unpack_5bit); Q5_0 has zero 16 and no offset, Q5_1 an F16
// scale and offset.
template <DType D>
void dequantize_5bit_row(const uint8_t* b, float* dst, int64_t n) {
  constexpr bool kOffset = D == DType::kQ5_1;
  constexpr int kHigh = kOffset ? 4 : 2;  // where qh starts; the nibbles follow it
  const size_t bytes = dtype_block_bytes(D);
  const __m512i zero = _mm512_set1_epi32(unpack_zero(D));
  for (int64_t i = 0; i < n / 32; ++i, b += bytes) {
    const Levels l = levels<true>(zero, half_at(b), kOffset ? half_at(b + 2) : 0.0f);
    const uint32_t qh = u32_at(b + kHigh);
    dequantize_nibbles16<true>(b + kHigh + 4, dst + i * 32, l, dst + i * 32 + 16, l,
                               static_cast<__mmask16>(qh), static_cast<__mmask16>(qh >> 16));
  }
}

// Q8_0 likewise: the signed bytes themselves are u - zero (u = q ^ 0x80, zero 128); the offset c
// is 0 and still added, as the reference does (it turns a -0 product into +0).
void dequantize_q8_0_row(const uint8_t* b, float* dst, int64_t n) {
  const size_t bytes = dtype_block_bytes(DType::kQ8_0);
  const __m512i none = _mm512_setzero_si512();
  const __m512 c = _mm512_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i, b += bytes) {
    const __m512 a = _mm512_set1_ps(half_at(b));
    for (int j = 0; j < 32; j += 16) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + j)));
      _mm512_storeu_ps(dst + i * 32 + j, dequantized16(q, none, a, c));
    }
  }
}

// Q4_K and Q5_K likewise: per 64 elements, 32 bytes whose low nibbles are sub-block 2j and high
// nibbles sub-block 2j + 1, each with its own scale and offset (k4_sub_block_scale); zero 0. Q5_K's
// fifth bits: bit 2j of qh[l] for element l of sub-block 2j, bit 2j + 1 for sub-block 2j + 1.
template <DType D>
void dequantize_k4_k5_row(const uint8_t* b, float* dst, int64_t n) {
  constexpr bool kFifth = D == DType::kQ5_K;
  const size_t bytes = dtype_block_bytes(D);
  const __m512i none = _mm512_setzero_si512();
  for (int64_t i = 0; i < n / 256; ++i, b += bytes) {
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + (kFifth ? 48 : 16);
    float* out = dst + i * 256;
    for (int j = 0; j < 4; ++j) {
      const BlockScale s0 = k4_sub_block_scale(b, 2 * j), s1 = k4_sub_block_scale(b, 2 * j + 1);
      const Levels l0 = levels<kFifth>(none, s0.a, s0.c), l1 = levels<kFifth>(none, s1.a, s1.c);
      for (int h = 0; h < 32; h += 16) {
        __mmask16 fifth_lo = 0, fifth_hi = 0;
        if constexpr (kFifth) {
          const __m512i high = bytes16(qh + h);
          fifth_lo = _mm512_test_epi32_mask(high, _mm512_set1_epi32(1 << (2 * j)));
          fifth_hi = _mm512_test_epi32_mask(high, _mm512_set1_epi32(2 << (2 * j)));
        }
        dequantize_nibbles16<kFifth>(qs + 32 * j + h, out + 64 * j + h, l0, out + 64 * j + 32 + h,
                                     l1, fifth_lo, fifth_hi);
      }
    }
  }
}

// Q6_K likewise (unpack_q6_k's layout): per 128 elements, 64 bytes of low nibbles and 32 of
// 2-bit high parts; element group g (of 16) has scale d * sc[g], zero 32, offset 0.
void dequantize_q6_k_row(const uint8_t* b, float* dst, int64_t n) {
  const size_t bytes = dtype_block_bytes(DType::kQ6_K);
  const __m512i zero = _mm512_set1_epi32(32);
  const __m512i low = _mm512_set1_epi32(0x0F), two = _mm512_set1_epi32(3);
  const __m512 c = _mm512_setzero_ps();
  for (int64_t i = 0; i < n / 256; ++i, b += bytes) {
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    const float d = half_at(b + 208);
    float* out = dst + i * 256;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* l0 = b + 64 * half;
      const uint8_t* h0 = b + 128 + 32 * half;
      for (int l = 0; l < 32; l += 16) {
        const __m512i lo = bytes16(l0 + l), hi = bytes16(l0 + 32 + l), qh = bytes16(h0 + l);
        const __m512i u[4] = {
            _mm512_or_si512(_mm512_and_si512(lo, low), _mm512_slli_epi32(_mm512_and_si512(qh, two), 4)),
            _mm512_or_si512(_mm512_and_si512(hi, low),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 2), two), 4)),
            _mm512_or_si512(_mm512_srli_epi32(lo, 4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 4), two), 4)),
            _mm512_or_si512(_mm512_srli_epi32(hi, 4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(qh, 6), two), 4)),
        };
        for (int q = 0; q < 4; ++q) {
          const int64_t e = 128 * half + 32 * q + l;  // the first of these 16 elements
          const __m512 a = _mm512_set1_ps(d * static_cast<float>(sc[e / 16]));
          _mm512_storeu_ps(out + e, dequantized16(u[q], zero, a, c));
        }
      }
    }
  }
}

}  // namespace

void dequantize_row_avx512(DType dtype, const void* src, float* dst, int64_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(src);
  with_block_dtype(dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if constexpr (nibble_layout<D>().half > 0) {
      dequantize_nibble_row<D>(b, dst, n);
    } else if constexpr (D == DType::kQ8_0) {
      dequantize_q8_0_row(b, dst, n);
    } else if constexpr (D == DType::kQ5_0 || D == DType::kQ5_1) {
      dequantize_5bit_row<D>(b, dst, n);
    } else if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
      dequantize_k4_k5_row<D>(b, dst, n);
    } else {
      static_assert(D == DType::kQ6_K, "a block type without an AVX-512 decoder");
      dequantize_q6_k_row(b, dst, n);
    }
  });
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
