// AVX512-BF16 micro-kernels of linear() for BF16 weights with BF16-rounded activations
// (MatmulPrecision::kBf16): vdpbf16ps multiplies 32 BF16 pairs into 16 F32 accumulators per
// instruction, twice the multiply-adds of the F32 FMA path and without widening the weights.
// Accumulation stays F32. The activations were rounded to BF16 (nearest even) by the caller.
#include <immintrin.h>

#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/avx512_reduce.h"
#include "cpu/next_rows_prefetch.h"
#include "cpu/row_tiles.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kPairs = 32;  // BF16 elements per vdpbf16ps operand

inline __m512bh load_bf16(const uint16_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
inline __m512bh load_bf16(const uint16_t* p, __mmask32 m) {
  return (__m512bh)_mm512_maskz_loadu_epi16(m, p);
}


// y[i0 + i, j0 + j] for i < MR, j < NR (NR is 1 or a multiple of 4). kFetchNext: the weight rows
// come from memory, so fetch the next tile's as well.
template <int MR, int NR, bool kFetchNext>
void tile(const Bf16LinearProblem& p, int64_t i0, int64_t j0) {
  const int64_t k = p.k;
  const uint16_t* x = p.x + i0 * k;
  const uint16_t* w = p.w + j0 * k;
  __m512 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  int64_t kk = 0;
  NextRowsPrefetch next(w + NR * k, NR * static_cast<int64_t>(sizeof(uint16_t)));
  for (; kk + kPairs <= k; kk += kPairs) {
    __m512bh xv[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xv[i] = load_bf16(x + i * k + kk);
    if constexpr (kFetchNext) next.through(kk + kPairs);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512bh wv = load_bf16(w + j * k + kk);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
    }
  }
  if (kk < k) {
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (k - kk)) - 1u);
    __m512bh xv[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xv[i] = load_bf16(x + i * k + kk, m);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512bh wv = load_bf16(w + j * k + kk, m);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* y = p.y + (i0 + i) * p.n + j0;
    if constexpr (NR == 1) {
      y[0] = _mm512_reduce_add_ps(acc[i][0]) + (p.bias ? p.bias[j0] : 0.0f);
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < NR; j += 4) {
        __m128 s = reduce4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        if (p.bias) s = _mm_add_ps(s, _mm_loadu_ps(p.bias + j0 + j));
        _mm_storeu_ps(y + j, s);
      }
    }
  }
}

template <int MR, bool kFetchNext>
void row_tile(const Bf16LinearProblem& p, int64_t i, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if constexpr (MR == 1) {
    for (; j + 8 <= j1; j += 8) tile<1, 8, kFetchNext>(p, i, j);
  }
  for (; j + 4 <= j1; j += 4) tile<MR, 4, kFetchNext>(p, i, j);
  for (; j < j1; ++j) tile<MR, 1, kFetchNext>(p, i, j);
}

}  // namespace

void linear_block_avx512bf16(const Bf16LinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                             int64_t j1) {
  // Tiles of up to 6 rows (24 accumulators, 6 activation registers, one weight register: 31
  // of the 32 zmm registers). A speculative verification of 4 or 5 guesses (5 or 6 rows) then
  // reads each weight tile once, where 4-row tiles ran a 4-row and a 1-2-row pass over it:
  // measured on a Zen 4 EPYC, 0.85x the time at 5 rows and 0.78-0.88x at 6 on the default
  // model's shapes, 0.96x at 128 rows. Each output's summation order is the same in every tile
  // height, so results do not depend on the batch.
  for_each_row_tile<6>(i0, i1, [&]<int MR, bool kFetchNext>(int64_t i) {
    row_tile<MR, kFetchNext>(p, i, j0, j1);
  });
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
