// AVX-512 micro-kernels of linear() for BF16 weights at the F32 matmul precision.
//
// The AVX2 file's trick (linear_avx2_bf16.cpp) at twice the width: one 512-bit load brings 32
// weights; a shift moves the even-indexed ones into F32 position and a mask keeps the odd-indexed
// ones. That is one ALU operation per 16 weights where cvtepu16 + shift took two, one of them a
// lane-crossing shuffle on the port the FMAs also need. The activations are reordered once per
// call to match (deinterleave_bf16_pairs with kBf16PairsChunkAvx512).
//
// GEMM tiles are 8 x-rows by 2 weight rows: 16 accumulators, and per 32 elements of k two loads
// and four widening operations feed 32 FMAs. Every output element is summed in the same order
// whatever the tile shape (the lanes over k, one fixed horizontal reduction (reduce4's order),
// then the scalar k % 32 tail), so a row's result does not depend on the batch it was computed in.
#include <immintrin.h>

#include "core/half.h"
#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/avx512_reduce.h"
#include "cpu/next_rows_prefetch.h"
#include "cpu/row_tiles.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kChunk = kBf16PairsChunkAvx512;  // BF16 weights per 512-bit load
constexpr int kGemmRows = 8;

// Where one accumulator's sum goes, and what its scalar k % 32 tail reads.
struct Output {
  const float* x;     // the x row, for the k % 32 tail
  const uint16_t* w;  // weight row of the first accumulator
  int64_t j;          // its output column
};

// y = reduce(acc) + tail + bias for up to four (x row, weight row) pairs at once; the reduction
// order is reduce4's for every lane, so it does not matter which accumulators share a call.
inline void store_sums(const Bf16PairsLinearProblem& p, int64_t kv, int count, const __m512* acc,
                       const Output* out, float* const* y) {
  const __m128 s = reduce4(acc[0], count > 1 ? acc[1] : acc[0], count > 2 ? acc[2] : acc[0],
                           count > 3 ? acc[3] : acc[0]);
  alignas(16) float sums[4];
  _mm_store_ps(sums, s);
  for (int c = 0; c < count; ++c) {
    float v = sums[c];
    for (int64_t kk = kv; kk < p.k; ++kk) v += out[c].x[kk] * bf16_to_float(out[c].w[kk]);
    *y[c] = v + (p.bias ? p.bias[out[c].j] : 0.0f);
  }
}

// y[i0 + i, j0 + j] for i < MR, j < NR. kFetchNext: the weight rows come from memory, so fetch
// the next tile's as well.
template <int MR, int NR, bool kFetchNext>
void tile(const Bf16PairsLinearProblem& p, int64_t i0, int64_t j0) {
  const int64_t k = p.k;
  const int64_t kv = k / kChunk * kChunk;
  const float* xp = p.x_pairs + i0 * kv;
  const uint16_t* w = p.w + j0 * k;
  const __m512i odd_mask = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m512 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  NextRowsPrefetch next(w + NR * k, NR * static_cast<int64_t>(sizeof(uint16_t)));
  for (int64_t kk = 0; kk < kv; kk += kChunk) {
    // Up to 4 x rows: the next rows in address order (one stream); a tile of more rows computes
    // long enough per step to fetch them side by side, and does better so (SmolLM2-135M at
    // --matmul-precision f32 on a 2-core Zen 4: decode batch 4 ran 254 -> 330 tok/s in order,
    // batch 8 370 -> 410 side by side).
    if constexpr (kFetchNext && MR <= 4) next.through(kk + kChunk);
    if constexpr (MR == 1) {
      // GEMV: x stays in registers; each weight row is split and used at once.
      const __m512 xe = _mm512_loadu_ps(xp + kk);
      const __m512 xo = _mm512_loadu_ps(xp + kk + kChunk / 2);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        const __m512i v = _mm512_loadu_si512(w + j * k + kk);
        acc[0][j] = _mm512_fmadd_ps(xe, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), acc[0][j]);
        acc[0][j] =
            _mm512_fmadd_ps(xo, _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask)), acc[0][j]);
      }
    } else {
      // GEMM: the NR weight rows are split once and reused by every x row of the tile.
      __m512 we[NR], wo[NR];
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        if constexpr (kFetchNext && MR > 4) {
          _mm_prefetch(reinterpret_cast<const char*>(w + (j + NR) * k + kk), _MM_HINT_T0);
        }
        const __m512i v = _mm512_loadu_si512(w + j * k + kk);
        we[j] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
        wo[j] = _mm512_castsi512_ps(_mm512_and_si512(v, odd_mask));
      }
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m512 xe = _mm512_loadu_ps(xp + i * kv + kk);
        const __m512 xo = _mm512_loadu_ps(xp + i * kv + kk + kChunk / 2);
#pragma GCC unroll 16
        for (int j = 0; j < NR; ++j) {
          acc[i][j] = _mm512_fmadd_ps(xe, we[j], acc[i][j]);
          acc[i][j] = _mm512_fmadd_ps(xo, wo[j], acc[i][j]);
        }
      }
    }
  }
  // Reduce four accumulators per call, in row-major order of the tile.
  constexpr int kCount = MR * NR;
#pragma GCC unroll 16
  for (int c0 = 0; c0 < kCount; c0 += 4) {
    const int count = kCount - c0 < 4 ? kCount - c0 : 4;
    __m512 a[4];
    Output out[4];
    float* y[4];
#pragma GCC unroll 4
    for (int c = 0; c < count; ++c) {
      const int i = (c0 + c) / NR, j = (c0 + c) % NR;
      a[c] = acc[i][j];
      out[c] = Output{p.x + (i0 + i) * k, w + j * k, j0 + j};
      y[c] = p.y + (i0 + i) * p.n + j0 + j;
    }
    store_sums(p, kv, count, a, out, y);
  }
}

template <int MR, bool kFetchNext>
void row_tile(const Bf16PairsLinearProblem& p, int64_t i, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if constexpr (MR == 1) {
    for (; j + 8 <= j1; j += 8) tile<1, 8, kFetchNext>(p, i, j);
  }
  for (; j + 2 <= j1; j += 2) tile<MR, 2, kFetchNext>(p, i, j);
  if (j < j1) tile<MR, 1, kFetchNext>(p, i, j);
}

}  // namespace

void linear_block_avx512_bf16_pairs(const Bf16PairsLinearProblem& p, int64_t i0, int64_t i1,
                                    int64_t j0, int64_t j1) {
  for_each_row_tile<kGemmRows>(i0, i1, [&]<int MR, bool kFetchNext>(int64_t i) {
    row_tile<MR, kFetchNext>(p, i, j0, j1);
  });
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
