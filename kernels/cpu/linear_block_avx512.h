// Private to kernels/cpu: the AVX-512BW tile of linear_block_quantized() for CPUs without VNNI
// (linear_block_avx512.cpp), 64 elements (four groups of 16) per step: vpmaddubsw on |u - 128|
// and x with u - 128's sign, exact as on AVX2. (With VNNI the tiles are
// linear_block_panels_avx512vnni.h's.) Include after the file's target pragma.
#pragma once

#include <immintrin.h>

#include "cpu/isa.h"
#include "cpu/linear_block_rows.h"

namespace weft::kernels::cpu {
namespace {

struct Avx512Kernel {
  static constexpr int kOffset = 128;

  // The 64 weight elements at t of a row decoded beforehand (block_rows_of's scratch row; also
  // the VNNI tiles' rows decoded by unpack_row_of).
  struct ScratchRow {
    const uint8_t* u;
    const float* a;
    const float* c;
    [[gnu::always_inline]] void load(int64_t t, __m512i& w, __m128& a4, __m128& c4) const {
      w = _mm512_loadu_si512(u + t);
      a4 = _mm_loadu_ps(a + t / kUnpackGroup);
      c4 = _mm_loadu_ps(c + t / kUnpackGroup);
    }
  };

  template <int MR>
  static void tile(const BlockLinearProblem& p, const uint8_t* u, const float* a, const float* c,
                   int64_t i, float* out) {
    ScratchRow row{u, a, c};
    tile_from<MR>(p, row, i, out);
  }

  // The tile over any source of weight steps: Row::load(t, w, a4, c4) gives the 64 elements at
  // t (called for t = 0, 64, ... in order) as u bytes, the four groups' scales, and their
  // offsets with the type's zero folded in as block_rows_of folds it. The same operations in the
  // same order for every source and every MR, so a row's result depends neither on its batch nor
  // on whether its weights were decoded beforehand or in registers.
  // Two accumulators per row (alternate 64-element steps) hide the FMA latency at MR = 1.
  template <int MR, class Row>
  static void tile_from(const BlockLinearProblem& p, Row& row, int64_t i, float* out) {
    // Lane l of a product holds elements 4l..4l+3: group l / 4.
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512 acc[MR][2];
    __m128 acc_c[MR];
    for (int r = 0; r < MR; ++r) {
      acc[r][0] = acc[r][1] = _mm512_setzero_ps();
      acc_c[r] = _mm_setzero_ps();
    }
    // Inlined, or the accumulators would live in memory (GCC keeps a large lambda out of line).
    const auto step = [&](int64_t t, int h) __attribute__((always_inline)) {
      const int64_t g = t / kUnpackGroup;
      __m512i w;
      __m128 a4, c4;
      row.load(t, w, a4, c4);
      const __m512i s = _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
      const __m512i w_abs = _mm512_abs_epi8(s);
      const __mmask64 negative = _mm512_movepi8_mask(s);
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const __m512i x = _mm512_loadu_si512(p.xq + (i + r) * p.k_pad + t);
        const __m512i x_signed = _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x);
        const __m512i dot = _mm512_madd_epi16(_mm512_maddubs_epi16(w_abs, x_signed), _mm512_set1_epi16(1));
        const __m128 scale4 = _mm_mul_ps(a4, _mm_loadu_ps(p.xd + (i + r) * p.groups + g));
        const __m512 scale = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(scale4));
        acc[r][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r][h]);
        acc_c[r] = _mm_fmadd_ps(c4, _mm_loadu_ps(p.xs + (i + r) * p.groups + g), acc_c[r]);
      }
    };
    int64_t t = 0;
    for (; t + 128 <= p.k_pad; t += 128) {
      step(t, 0);
      step(t + 64, 1);
    }
    if (t < p.k_pad) step(t, 0);
    for (int r = 0; r < MR; ++r) {
      const __m128 offsets = _mm_add_ps(acc_c[r], _mm_movehl_ps(acc_c[r], acc_c[r]));
      out[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][0], acc[r][1])) +
               _mm_cvtss_f32(_mm_add_ss(offsets, _mm_movehdup_ps(offsets)));
    }
  }
};

}  // namespace
}  // namespace weft::kernels::cpu
