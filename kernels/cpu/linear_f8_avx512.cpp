// AVX-512 path of linear_f8(): 32 e4m3 bytes at a time become F16 bit patterns by bit
// manipulation (sign-extend to 16 bits, shift left 7, clear bit 14: sign, exponent and mantissa
// land in F16's fields, so the F16 value is e4m3 * 2^-8, subnormals included), vcvtph2ps widens
// them exactly, and one multiply by scale * 2^8 gives e4m3 * scale rounded once, as the F32
// dequantized weight (a row at a time, linear_f8_rows.h).
#include "cpu/linear_f8.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "cpu/linear_f8_rows.h"

namespace weft::kernels::cpu {
namespace {

// The 32 e4m3 bytes at b as two vectors of 16 F32 (e4m3 * 2^-8).
inline void decode32(const uint8_t* b, __m512& lo, __m512& hi) {
  const __m512i s = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  const __m512i h = _mm512_and_si512(_mm512_slli_epi16(s, 7), _mm512_set1_epi16(static_cast<short>(0xBF80)));
  lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}

struct Avx512Kernel {
  static void decode(const uint8_t* row, int64_t k, float* w) {
    for (int64_t b = 0; b < k / kF8Block; ++b) {
      const uint8_t* block = row + b * kF8BlockBytes;
      const __m512 scale = _mm512_set1_ps(f8_block_scale(block) * 256.0f);
      __m512 v[4];
      decode32(block + 4, v[0], v[1]);
      decode32(block + 4 + 32, v[2], v[3]);
      for (int q = 0; q < 4; ++q) _mm512_store_ps(w + b * kF8Block + 16 * q, _mm512_mul_ps(v[q], scale));
    }
  }

  // dot<1, NR> with the rows decoded in registers as they are read (decode: one x row), the
  // same operations in the same order without the round trip through the buffer.
  static constexpr bool kDecodeInRegisters = true;
  template <int NR>
  static void dot_rows(const F8LinearProblem& p, const uint8_t* const* rows, int64_t i,
                       float* out) {
    __m512 acc[NR];
    for (int c = 0; c < NR; ++c) acc[c] = _mm512_setzero_ps();
    const float* xr = p.x + i * p.k;
    // The rows are adjacent and read once: each fetches the same block of the row NR further on
    // (the next tile's), both lines a 68-byte block may touch.
    const int64_t ahead = NR * (p.k / kF8Block) * kF8BlockBytes;
    for (int64_t b = 0; b < p.k / kF8Block; ++b) {
      __m512 x[4];
      for (int q = 0; q < 4; ++q) x[q] = _mm512_loadu_ps(xr + b * kF8Block + 16 * q);
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) {
        const uint8_t* block = rows[c] + b * kF8BlockBytes;
        _mm_prefetch(reinterpret_cast<const char*>(block) + ahead, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(block) + ahead + kF8BlockBytes - 1, _MM_HINT_T0);
        const __m512 scale = _mm512_set1_ps(f8_block_scale(block) * 256.0f);
        __m512 v[4];
        decode32(block + 4, v[0], v[1]);
        decode32(block + 4 + 32, v[2], v[3]);
        for (int q = 0; q < 4; ++q) acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(v[q], scale), x[q], acc[c]);
      }
    }
    for (int c = 0; c < NR; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
  }

  // One 16-lane accumulator per output, over k in steps of 16, then summed across lanes.
  template <int MR, int NR>
  static void dot(const F8LinearProblem& p, const float* w, int64_t i, float (*out)[NR]) {
    __m512 acc[MR][NR];
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (int64_t t = 0; t < p.k; t += 16) {
      __m512 x[MR];
      for (int r = 0; r < MR; ++r) x[r] = _mm512_loadu_ps(p.x + (i + r) * p.k + t);
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) {
        const __m512 wv = _mm512_load_ps(w + c * p.k + t);
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) acc[r][c] = _mm512_fmadd_ps(wv, x[r], acc[r][c]);
      }
    }
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) out[r][c] = _mm512_reduce_add_ps(acc[r][c]);
    }
  }
};

}  // namespace

void linear_f8_avx512(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  f8_rows<Avx512Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
