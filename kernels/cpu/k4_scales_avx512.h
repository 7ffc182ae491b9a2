// Private to kernels/cpu: a Q4_K / Q5_K block's eight sub-block scales and offsets decoded at
// once in AVX-512 lanes, for the tiles that decode these blocks in registers (FusedRow in
// linear_block_fused_avx512.h, the exact product's decode tile in block_dequantize_avx512.cpp).
// The same values as k4_sub_block_scale (block_unpack.h), bit for bit: the same F32 products.
// Include after the file's target pragma (AVX-512F and BW).
#pragma once

#include <immintrin.h>

#include "cpu/block_unpack.h"

namespace weft::kernels::cpu {
namespace {

// 8 bytes as 16 floats, each twice: a K-quant sub-block's value for its 2 groups of 16.
inline __m512 per_group(uint64_t bytes) {
  const __m128i v = _mm_cvtsi64_si128(static_cast<long long>(bytes));
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(v, v)));
}

// The Q4_K / Q5_K block at b: a[g] = d * scale and c[g] = -(dmin * min) of the sub-block of each
// group g of 16 (sub-block g / 2), as k4_sub_block_scale gives them.
inline void k4_group_scales(const uint8_t* b, float* a, float* c) {
  // k_scale_min for all 8 sub-blocks at once, 4 bytes a lane: sub-block j < 4 takes the low
  // 6 bits of bytes j (scale) and 4 + j (min); j >= 4 the nibbles of byte 4 + j with the top
  // 2 bits of bytes j - 4 (scale) and j (min) above them.
  const uint32_t q0 = u32_at(b + 4), q1 = u32_at(b + 8), q2 = u32_at(b + 12);
  const uint32_t six = 0x3F3F3F3Fu, four = 0x0F0F0F0Fu, two = 0x03030303u;
  const uint64_t scales = (q0 & six) | uint64_t{(q2 & four) | (((q0 >> 6) & two) << 4)} << 32;
  const uint64_t mins = (q1 & six) | uint64_t{((q2 >> 4) & four) | (((q1 >> 6) & two) << 4)} << 32;
  _mm512_storeu_ps(a, _mm512_mul_ps(_mm512_set1_ps(half_at(b)), per_group(scales)));
  const __m512 min_products = _mm512_mul_ps(_mm512_set1_ps(half_at(b + 2)), per_group(mins));
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  _mm512_storeu_ps(c, _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(min_products), sign)));
}

}  // namespace
}  // namespace weft::kernels::cpu
