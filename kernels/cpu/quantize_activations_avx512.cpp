// AVX-512 twin of quantize_activation_groups() (linear_block.cpp calls it where the CPU has
// AVX-512): one register per group of 16, the same operations per element as the portable loop,
// so the same bits (BlockQuant.ActivationGroupsAreTheSameOnEveryPath):
//   - max |x| ignores NaN, as std::max(amax, |x|) from 0 does (NaN lanes count as 0; a maximum
//     is exact in any order);
//   - 127 / amax and amax / 127 are the same scalar divisions;
//   - x * inv is one F32 product, and vcvtps2dq rounds it to nearest even as nearbyint does
//     under the default rounding mode (an out-of-range or NaN product becomes INT_MIN there, as
//     the scalar conversion makes it, and both clamp it to -127).
#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

namespace weft::kernels::cpu {

void quantize_activation_groups_avx512(const float* x, int64_t k, int8_t* q, float* scale, float* sums) {
  for (int64_t g = 0; g < k / 16; ++g) {
    const __m512 v = _mm512_loadu_ps(x + 16 * g);
    const __m512 magnitude = _mm512_abs_ps(v);
    const __mmask16 ordered = _mm512_cmp_ps_mask(magnitude, magnitude, _CMP_ORD_Q);
    const float amax = _mm512_reduce_max_ps(_mm512_maskz_mov_ps(ordered, magnitude));
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    __m512i qi = _mm512_cvtps_epi32(_mm512_mul_ps(v, _mm512_set1_ps(inv)));
    qi = _mm512_min_epi32(_mm512_max_epi32(qi, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * g), _mm512_cvtepi32_epi8(qi));
    scale[g] = amax / 127.0f;
    sums[g] = scale[g] * static_cast<float>(_mm512_reduce_add_epi32(qi));
  }
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
