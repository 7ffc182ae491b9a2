// AVX2 path of linear_f8(): the AVX-512 path's decoding (linear_f8_avx512.cpp) 16 bytes at a
// time: sign-extend, shift left 7, clear bit 14 gives F16 e4m3 * 2^-8, vcvtph2ps widens it
// exactly, a multiply by scale * 2^8 gives the F32 dequantized weight (a row at a time,
// linear_f8_rows.h).
#include "cpu/linear_f8.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#include <immintrin.h>

#include "cpu/linear_f8_rows.h"

namespace weft::kernels::cpu {
namespace {

inline float reduce8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

struct Avx2Kernel {
  static void decode(const uint8_t* row, int64_t k, float* w) {
    const __m256i mask = _mm256_set1_epi16(static_cast<short>(0xBF80));
    for (int64_t b = 0; b < k / kF8Block; ++b) {
      const uint8_t* block = row + b * kF8BlockBytes;
      const __m256 scale = _mm256_set1_ps(f8_block_scale(block) * 256.0f);
      for (int64_t c = 0; c < kF8Block; c += 16) {
        const __m256i s = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4 + c)));
        const __m256i h = _mm256_and_si256(_mm256_slli_epi16(s, 7), mask);
        float* out = w + b * kF8Block + c;
        _mm256_store_ps(out, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale));
        _mm256_store_ps(out + 8, _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), scale));
      }
    }
  }

  // dot<1, NR> with the rows decoded in registers as they are read (decode: one x row), the
  // same operations in the same order without the round trip through the buffer.
  static constexpr bool kDecodeInRegisters = true;
  template <int NR>
  static void dot_rows(const F8LinearProblem& p, const uint8_t* const* rows, int64_t i,
                       float* out) {
    const __m256i mask = _mm256_set1_epi16(static_cast<short>(0xBF80));
    __m256 acc[NR];
    for (int c = 0; c < NR; ++c) acc[c] = _mm256_setzero_ps();
    const float* xr = p.x + i * p.k;
    // As on AVX-512: each row fetches the same block of the row NR further on.
    const int64_t ahead = NR * (p.k / kF8Block) * kF8BlockBytes;
    for (int64_t b = 0; b < p.k / kF8Block; ++b) {
      for (int c = 0; c < NR; ++c) {
        const char* next = reinterpret_cast<const char*>(rows[c] + b * kF8BlockBytes) + ahead;
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + kF8BlockBytes - 1, _MM_HINT_T0);
      }
      for (int64_t t = 0; t < kF8Block; t += 16) {
        const __m256 x0 = _mm256_loadu_ps(xr + b * kF8Block + t);
        const __m256 x1 = _mm256_loadu_ps(xr + b * kF8Block + t + 8);
#pragma GCC unroll 4
        for (int c = 0; c < NR; ++c) {
          const uint8_t* block = rows[c] + b * kF8BlockBytes;
          const __m256 scale = _mm256_set1_ps(f8_block_scale(block) * 256.0f);
          const __m256i s = _mm256_cvtepi8_epi16(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4 + t)));
          const __m256i h = _mm256_and_si256(_mm256_slli_epi16(s, 7), mask);
          const __m256 w0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale);
          const __m256 w1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), scale);
          acc[c] = _mm256_fmadd_ps(w1, x1, _mm256_fmadd_ps(w0, x0, acc[c]));
        }
      }
    }
    for (int c = 0; c < NR; ++c) out[c] = reduce8(acc[c]);
  }

  // One 8-lane accumulator per output, over k in steps of 8, then summed across lanes.
  template <int MR, int NR>
  static void dot(const F8LinearProblem& p, const float* w, int64_t i, float (*out)[NR]) {
    __m256 acc[MR][NR];
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) acc[r][c] = _mm256_setzero_ps();
    }
    for (int64_t t = 0; t < p.k; t += 8) {
      __m256 x[MR];
      for (int r = 0; r < MR; ++r) x[r] = _mm256_loadu_ps(p.x + (i + r) * p.k + t);
#pragma GCC unroll 4
      for (int c = 0; c < NR; ++c) {
        const __m256 wv = _mm256_load_ps(w + c * p.k + t);
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) acc[r][c] = _mm256_fmadd_ps(wv, x[r], acc[r][c]);
      }
    }
    for (int r = 0; r < MR; ++r) {
      for (int c = 0; c < NR; ++c) out[r][c] = reduce8(acc[r][c]);
    }
  }
};

}  // namespace

void linear_f8_avx2(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  f8_rows<Avx2Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
