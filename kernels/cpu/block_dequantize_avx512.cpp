// AVX-512 twin of the reference dequantization (block_dequantize.cpp), which calls it where the
// CPU has AVX-512: the same decoder (block_unpack.h) and the same arithmetic per element,
// a * float(u - zero) then + c, rounded twice (this file too is built with -ffp-contract=off), so
// the rows are bit-identical, 16 at a time. The F32-activation path of linear_block_quantized()
// dequantizes every weight row of every call through it.
#include <immintrin.h>

#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

#include "cpu/block_unpack.h"

namespace weft::kernels::cpu {

void dequantize_row_avx512(DType dtype, const void* src, float* dst, int64_t n) {
  with_block_dtype(dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    const int64_t block = dtype_block_elems(D);
    const int64_t groups = block / kUnpackGroup;
    const size_t bytes = dtype_block_bytes(D);
    const __m512i zero = _mm512_set1_epi32(unpack_zero(D));
    alignas(64) uint8_t u[256];
    float a[16], c[16];
    const uint8_t* b = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n / block; ++i) {
      unpack_block_of<D>(b + i * bytes, u, a, c);
      float* out = dst + i * block;
      for (int64_t g = 0; g < groups; ++g) {
        const __m128i bytes16 = _mm_load_si128(reinterpret_cast<const __m128i*>(u + g * kUnpackGroup));
        const __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes16), zero));
        const __m512 product = _mm512_mul_ps(_mm512_set1_ps(a[g]), v);
        _mm512_storeu_ps(out + g * kUnpackGroup, _mm512_add_ps(product, _mm512_set1_ps(c[g])));
      }
    }
  });
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
