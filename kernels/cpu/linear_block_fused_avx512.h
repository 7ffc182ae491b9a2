// Private to kernels/cpu: block-quantized weight rows decoded in registers, 64 elements at a time,
// for the AVX512-VNNI tiles of linear_block_quantized() (linear_block_panels_avx512vnni.h's
// quad_tile, which reads four rows side by side, each through one of these).
//
// FusedRow<D>::load (or, for the types whose F16 scales quad_tile converts four rows at a time,
// quants() and halves()) gives the tile's operands straight from the row's blocks: the same u bytes,
// the same scales a and the same folded offsets c as a row decoded by unpack_row_of with
// block_rows_of's fold (VNNI reads u unsigned, so the fold adds -zero * a, an exact product, and
// a product plus a sum round once either way), so a row's result is bit-identical whichever
// decoded it.
//
// Element layouts are core/dtype.h's (ggml's block formats); block_unpack.h is the reference
// decoder these follow (its comments give the layouts). Include after the file's target pragma.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "cpu/block_unpack.h"
#include "cpu/k4_scales_avx512.h"
#include "cpu/linear_block.h"

namespace weft::kernels::cpu {
namespace {

inline uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// The F16 values at p0 and p1 as one word: p0's in bits 0-15.
inline uint32_t halves_at(const uint8_t* p0, const uint8_t* p1) {
  return u16_at(p0) | (uint32_t{u16_at(p1)} << 16);
}

// [f(h0), f(h0), f(h1), f(h1)] for the F16 values at p0 and p1 (exact, as half_at).
inline __m128 halves_pair(const uint8_t* p0, const uint8_t* p1) {
  const __m128i v = _mm_cvtsi32_si128(static_cast<int>(halves_at(p0, p1)));
  return _mm_cvtph_ps(_mm_unpacklo_epi16(v, v));
}

// [x0, x0, x1, x1] for the F32 values at p0 and p1.
inline __m128 floats_pair(const uint8_t* p0, const uint8_t* p1) {
  const float x0 = f32_at(p0), x1 = f32_at(p1);
  return _mm_setr_ps(x0, x0, x1, x1);
}

inline __m512i low_nibbles(__m512i v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }

// The 16 nibble bytes of two 32-element blocks as [lo(q0), hi(q0), lo(q1), hi(q1)]: elements
// 0..15 of a block are its low nibbles, 16..31 its high ones.
inline __m512i two_blocks_of_nibbles(const uint8_t* q0, const uint8_t* q1) {
  // [q0, q0, q1, q1] from two broadcast loads (no lane-crossing permute), then 128-bit lanes 1
  // and 3 (dwords 4-7 and 12-15) shifted to their high nibbles.
  const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q0)));
  const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q1)));
  const __m512i twice = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  return low_nibbles(_mm512_mask_srli_epi32(twice, 0xF0F0, twice, 4));
}

// 32 nibble bytes as [lo(q) | hi(q)]: 64 elements whose first 32 are the low nibbles.
inline __m512i nibbles_low_then_high(const uint8_t* q) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  return low_nibbles(_mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1));
}

// Q5_0 / Q5_1: 16 added to element j of each block where bit j of its 32-bit qh is set.
inline __m512i add_fifth_bits(__m512i u, const uint8_t* qh0, const uint8_t* qh1) {
  const __mmask64 bits = u32_at(qh0) | (uint64_t{u32_at(qh1)} << 32);
  return _mm512_mask_add_epi8(u, bits, u, _mm512_set1_epi8(16));
}

// The weight row of one output, read 64 elements per load() in order t = 0, 64, ... (the caller
// fetches ahead: it reads several rows side by side).
template <DType D>
class FusedRow {
 public:
  // A step of 64 elements covers whole blocks (two of 32, one of 64), or a block covers several
  // steps (128, 256), whose per-group scales are then decoded once at the block's first step.
  static constexpr int64_t kBlockElems = dtype_block_elems(D);
  static constexpr size_t kBlockBytes = dtype_block_bytes(D);
  static constexpr DType kDType = D;

  // The types whose scales quad_tile reads for four rows at once, through quants() and
  // halves(), converting all their F16 values in one instruction, rather than through load():
  // - kPairedF16Blocks: a 64-element step is two blocks, each with an F16 scale at byte 0 and
  //   (kHasMinimum) an F16 minimum at byte 2;
  // - kWholeBlockF16: a block is whole steps (I4G64, I4G128), its F16 scale and minimum at
  //   bytes 0 and 2 for every group.
  static constexpr bool kPairedF16Blocks = kBlockElems == 32 && D != DType::kI4G32F;
  static constexpr bool kWholeBlockF16 = D == DType::kI4G64 || D == DType::kI4G128;
  static constexpr bool kHasMinimum = D == DType::kQ4_1 || D == DType::kQ5_1;

  explicit FusedRow(const uint8_t* row) : row_(row) {}

  // The u bytes of the step at t (the types quad_tile reads through quants()).
  [[gnu::always_inline]] __m512i quants(int64_t t) const {
    if constexpr (kWholeBlockF16) {
      return block_step_bytes(row_ + static_cast<size_t>(t / kBlockElems) * kBlockBytes,
                              static_cast<int>((t % kBlockElems) / 64));
    } else {
      return two_block_quants(t);
    }
  }

  // kPairedF16Blocks: the F16 bits at byte `offset` (0: scale, 2: minimum) of the step's two
  // blocks, the first block's in bits 0-15. kWholeBlockF16: the step's block's scale (bits
  // 0-15) and minimum (16-31); `offset` 0.
  [[gnu::always_inline]] uint32_t halves(int64_t t, int offset) const {
    static_assert(kPairedF16Blocks || kWholeBlockF16);
    const uint8_t* b0 = row_ + static_cast<size_t>(t / kBlockElems) * kBlockBytes + offset;
    if constexpr (kWholeBlockF16) return u32_at(b0);
    return halves_at(b0, b0 + kBlockBytes);
  }

  [[gnu::always_inline]] void load(int64_t t, __m512i& w, __m128& a4, __m128& c4) {
    __m128 base_c;
    if constexpr (kBlockElems == 32) {
      const uint8_t* b0 = row_ + static_cast<size_t>(t / 32) * kBlockBytes;
      const uint8_t* b1 = b0 + kBlockBytes;
      w = two_block_quants(t);
      if constexpr (D == DType::kI4G32F) {
        a4 = floats_pair(b0, b1);
        base_c = floats_pair(b0 + 4, b1 + 4);
      } else {
        a4 = halves_pair(b0, b1);
        base_c = kHasMinimum ? halves_pair(b0 + 2, b1 + 2) : _mm_setzero_ps();
      }
    } else {
      const int step = static_cast<int>((t % kBlockElems) / 64);
      if (step == 0) start_block(row_ + static_cast<size_t>(t / kBlockElems) * kBlockBytes);
      w = block_step_bytes(block_, step);
      a4 = _mm_loadu_ps(a_ + 4 * step);
      base_c = _mm_loadu_ps(c_ + 4 * step);
    }
    c4 = _mm_fmadd_ps(_mm_set1_ps(static_cast<float>(-unpack_zero(D))), a4, base_c);
  }

 private:
  // A 32-element type's u bytes of the step at t: its two blocks'.
  [[gnu::always_inline]] __m512i two_block_quants(int64_t t) const {
    static_assert(kBlockElems == 32);
    const uint8_t* b0 = row_ + static_cast<size_t>(t / 32) * kBlockBytes;
    const uint8_t* b1 = b0 + kBlockBytes;
    if constexpr (D == DType::kI4G32F) {
      return two_blocks_of_nibbles(b0 + 8, b1 + 8);
    } else if constexpr (D == DType::kQ8_0) {
      const __m512i q = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
      return _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
    } else if constexpr (D == DType::kQ4_0) {
      return two_blocks_of_nibbles(b0 + 2, b1 + 2);
    } else if constexpr (D == DType::kQ4_1) {
      return two_blocks_of_nibbles(b0 + 4, b1 + 4);
    } else if constexpr (D == DType::kQ5_0) {
      return add_fifth_bits(two_blocks_of_nibbles(b0 + 6, b1 + 6), b0 + 2, b1 + 2);
    } else {
      static_assert(D == DType::kQ5_1);
      return add_fifth_bits(two_blocks_of_nibbles(b0 + 8, b1 + 8), b0 + 4, b1 + 4);
    }
  }

  // The block's scale and offset per group of 16, as unpack_block_of<D> writes them.
  void start_block(const uint8_t* b) {
    block_ = b;
    if constexpr (D == DType::kQ4_K || D == DType::kQ5_K) {
      k4_group_scales(b, a_, c_);
    } else if constexpr (D == DType::kQ6_K) {
      const __m512 d = _mm512_set1_ps(half_at(b + 208));
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
      _mm512_storeu_ps(a_, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc))));
      _mm512_storeu_ps(c_, _mm512_setzero_ps());
    } else if constexpr (D == DType::kI4G64F || D == DType::kI4G128F) {  // F32 scale and minimum
      fill_groups(a_, c_, static_cast<int>(kBlockElems / 16), f32_at(b), f32_at(b + 4));
    } else {  // I4G64 / I4G128: one scale and minimum for the block
      static_assert(D == DType::kI4G64 || D == DType::kI4G128);
      fill_groups(a_, c_, static_cast<int>(kBlockElems / 16), half_at(b), half_at(b + 2));
    }
  }

  // The u bytes of step `step` of the block at b (a type of 64 elements or more per block).
  [[gnu::always_inline]] static __m512i block_step_bytes(const uint8_t* b, int step) {
    if constexpr (D == DType::kQ4_K) {
      return nibbles_low_then_high(b + 16 + 32 * step);
    } else if constexpr (D == DType::kQ5_K) {
      const __m512i u = nibbles_low_then_high(b + 48 + 32 * step);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
      const __mmask64 high =
          _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1u << (2 * step)))) |
          (uint64_t{_mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(2u << (2 * step))))}
           << 32);
      return _mm512_mask_add_epi8(u, high, u, _mm512_set1_epi8(16));
    } else if constexpr (D == DType::kQ6_K) {
      // Half n of the block (128 elements) takes ql[64n..], qh[32n..]; its first 64 elements
      // the low nibbles with qh's bits 0-1 (first 32) and 2-3, its last 64 the high nibbles
      // with bits 4-5 and 6-7.
      const int n = step / 2, part = step % 2;
      __m512i q = _mm512_loadu_si512(b + 64 * n);
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * n));
      __m512i hz = _mm512_inserti64x4(_mm512_castsi256_si512(h), _mm256_srli_epi16(h, 2), 1);
      if (part == 1) {
        q = _mm512_srli_epi16(q, 4);
        hz = _mm512_srli_epi16(hz, 4);
      }
      const __m512i high = _mm512_slli_epi16(_mm512_and_si512(hz, _mm512_set1_epi8(3)), 4);
      return _mm512_or_si512(low_nibbles(q), high);
    } else if constexpr (D == DType::kI4G64 || D == DType::kI4G64F) {
      return nibbles_low_then_high(b + (D == DType::kI4G64 ? 4 : 8));
    } else {
      static_assert(D == DType::kI4G128 || D == DType::kI4G128F);
      // 64 nibble bytes: elements 0..63 the low nibbles, 64..127 the high ones.
      const __m512i q = _mm512_loadu_si512(b + (D == DType::kI4G128 ? 4 : 8));
      return low_nibbles(step == 0 ? q : _mm512_srli_epi16(q, 4));
    }
  }

  const uint8_t* row_;
  const uint8_t* block_ = nullptr;
  float a_[16] = {}, c_[16] = {};
};

// A kI8 weight row (symmetric int8 per output channel, one F32 scale): u = q + 128 (q ^ 0x80),
// a = the row's scale for every group, c = -128 a.
class I8Row {
 public:
  I8Row(const uint8_t* row, float scale) : row_(row), scale_(scale) {}
  [[gnu::always_inline]] void load(int64_t t, __m512i& w, __m128& a4, __m128& c4) const {
    w = _mm512_xor_si512(_mm512_loadu_si512(row_ + t), _mm512_set1_epi8(static_cast<char>(0x80)));
    a4 = _mm_set1_ps(scale_);
    c4 = _mm_fmadd_ps(_mm_set1_ps(-128.0f), a4, _mm_setzero_ps());
  }

 private:
  const uint8_t* row_;
  float scale_;
};

}  // namespace
}  // namespace weft::kernels::cpu
