// AVX-512 micro-kernels of linear(): register tiles of MR rows of x by NR weight rows, each
// accumulator a 16-lane F32 vector over k, 16-bit weights widened in registers.
#include <immintrin.h>

#include <algorithm>

#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_ps() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/avx512_reduce.h"
#include "cpu/next_rows_prefetch.h"
#include "cpu/row_tiles.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kW = 16;
template <DType W>
constexpr int64_t kWBytes = W == DType::kF32 ? 4 : W == DType::kI8 ? 1 : 2;

template <DType W>
inline __m512 load_w(const void* base, int64_t idx, __mmask16 m) {
  if constexpr (W == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(base) + idx);
  } else if constexpr (W == DType::kI8) {
    const __m128i b = _mm_maskz_loadu_epi8(m, static_cast<const int8_t*>(base) + idx);
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(base) + idx);
    if constexpr (W == DType::kBF16) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm512_cvtph_ps(h);
    }
  }
}

template <DType W>
inline __m512 load_w(const void* base, int64_t idx) {
  if constexpr (W == DType::kF32) {
    return _mm512_loadu_ps(static_cast<const float*>(base) + idx);
  } else if constexpr (W == DType::kI8) {
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(base) + idx));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
  } else {
    const __m256i h = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + idx));
    if constexpr (W == DType::kBF16) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm512_cvtph_ps(h);
    }
  }
}


// y[i0 + i, j0 + j] for i < MR, j < NR (NR is 1 or a multiple of 4). kFetchNext: the weight rows
// come from memory, so fetch the next tile's as well.
template <DType W, int MR, int NR, bool kFetchNext>
void tile(const LinearProblem& p, int64_t i0, int64_t j0) {
  const int64_t k = p.k;
  const float* x = p.x + i0 * k;
  const int64_t w0 = j0 * k;
  __m512 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  int64_t kk = 0;
  NextRowsPrefetch next(static_cast<const char*>(p.w) + (w0 + NR * k) * kWBytes<W>, NR * kWBytes<W>);
  for (; kk + kW <= k; kk += kW) {
    __m512 xv[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(x + i * k + kk);
    if constexpr (kFetchNext) next.through(kk + kW);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512 wv = load_w<W>(p.w, w0 + j * k + kk);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], wv, acc[i][j]);
    }
  }
  if (kk < k) {
    const __mmask16 m = static_cast<__mmask16>((1u << (k - kk)) - 1u);
    __m512 xv[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_maskz_loadu_ps(m, x + i * k + kk);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512 wv = load_w<W>(p.w, w0 + j * k + kk, m);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], wv, acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* y = p.y + (i0 + i) * p.n + j0;
    if constexpr (NR == 1) {
      float s = _mm512_reduce_add_ps(acc[i][0]);
      if constexpr (W == DType::kI8) s *= p.w_scale[j0];
      y[0] = s + (p.bias ? p.bias[j0] : 0.0f);
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < NR; j += 4) {
        __m128 s = reduce4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        if constexpr (W == DType::kI8) s = _mm_mul_ps(s, _mm_loadu_ps(p.w_scale + j0 + j));
        if (p.bias) s = _mm_add_ps(s, _mm_loadu_ps(p.bias + j0 + j));
        _mm_storeu_ps(y + j, s);
      }
    }
  }
}

template <DType W, int MR, bool kFetchNext>
void row_tile(const LinearProblem& p, int64_t i, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if constexpr (MR == 1) {
    // One activation row: more weight rows in flight hide FMA latency (the GEMV case).
    for (; j + 8 <= j1; j += 8) tile<W, 1, 8, kFetchNext>(p, i, j);
  }
  for (; j + 4 <= j1; j += 4) tile<W, MR, 4, kFetchNext>(p, i, j);
  for (; j < j1; ++j) tile<W, MR, 1, kFetchNext>(p, i, j);
}

template <DType W>
void block(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for_each_row_tile<4>(i0, i1, [&]<int MR, bool kFetchNext>(int64_t i) {
    row_tile<W, MR, kFetchNext>(p, i, j0, j1);
  });
}

}  // namespace

void linear_block_avx512(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  switch (p.w_dtype) {
    case DType::kBF16:
      return block<DType::kBF16>(p, i0, i1, j0, j1);
    case DType::kF16:
      return block<DType::kF16>(p, i0, i1, j0, j1);
    case DType::kI8:
      return block<DType::kI8>(p, i0, i1, j0, j1);
    default:
      return block<DType::kF32>(p, i0, i1, j0, j1);
  }
}

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
