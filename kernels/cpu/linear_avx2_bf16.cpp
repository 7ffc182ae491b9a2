// AVX2 + FMA micro-kernels of linear() for BF16 weights (the F32 matmul precision).
//
// Widening BF16 to F32 with cvtepu16 + shift costs two ALU operations (one a lane-crossing
// shuffle) per 8 weights, as many as the multiply-adds they feed: on a 2-FMA-port core without
// AVX-512 the widening, not the FMA, bounds the GEMM. Here one 256-bit load brings 16 weights;
// a shift moves the even-indexed ones into F32 position and a mask keeps the odd-indexed ones,
// one operation per 8 weights and no shuffle. The activations are reordered once per call to
// match (see deinterleave_bf16_pairs, chunks of kBf16PairsChunkAvx2), so each pair of FMAs takes the even and the odd halves.
//
// Every output element is summed in the same order whatever the tile shape (lanes, then one
// fixed horizontal reduction, then the scalar k % 16 tail), so a row's result does not depend
// on the batch it was computed in.
#include <immintrin.h>

#include "core/half.h"
#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#include "cpu/next_rows_prefetch.h"
#include "cpu/row_tiles.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kChunk = kBf16PairsChunkAvx2;  // BF16 weights per 256-bit load

inline float reduce(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// y[i0 + i, j0 + j] for i < MR, j < NR. kFetchNext: the weight rows come from memory, so fetch
// the next tile's as well.
template <int MR, int NR, bool kFetchNext>
void tile(const Bf16PairsLinearProblem& p, int64_t i0, int64_t j0) {
  const int64_t k = p.k;
  const int64_t kv = k / kChunk * kChunk;
  const float* xp = p.x_pairs + i0 * kv;
  const uint16_t* w = p.w + j0 * k;
  const __m256i odd_mask = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  NextRowsPrefetch next(w + NR * k, NR * static_cast<int64_t>(sizeof(uint16_t)));
  for (int64_t kk = 0; kk < kv; kk += kChunk) {
    if constexpr (kFetchNext) next.through(kk + kChunk);
    if constexpr (MR == 1) {
      // GEMV: x stays in registers; each weight row is split and used at once.
      const __m256 xe = _mm256_loadu_ps(xp + kk);
      const __m256 xo = _mm256_loadu_ps(xp + kk + 8);
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j * k + kk));
        acc[0][j] = _mm256_fmadd_ps(xe, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), acc[0][j]);
        acc[0][j] = _mm256_fmadd_ps(xo, _mm256_castsi256_ps(_mm256_and_si256(v, odd_mask)), acc[0][j]);
      }
    } else {
      // GEMM: the NR weight rows are split once and reused by every x row of the tile.
      __m256 we[NR], wo[NR];
#pragma GCC unroll 16
      for (int j = 0; j < NR; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j * k + kk));
        we[j] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
        wo[j] = _mm256_castsi256_ps(_mm256_and_si256(v, odd_mask));
      }
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m256 xe = _mm256_loadu_ps(xp + i * kv + kk);
        const __m256 xo = _mm256_loadu_ps(xp + i * kv + kk + 8);
#pragma GCC unroll 16
        for (int j = 0; j < NR; ++j) {
          acc[i][j] = _mm256_fmadd_ps(xe, we[j], acc[i][j]);
          acc[i][j] = _mm256_fmadd_ps(xo, wo[j], acc[i][j]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const float* x = p.x + (i0 + i) * k;
    float* y = p.y + (i0 + i) * p.n + j0;
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      float s = reduce(acc[i][j]);
      for (int64_t kk = kv; kk < k; ++kk) s += x[kk] * bf16_to_float(w[j * k + kk]);
      y[j] = s + (p.bias ? p.bias[j0 + j] : 0.0f);
    }
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

void linear_block_avx2_bf16(const Bf16PairsLinearProblem& p, int64_t i0, int64_t i1, int64_t j0,
                            int64_t j1) {
  for_each_row_tile<6>(i0, i1, [&]<int MR, bool kFetchNext>(int64_t i) {
    row_tile<MR, kFetchNext>(p, i, j0, j1);
  });
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
