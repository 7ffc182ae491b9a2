// Private to kernels/cpu: horizontal sums of AVX-512 accumulators shared by the AVX-512 linear
// micro-kernels. Include it after the file's `#pragma GCC target` that enables AVX-512F and AVX.
#pragma once

#include <immintrin.h>

namespace weft::kernels::cpu {
// Internal linkage: each including file compiles these for its own target ISA, so their copies
// must not be merged across files.
namespace {

// The two 256-bit halves of v added.
inline __m256 fold(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// {sum(a), sum(b), sum(c), sum(d)}.
inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 abcd =
      _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

}  // namespace
}  // namespace weft::kernels::cpu
