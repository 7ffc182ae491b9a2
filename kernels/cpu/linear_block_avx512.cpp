// AVX-512BW path of linear_block_quantized() for CPUs without VNNI (linear_block_avx512.h).
#include "cpu/linear_block.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_ps() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/linear_block_avx512.h"

namespace weft::kernels::cpu {

void linear_block_q_avx512(const BlockLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1) {
  block_rows<Avx512Kernel>(p, i0, i1, j0, j1);
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
