// AVX-512 twin of the reference dequantization (block_dequantize.cpp), which calls it where the
// CPU has AVX-512: the same decoder (block_unpack.h) and the same arithmetic per element,
// a * float(u - zero) then + c, rounded twice (this file too is built with -ffp-contract=off), so
// the rows are bit-identical. Every block type is decoded from its bytes straight into registers
// (not through unpack_block_of's buffers), 16 values at a time and in element order, by its
// StepDecoder<D>; BlockQuant.DequantizeIsTheSameOnEveryPath checks the bits against the portable
// loop.
//
// Two consumers of those registers: dequantize_row_avx512 stores them (dequantize_row, and the
// exact product's tiles of more than four activation rows), dot4_dequantized_avx512 multiplies
// them into four dot products with each of up to four activation rows without storing them (the
// exact product's decode tiles, where storing and reloading the rows bounded the loop on Zen 4;
// for the 32-element nibble types through Block32, which converts their scales 16 blocks at a
// time).
#include <immintrin.h>

#include <algorithm>
#include <cassert>

#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_*() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/avx512_reduce.h"
#include "cpu/block_unpack.h"
#include "cpu/k4_scales_avx512.h"

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

// dequantized16 with the product and the sum fused into one FMA: the same bits where
// a * float(u - zero) is exact in F32 (an F16 scale times a code of at most 8 bits fits its
// 24-bit significand): rounding an exact product changes nothing, and a -0 product plus a +0
// offset is +0 either way.
inline __m512 exact_dequantized16(__m512i u, __m512i zero, __m512 a, __m512 c) {
  return _mm512_fmadd_ps(a, _mm512_cvtepi32_ps(_mm512_sub_epi32(u, zero)), c);
}

// The values a block's codes can take: a * float(v - zero) + c for v = 0..15 (first) and, for
// the 5-bit types, v = 16..31 (second), each computed by dequantized16 itself, so looking a code
// up gives the bits computing it would. One table serves a whole block or sub-block: the
// per-element work is then one permute instead of a subtraction, a conversion, a product and a sum.
struct Levels {
  __m512 first, second;
};
// kExactProducts: computed by exact_dequantized16 (the caller's a * float(v - zero) are exact),
// one FMA per table. Block32's; Q4_K / Q5_K (whose a, an F16 times a 6-bit sub-scale, would also
// qualify) measured 10% slower that way on Zen 4 and keep the product and sum.
template <bool kFiveBits, bool kExactProducts = false>
inline Levels levels(__m512i zero, float a, float c) {
  const __m512i codes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 av = _mm512_set1_ps(a), cv = _mm512_set1_ps(c);
  const auto value = [&](__m512i v) {
    return kExactProducts ? exact_dequantized16(v, zero, av, cv) : dequantized16(v, zero, av, cv);
  };
  Levels l;
  l.first = value(codes);
  l.second = kFiveBits ? value(_mm512_add_epi32(codes, _mm512_set1_epi32(16))) : l.first;  // unused
  return l;
}

// The levels of the codes u (int32 lanes, below 16, or 32 with kFiveBits).
template <bool kFiveBits>
inline __m512 looked_up(__m512i u, const Levels& l) {
  if constexpr (kFiveBits) return _mm512_permutex2var_ps(l.first, u, l.second);
  return _mm512_permutexvar_ps(u, l.first);
}

// Codes of the nibble bytes v (int32 lanes): the low nibbles, or the high ones; the 5-bit types
// add 16 in the lanes of `fifth` (their fifth bits).
template <bool kFiveBits = false>
inline __m512i nibble_codes(__m512i v, bool high, __mmask16 fifth = 0) {
  __m512i u = high ? _mm512_srli_epi32(v, 4) : _mm512_and_si512(v, _mm512_set1_epi32(0x0F));
  if constexpr (kFiveBits) u = _mm512_mask_or_epi32(u, fifth, u, _mm512_set1_epi32(16));
  return u;
}

// StepDecoder<D>::step(row, s, sink) decodes step s of a row of D (kElems elements: a block, or
// a part of a 256-element K-quant block) and calls sink(e, v) for its 16-element chunks in
// element order, e the chunk's first element in the row and v its 16 values.
template <DType D, class = void>
struct StepDecoder;

// The nibble types (nibble_layout): one block per step, its low nibbles first (elements
// 0..half-1), then its high ones, one scale and offset for the block.
template <DType D>
struct StepDecoder<D, std::enable_if_t<(nibble_layout<D>().half > 0)>> {
  static constexpr NibbleLayout L = nibble_layout<D>();
  static constexpr int64_t kElems = 2 * L.half;
  template <class Sink>
  [[gnu::always_inline]] static inline void step(const uint8_t* row, int64_t s, Sink&& sink) {
    const uint8_t* b = row + s * static_cast<int64_t>(dtype_block_bytes(D));
    const BlockScale scale = nibble_block_scale<D>(b);
    const Levels l = levels<false>(_mm512_set1_epi32(unpack_zero(D)), scale.a, scale.c);
    __m512i v[L.half / 16];
    for (int j = 0; j < L.half / 16; ++j) v[j] = bytes16(b + L.values + 16 * j);
    for (int high = 0; high < 2; ++high) {
      for (int j = 0; j < L.half / 16; ++j) {
        sink(s * kElems + high * L.half + 16 * j, looked_up<false>(nibble_codes(v[j], high), l));
      }
    }
  }
};

// Q5_0 / Q5_1: one block per step, 16 bytes of nibbles (elements 0..15 low, 16..31 high) and a
// 32-bit word whose bit j is element j's fifth bit (unpack_5bit); Q5_0 has zero 16 and no
// offset, Q5_1 an F16 scale and offset.
template <DType D>
struct StepDecoder<D, std::enable_if_t<D == DType::kQ5_0 || D == DType::kQ5_1>> {
  static constexpr int64_t kElems = 32;
  template <class Sink>
  [[gnu::always_inline]] static inline void step(const uint8_t* row, int64_t s, Sink&& sink) {
    constexpr bool kOffset = D == DType::kQ5_1;
    constexpr int kHigh = kOffset ? 4 : 2;  // where qh starts; the nibbles follow it
    const uint8_t* b = row + s * static_cast<int64_t>(dtype_block_bytes(D));
    const Levels l = levels<true>(_mm512_set1_epi32(unpack_zero(D)), half_at(b),
                                  kOffset ? half_at(b + 2) : 0.0f);
    const uint32_t qh = u32_at(b + kHigh);
    const __m512i v = bytes16(b + kHigh + 4);
    sink(s * 32, looked_up<true>(nibble_codes<true>(v, false, static_cast<__mmask16>(qh)), l));
    sink(s * 32 + 16, looked_up<true>(nibble_codes<true>(v, true, static_cast<__mmask16>(qh >> 16)), l));
  }
};

// Q8_0: the signed bytes themselves are u - zero (u = q ^ 0x80, zero 128); the offset c is 0 and
// still added, as the reference does (it turns a -0 product into +0), fused with the product
// (exact_dequantized16: an F16 scale times an 8-bit value is exact; 2048 x 2048 at batch 1 on
// the 2-core EPYC: 142-145 -> 121-124 us).
template <DType D>
struct StepDecoder<D, std::enable_if_t<D == DType::kQ8_0>> {
  static constexpr int64_t kElems = 32;
  template <class Sink>
  [[gnu::always_inline]] static inline void step(const uint8_t* row, int64_t s, Sink&& sink) {
    const uint8_t* b = row + s * static_cast<int64_t>(dtype_block_bytes(D));
    const __m512 a = _mm512_set1_ps(half_at(b));
    for (int j = 0; j < 32; j += 16) {
      const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2 + j)));
      sink(s * 32 + j, exact_dequantized16(q, _mm512_setzero_si512(), a, _mm512_setzero_ps()));
    }
  }
};

// Q4_K and Q5_K: 64 elements per step (step s is part s % 4 of block s / 4): 32 bytes whose low
// nibbles are sub-block 2j and high nibbles sub-block 2j + 1 (j = s % 4), each with its own
// scale and offset (k4_sub_block_scale); zero 0. Q5_K's fifth bits: bit 2j of qh[l] for element
// l of sub-block 2j, bit 2j + 1 for sub-block 2j + 1.
template <DType D>
struct StepDecoder<D, std::enable_if_t<D == DType::kQ4_K || D == DType::kQ5_K>> {
  static constexpr int64_t kElems = 64;
  template <class Sink>
  [[gnu::always_inline]] static inline void step(const uint8_t* row, int64_t s, Sink&& sink) {
    const uint8_t* b = row + (s / 4) * static_cast<int64_t>(dtype_block_bytes(D));
    const int j = static_cast<int>(s % 4);
    step_scaled(row, s, k4_sub_block_scale(b, 2 * j), k4_sub_block_scale(b, 2 * j + 1), sink);
  }

  // step() with its two sub-blocks' scales given (the decode tile decodes a block's eight at once).
  template <class Sink>
  [[gnu::always_inline]] static inline void step_scaled(const uint8_t* row, int64_t s, BlockScale first,
                                                        BlockScale second, Sink&& sink) {
    constexpr bool kFifth = D == DType::kQ5_K;
    const uint8_t* b = row + (s / 4) * static_cast<int64_t>(dtype_block_bytes(D));
    const int j = static_cast<int>(s % 4);
    const uint8_t* qs = b + (kFifth ? 48 : 16) + 32 * j;
    const __m512i none = _mm512_setzero_si512();
    const __m512i v[2] = {bytes16(qs), bytes16(qs + 16)};
    __mmask16 fifth[2][2] = {};  // [sub-block][h]
    if constexpr (kFifth) {
      for (int h = 0; h < 2; ++h) {
        const __m512i bits = bytes16(b + 16 + 16 * h);
        fifth[0][h] = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(1 << (2 * j)));
        fifth[1][h] = _mm512_test_epi32_mask(bits, _mm512_set1_epi32(2 << (2 * j)));
      }
    }
    for (int sub = 0; sub < 2; ++sub) {
      const BlockScale scale = sub == 0 ? first : second;
      const Levels l = levels<kFifth>(none, scale.a, scale.c);
      for (int h = 0; h < 2; ++h) {
        sink(s * 64 + 32 * sub + 16 * h,
             looked_up<kFifth>(nibble_codes<kFifth>(v[h], sub == 1, fifth[sub][h]), l));
      }
    }
  }
};

// Q6_K (unpack_q6_k's layout): 128 elements per step (step s is half n = s % 2 of block s / 2):
// 64 ql bytes and 32 qh bytes; quarter q of the half takes the low nibbles (q < 2) or high ones
// of ql[32 (q % 2) ..], with bits 2q, 2q + 1 of qh above them; each 16 elements with scale
// d * sc[group], zero 32, offset 0.
template <DType D>
struct StepDecoder<D, std::enable_if_t<D == DType::kQ6_K>> {
  static constexpr int64_t kElems = 128;
  template <class Sink>
  [[gnu::always_inline]] static inline void step(const uint8_t* row, int64_t s, Sink&& sink) {
    const uint8_t* b = row + (s / 2) * static_cast<int64_t>(dtype_block_bytes(D));
    const int n = static_cast<int>(s % 2);
    // d * sc[g] for the block's 16 groups at once (the same F32 products as one at a time).
    alignas(64) float scales[16];
    _mm512_store_ps(scales, _mm512_mul_ps(_mm512_set1_ps(half_at(b + 208)),
                                          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192))))));
    const __m512i zero = _mm512_set1_epi32(32), two = _mm512_set1_epi32(3);
    __m512i ql[2][2], qh[2];  // [q % 2][l / 16], [l / 16]
    for (int h = 0; h < 2; ++h) {
      ql[0][h] = bytes16(b + 64 * n + 16 * h);
      ql[1][h] = bytes16(b + 64 * n + 32 + 16 * h);
      qh[h] = bytes16(b + 128 + 32 * n + 16 * h);
    }
    for (int q = 0; q < 4; ++q) {
      for (int h = 0; h < 2; ++h) {
        const __m512i low = ql[q % 2][h];
        const __m512i nibble = q < 2 ? _mm512_and_si512(low, _mm512_set1_epi32(0x0F)) : _mm512_srli_epi32(low, 4);
        const __m512i high = _mm512_and_si512(_mm512_srli_epi32(qh[h], 2 * q), two);
        const int group = 8 * n + 2 * q + h;  // (128 n + 32 q + 16 h) / 16
        const __m512 a = _mm512_set1_ps(scales[group]);
        sink(s * 128 + 32 * q + 16 * h, dequantized16(_mm512_or_si512(nibble, _mm512_slli_epi32(high, 4)),
                                                      zero, a, _mm512_setzero_ps()));
      }
    }
  }
};

// The 32-element nibble types with F16 fields (Q4_0, Q4_1, Q5_0, Q5_1), for the decode tile's
// dot products: their blocks' scales (and offsets) are converted 16 blocks at a time, one gather
// and one vcvtph2ps per row and field, not a scalar conversion and a register broadcast per
// block; a block's levels are one FMA per table (levels' kExactProducts). Measured on the 2-core EPYC (kernels_bench
// BM_LinearBlockExact, batch 1, 2048 x 2048): Q4_1 180 -> 160 us, Q5_1 212 -> 199 us, Q4_0 and
// Q5_0 unchanged; Q8_0 (no levels: a product per element) was 15% slower this way and keeps
// StepDecoder.
template <DType D>
struct Block32 {
  static_assert(D == DType::kQ4_0 || D == DType::kQ4_1 || D == DType::kQ5_0 || D == DType::kQ5_1);
  static constexpr int64_t kBytes = static_cast<int64_t>(dtype_block_bytes(D));
  static constexpr bool kOffset = D == DType::kQ4_1 || D == DType::kQ5_1;
  static constexpr bool kFive = D == DType::kQ5_0 || D == DType::kQ5_1;
  static constexpr int kChunk = 16;  // blocks whose scales are converted at once

  // a[b], c[b] for the first `count` (<= kChunk) blocks at `blocks` (0 past them; nothing read
  // there), c 0 for the types without an offset: each block's first dword holds its F16 scale,
  // then (Q4_1, Q5_1) its F16 offset.
  [[gnu::always_inline]] static inline void scales(const uint8_t* blocks, int count, float* a, float* c) {
    const __m512i at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(kBytes)));
    const __mmask16 live = static_cast<__mmask16>((1u << count) - 1);
    const __m512i fields = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, at, blocks, 1);
    _mm512_store_ps(a, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(fields)));
    _mm512_store_ps(c, kOffset ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(fields, 16)))
                               : _mm512_setzero_ps());
  }

  // sink(e, v) for the block at b's two 16-element chunks (e = 0, 16), its scale a, offset c.
  template <class Sink>
  [[gnu::always_inline]] static inline void block(const uint8_t* b, float a, float c, Sink&& sink) {
    const Levels l = levels<kFive, true>(_mm512_set1_epi32(unpack_zero(D)), a, c);
    if constexpr (kFive) {
      const int qh_at = kOffset ? 4 : 2;  // Q5_*: qh, then the nibbles
      const uint32_t qh = u32_at(b + qh_at);
      const __m512i v = bytes16(b + qh_at + 4);
      sink(0, looked_up<true>(nibble_codes<true>(v, false, static_cast<__mmask16>(qh)), l));
      sink(16, looked_up<true>(nibble_codes<true>(v, true, static_cast<__mmask16>(qh >> 16)), l));
    } else {
      const __m512i v = bytes16(b + nibble_layout<D>().values);
      sink(0, looked_up<false>(nibble_codes(v, false), l));
      sink(16, looked_up<false>(nibble_codes(v, true), l));
    }
  }
};

template <DType D>
constexpr bool kBlock32 = D == DType::kQ4_0 || D == DType::kQ4_1 || D == DType::kQ5_0 ||
                          D == DType::kQ5_1;

// The accumulators of dot4_dequantized_avx512: acc[i][r] for activation row i and weight row r,
// each summing its products lane by lane in element order.
template <int MR>
struct Dot4Sums {
  __m512 acc[MR][4];
  const float* x[MR];
  // Adds weight row r's 16 decoded values v at elements [e, e + 16) times each activation row's.
  [[gnu::always_inline]] void add(int r, int64_t e, __m512 v) {
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) acc[i][r] = _mm512_fmadd_ps(_mm512_loadu_ps(x[i] + e), v, acc[i][r]);
  }
};

// dot4_dequantized_avx512 for Q4_K / Q5_K: each block's eight sub-block scales decoded at once
// per row (k4_group_scales), not two per step with scalar code.
template <DType D, int MR>
void dot4_k4(const uint8_t* const* rows, int64_t n, Dot4Sums<MR>& sums) {
  using Decoder = StepDecoder<D>;
  constexpr int64_t kBytes = static_cast<int64_t>(dtype_block_bytes(D));
  alignas(64) float a[4][16], c[4][16];  // per group of 16: sub-block g / 2's
  for (int64_t block = 0; block < n / 256; ++block) {
    for (int r = 0; r < 4; ++r) k4_group_scales(rows[r] + block * kBytes, a[r], c[r]);
    for (int j = 0; j < 4; ++j) {
      const int64_t s = 4 * block + j;
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        // A step is 36 or 44 bytes: a line ahead per step.
        _mm_prefetch(reinterpret_cast<const char*>(rows[r]) + block * kBytes + j * kBytes / 4 + kWeightPrefetchBytes,
                     _MM_HINT_T0);
        Decoder::step_scaled(rows[r], s, BlockScale{a[r][4 * j], c[r][4 * j]},
                             BlockScale{a[r][4 * j + 2], c[r][4 * j + 2]},
                             [&](int64_t e, __m512 v) __attribute__((always_inline)) { sums.add(r, e, v); });
      }
    }
  }
}

// dot4_dequantized_avx512 for the Block32 types, block by block.
template <DType D, int MR>
void dot4_block32(const uint8_t* const* rows, int64_t n, Dot4Sums<MR>& sums) {
  using B = Block32<D>;
  alignas(64) float a[4][B::kChunk], c[4][B::kChunk];
  const int64_t blocks = n / 32;
  for (int64_t b0 = 0; b0 < blocks; b0 += B::kChunk) {
    const int count = static_cast<int>(std::min<int64_t>(B::kChunk, blocks - b0));
    for (int r = 0; r < 4; ++r) B::scales(rows[r] + b0 * B::kBytes, count, a[r], c[r]);
    for (int b = 0; b < count; ++b) {
      const int64_t e0 = (b0 + b) * 32;
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const uint8_t* block = rows[r] + (b0 + b) * B::kBytes;
        _mm_prefetch(reinterpret_cast<const char*>(block) + kWeightPrefetchBytes, _MM_HINT_T0);  // a block < 64 bytes
        B::block(block, a[r][b], c[r][b],
                 [&](int64_t e, __m512 v) __attribute__((always_inline)) { sums.add(r, e0 + e, v); });
      }
    }
  }
}

template <int MR>
void dot4_rows(DType dtype, const uint8_t* const* rows, const float* const* x, int64_t n,
               float* const* out) {
  Dot4Sums<MR> sums;
  for (int i = 0; i < MR; ++i) {
    sums.x[i] = x[i];
    for (int r = 0; r < 4; ++r) sums.acc[i][r] = _mm512_setzero_ps();
  }
  with_block_dtype(dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    using Decoder = StepDecoder<D>;
    // Each row fetches its bytes kWeightPrefetchBytes ahead as it goes, a line or two per step.
    const int64_t kStepBytes =
        Decoder::kElems * static_cast<int64_t>(dtype_block_bytes(D)) / dtype_block_elems(D);
    if constexpr (kBlock32<D>) {
      dot4_block32<D>(rows, n, sums);
      return;
    } else if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
      dot4_k4<D>(rows, n, sums);
      return;
    }
    for (int64_t s = 0; s < n / Decoder::kElems; ++s) {
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        const char* ahead = reinterpret_cast<const char*>(rows[r]) + s * kStepBytes + kWeightPrefetchBytes;
        _mm_prefetch(ahead, _MM_HINT_T0);
        if (kStepBytes > 64) _mm_prefetch(ahead + 64, _MM_HINT_T0);
        Decoder::step(rows[r], s, [&](int64_t e, __m512 v) __attribute__((always_inline)) { sums.add(r, e, v); });
      }
    }
  });
  for (int i = 0; i < MR; ++i) {
    _mm_storeu_ps(out[i], reduce4(sums.acc[i][0], sums.acc[i][1], sums.acc[i][2], sums.acc[i][3]));
  }
}

}  // namespace

void dequantize_row_avx512(DType dtype, const void* src, float* dst, int64_t n) {
  const uint8_t* row = static_cast<const uint8_t*>(src);
  with_block_dtype(dtype, [&](auto d) {
    using Decoder = StepDecoder<decltype(d)::value>;
    for (int64_t s = 0; s < n / Decoder::kElems; ++s) {
      Decoder::step(row, s, [&](int64_t e, __m512 v) __attribute__((always_inline)) {
        _mm512_storeu_ps(dst + e, v);
      });
    }
  });
}

void dot4_dequantized_avx512(DType dtype, const uint8_t* const* rows, const float* const* x,
                             int rows_x, int64_t n, float* const* out) {
  switch (rows_x) {
    case 1: return dot4_rows<1>(dtype, rows, x, n, out);
    case 2: return dot4_rows<2>(dtype, rows, x, n, out);
    case 3: return dot4_rows<3>(dtype, rows, x, n, out);
    case 4: return dot4_rows<4>(dtype, rows, x, n, out);
    default: assert(false && "dot4_dequantized_avx512: rows_x must be 1 to kDot4MaxRows");
  }
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
