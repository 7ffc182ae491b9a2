// AVX2 + FMA + F16C micro-kernels of linear(): register tiles of MR rows of x by NR weight rows
// (16 ymm registers allow 2 x 4 or 1 x 8), 16-bit weights widened in registers; the k % 8 tail
// is summed in scalar code.
#include <immintrin.h>

#include <algorithm>

#include "core/half.h"
#include "cpu/linear_impl.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

#include "cpu/next_rows_prefetch.h"
#include "cpu/row_tiles.h"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kW = 8;
template <DType W>
constexpr int64_t kWBytes = W == DType::kF32 ? 4 : W == DType::kI8 ? 1 : 2;

template <DType W>
inline __m256 load_w(const void* base, int64_t idx) {
  if constexpr (W == DType::kF32) {
    return _mm256_loadu_ps(static_cast<const float*>(base) + idx);
  } else if constexpr (W == DType::kI8) {
    const __m128i b = _mm_loadl_epi64(
        reinterpret_cast<const __m128i*>(static_cast<const int8_t*>(base) + idx));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  } else {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(base) + idx));
    if constexpr (W == DType::kBF16) {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
      return _mm256_cvtph_ps(h);
    }
  }
}

template <DType W>
inline float w_at(const void* base, int64_t idx) {
  if constexpr (W == DType::kF32) {
    return static_cast<const float*>(base)[idx];
  } else if constexpr (W == DType::kBF16) {
    return bf16_to_float(static_cast<const uint16_t*>(base)[idx]);
  } else if constexpr (W == DType::kI8) {
    return static_cast<float>(static_cast<const int8_t*>(base)[idx]);
  } else {
    return f16_to_float(static_cast<const uint16_t*>(base)[idx]);
  }
}

inline __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

inline float reduce1(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kFetchNext: the weight rows come from memory, so fetch the next tile's as well.
template <DType W, int MR, int NR, bool kFetchNext>
void tile(const LinearProblem& p, int64_t i0, int64_t j0) {
  const int64_t k = p.k;
  const int64_t kv = k / kW * kW;
  const float* x = p.x + i0 * k;
  const int64_t w0 = j0 * k;
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  NextRowsPrefetch next(static_cast<const char*>(p.w) + (w0 + NR * k) * kWBytes<W>, NR * kWBytes<W>);
  for (int64_t kk = 0; kk < kv; kk += kW) {
    __m256 xv[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) xv[i] = _mm256_loadu_ps(x + i * k + kk);
    if constexpr (kFetchNext) next.through(kk + kW);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m256 wv = load_w<W>(p.w, w0 + j * k + kk);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm256_fmadd_ps(xv[i], wv, acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* y = p.y + (i0 + i) * p.n + j0;
    float out[NR];
    if constexpr (NR == 1) {
      out[0] = reduce1(acc[i][0]);
    } else {
#pragma GCC unroll 16
      for (int j = 0; j < NR; j += 4) {
        _mm_storeu_ps(out + j, reduce4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
      }
    }
    for (int j = 0; j < NR; ++j) {
      float s = out[j];
      for (int64_t kk = kv; kk < k; ++kk) s += x[i * k + kk] * w_at<W>(p.w, w0 + j * k + kk);
      if constexpr (W == DType::kI8) s *= p.w_scale[j0 + j];
      y[j] = s + (p.bias ? p.bias[j0 + j] : 0.0f);
    }
  }
}

template <DType W, int MR, bool kFetchNext>
void row_tile(const LinearProblem& p, int64_t i, int64_t j0, int64_t j1) {
  int64_t j = j0;
  if constexpr (MR == 1) {
    for (; j + 8 <= j1; j += 8) tile<W, 1, 8, kFetchNext>(p, i, j);
  }
  for (; j + 4 <= j1; j += 4) tile<W, MR, 4, kFetchNext>(p, i, j);
  for (; j < j1; ++j) tile<W, MR, 1, kFetchNext>(p, i, j);
}

template <DType W>
void block(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for_each_row_tile<2>(i0, i1, [&]<int MR, bool kFetchNext>(int64_t i) {
    row_tile<W, MR, kFetchNext>(p, i, j0, j1);
  });
}

}  // namespace

void linear_block_avx2(const LinearProblem& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
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
