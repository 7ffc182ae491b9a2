// AVX512-VNNI path of linear_block_quantized() and of W8A8 (--quantize int8 rows): vpdpbusd on
// u and x directly, each group's products summed as integers first
// (linear_block_panels_avx512vnni.h: panels of 16 weight rows for more than 4 activation rows,
// four rows decoded in registers, linear_block_fused_avx512.h, for fewer).
#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_ps() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/linear_block_panels_avx512vnni.h"

namespace weft::kernels::cpu {

void linear_block_q_avx512vnni(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                               int64_t j1) {
  with_block_dtype(p.w_dtype, [&](auto d) { block_panel_rows<decltype(d)::value>(p, i0, i1, j0, j1); });
}

void linear_i8_rows_avx512vnni(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                               int64_t j1) {
  i8_panel_rows(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
