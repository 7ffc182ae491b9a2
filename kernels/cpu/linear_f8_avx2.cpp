// AVX2 path of linear_f8(): the AVX-512 path's decoding (linear_f8_avx512.cpp) 16 bytes at a
// time: sign-extend, shift left 7, clear bit 14 gives F16 e4m3 * 2^-8, vcvtph2ps widens it
// exactly, a multiply by scale * 2^8 gives the F32 dequantized weight. Two accumulators per row
// (alternate 8-lane vectors).
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
  template <int MR>
  static void tile(const F8LinearProblem& p, const uint8_t* row, int64_t i, float* out) {
    __m256 acc[MR][2];
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi16(static_cast<short>(0xBF80));
    const int64_t blocks = p.k / kF8Block;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* block = row + b * kF8BlockBytes;
      const __m256 scale = _mm256_set1_ps(f8_block_scale(block) * 256.0f);
      const int64_t t0 = b * kF8Block;
      for (int64_t c = 0; c < kF8Block; c += 16) {
        const __m256i s = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4 + c)));
        const __m256i h = _mm256_and_si256(_mm256_slli_epi16(s, 7), mask);
        const __m256 w0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), scale);
        const __m256 w1 = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), scale);
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const float* x = p.x + (i + r) * p.k + t0 + c;
          acc[r][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc[r][1]);
        }
      }
    }
    for (int r = 0; r < MR; ++r) out[r] = reduce8(_mm256_add_ps(acc[r][0], acc[r][1]));
  }
};

}  // namespace

void linear_f8_avx2(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  f8_rows<Avx2Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
