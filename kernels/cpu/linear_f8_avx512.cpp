// AVX-512 path of linear_f8(): 32 e4m3 bytes at a time become F16 bit patterns by bit
// manipulation (sign-extend to 16 bits, shift left 7, clear bit 14: sign, exponent and mantissa
// land in F16's fields, so the F16 value is e4m3 * 2^-8, subnormals included), vcvtph2ps widens
// them exactly, and one multiply by scale * 2^8 gives e4m3 * scale rounded once, as the F32
// dequantized weight. Four accumulators per row (one per 16-lane quarter of a block).
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
  template <int MR>
  static void tile(const F8LinearProblem& p, const uint8_t* row, int64_t i, float* out) {
    __m512 acc[MR][4];
    for (int r = 0; r < MR; ++r) {
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_setzero_ps();
    }
    const int64_t blocks = p.k / kF8Block;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* block = row + b * kF8BlockBytes;
      const __m512 scale = _mm512_set1_ps(f8_block_scale(block) * 256.0f);
      __m512 w[4];
      decode32(block + 4, w[0], w[1]);
      decode32(block + 4 + 32, w[2], w[3]);
      for (int q = 0; q < 4; ++q) w[q] = _mm512_mul_ps(w[q], scale);
      const int64_t t = b * kF8Block;
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const float* x = p.x + (i + r) * p.k + t;
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          acc[r][q] = _mm512_fmadd_ps(w[q], _mm512_loadu_ps(x + 16 * q), acc[r][q]);
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      out[r] = _mm512_reduce_add_ps(
          _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3])));
    }
  }
};

}  // namespace

void linear_f8_avx512(const F8LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  f8_rows<Avx512Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
