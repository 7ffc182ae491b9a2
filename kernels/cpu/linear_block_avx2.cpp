// AVX2 path of linear_block_quantized(): 32 elements (two groups) per step. vpmaddubsw needs
// one unsigned operand and saturates at 16 bits, so it multiplies |u - 128| by x carrying the
// sign of u - 128 (vpsignb): pairs stay within 2 * 128 * 127 < 2^15, so the sums are exact.
#include <immintrin.h>

#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#include "cpu/isa.h"
#include "cpu/linear_block_rows.h"

namespace weft::kernels::cpu {
namespace {

struct Avx2Kernel {
  static constexpr int kOffset = 128;

  // Two accumulators per row (alternate 32-element steps) hide the FMA latency at MR = 1.
  template <int MR>
  static void tile(const BlockLinearProblem& p, const uint8_t* u, const float* a, const float* c,
                   int64_t i, float* out) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    __m256 acc[MR][2];
    __m128 acc_c[MR];
    for (int r = 0; r < MR; ++r) {
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
      acc_c[r] = _mm_setzero_ps();
    }
    const auto step = [&](int64_t t, int h) {
      const int64_t g = t / kUnpackGroup;
      const __m256i s = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + t)), flip);
      const __m256i s_abs = _mm256_abs_epi8(s);
      const __m128 a2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(a + g)));
      const __m128 c2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(c + g)));
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m256i x = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(p.xq + (i + r) * p.k_pad + t));
        const __m256i dot =
            _mm256_madd_epi16(_mm256_maddubs_epi16(s_abs, _mm256_sign_epi8(x, s)), ones);
        const float* xrow = p.xd + (i + r) * p.groups + g;
        const __m128 xd2 = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(xrow)));
        const __m128 xs2 = _mm_castpd_ps(
            _mm_load_sd(reinterpret_cast<const double*>(p.xs + (i + r) * p.groups + g)));
        const __m256 scale =
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_mul_ps(a2, xd2)), spread);
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[r][h]);
        acc_c[r] = _mm_fmadd_ps(c2, xs2, acc_c[r]);
      }
    };
    int64_t t = 0;
    for (; t + 64 <= p.k_pad; t += 64) {
      step(t, 0);
      step(t + 32, 1);
    }
    if (t < p.k_pad) step(t, 0);
    for (int r = 0; r < MR; ++r) {
      const __m256 sum = _mm256_add_ps(acc[r][0], acc[r][1]);
      __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
      s4 = _mm_add_ps(s4, acc_c[r]);  // its two lanes of offsets (the upper two are zero)
      s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
      s4 = _mm_add_ss(s4, _mm_movehdup_ps(s4));
      out[r] = _mm_cvtss_f32(s4);
    }
  }
};

}  // namespace

void linear_block_q_avx2(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                         int64_t j1) {
  block_rows<Avx2Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
