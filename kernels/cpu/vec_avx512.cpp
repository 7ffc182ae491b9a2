// AVX-512 (f, bw, vl) vector routines. See isa.h for why the target pragma follows the includes.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "cpu/isa.h"

#if defined(__x86_64__)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")
// GCC 12's own _mm512_undefined_ps() (`__m512 __Y = __Y;`) trips these inside the intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kW = 16;

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline __m512 load_bf16(const uint16_t* p, __mmask16 m) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

inline __m512 load_f16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

inline __m256i to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  __m512i out = _mm512_srli_epi32(rounded, 16);
  // NaN stays a (quiet) NaN instead of rounding into infinity.
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  out = _mm512_mask_or_epi32(out, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(out);
}

void widen(DType dtype, const void* src, float* dst, int64_t n) {
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 v = dtype == DType::kBF16 ? load_bf16(s + i, m) : load_f16(s + i, m);
    _mm512_mask_storeu_ps(dst + i, m, v);
  }
}

void narrow(const float* src, DType dtype, void* dst, int64_t n) {
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, src + i);
    const __m256i h = dtype == DType::kBF16
                          ? to_bf16(v)
                          : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(d + i, m, h);
  }
}

// The key / value rows of the attention routines: F32, or 16-bit (BF16, F16) widened exactly in
// the register as it is loaded, so the arithmetic after the load is the same for every type.
struct F32Rows {
  using T = float;
  static __m512 load(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct Bf16Rows {
  using T = uint16_t;
  static __m512 load(const uint16_t* p, __mmask16 m) { return load_bf16(p, m); }
};
struct F16Rows {
  using T = uint16_t;
  static __m512 load(const uint16_t* p, __mmask16 m) { return load_f16(p, m); }
};

// Sums of four vectors, as one __m128 {sum(a), sum(b), sum(c), sum(d)}.
inline __m256 fold(__m512 v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v),
                       _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

inline __m128 reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m256 ab = _mm256_hadd_ps(fold(a), fold(b));
  const __m256 cd = _mm256_hadd_ps(fold(c), fold(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// One vector's sum in reduce4's order (_mm512_reduce_add_ps adds the lanes in another order).
inline float reduce_like4(__m512 a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }

// kLoneRowsLikeGroups: the last rows (fewer than four) are reduced in the order of a group of
// four, so each out[r] is the same whatever `rows` is (VecOps::dot_rows' contract). Attention's
// callers keep the cheaper reduction for them: a key's score there does not need it.
template <class Rows, bool kLoneRowsLikeGroups = false>
void dot_rows_t(const float* q, const typename Rows::T* k, int64_t rows, int64_t d, int64_t k_stride,
                float scale, float* out) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const typename Rows::T* k0 = k + r * k_stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < d; i += kW) {
      const __mmask16 m = d - i >= kW ? __mmask16(0xffff) : tail_mask(d - i);
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
      a0 = _mm512_fmadd_ps(qv, Rows::load(k0 + i, m), a0);
      a1 = _mm512_fmadd_ps(qv, Rows::load(k0 + k_stride + i, m), a1);
      a2 = _mm512_fmadd_ps(qv, Rows::load(k0 + 2 * k_stride + i, m), a2);
      a3 = _mm512_fmadd_ps(qv, Rows::load(k0 + 3 * k_stride + i, m), a3);
    }
    _mm_storeu_ps(out + r, _mm_mul_ps(reduce4(a0, a1, a2, a3), _mm_set1_ps(scale)));
  }
  for (; r < rows; ++r) {
    const typename Rows::T* kr = k + r * k_stride;
    __m512 a = _mm512_setzero_ps();
    for (int64_t i = 0; i < d; i += kW) {
      const __mmask16 m = d - i >= kW ? __mmask16(0xffff) : tail_mask(d - i);
      a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), Rows::load(kr + i, m), a);
    }
    out[r] = scale * (kLoneRowsLikeGroups ? reduce_like4(a) : _mm512_reduce_add_ps(a));
  }
}

void dot_rows(const float* q, const float* k, int64_t rows, int64_t d, int64_t k_stride,
              float scale, float* out) {
  dot_rows_t<F32Rows, /*kLoneRowsLikeGroups=*/true>(q, k, rows, d, k_stride, scale, out);
}

template <class Rows>
void axpy_rows_t(const float* p, const typename Rows::T* v, int64_t rows, int64_t d, int64_t v_stride,
                 float* acc) {
  // Four accumulator vectors stay in registers over all rows.
  constexpr __mmask16 kAll = 0xffff;
  int64_t i = 0;
  for (; i + 4 * kW <= d; i += 4 * kW) {
    __m512 a0 = _mm512_loadu_ps(acc + i), a1 = _mm512_loadu_ps(acc + i + kW);
    __m512 a2 = _mm512_loadu_ps(acc + i + 2 * kW), a3 = _mm512_loadu_ps(acc + i + 3 * kW);
    for (int64_t r = 0; r < rows; ++r) {
      const __m512 pr = _mm512_set1_ps(p[r]);
      const typename Rows::T* vr = v + r * v_stride + i;
      a0 = _mm512_fmadd_ps(pr, Rows::load(vr, kAll), a0);
      a1 = _mm512_fmadd_ps(pr, Rows::load(vr + kW, kAll), a1);
      a2 = _mm512_fmadd_ps(pr, Rows::load(vr + 2 * kW, kAll), a2);
      a3 = _mm512_fmadd_ps(pr, Rows::load(vr + 3 * kW, kAll), a3);
    }
    _mm512_storeu_ps(acc + i, a0);
    _mm512_storeu_ps(acc + i + kW, a1);
    _mm512_storeu_ps(acc + i + 2 * kW, a2);
    _mm512_storeu_ps(acc + i + 3 * kW, a3);
  }
  for (; i < d; i += kW) {
    const __mmask16 m = d - i >= kW ? __mmask16(0xffff) : tail_mask(d - i);
    __m512 a = _mm512_maskz_loadu_ps(m, acc + i);
    for (int64_t r = 0; r < rows; ++r) {
      a = _mm512_fmadd_ps(_mm512_set1_ps(p[r]), Rows::load(v + r * v_stride + i, m), a);
    }
    _mm512_mask_storeu_ps(acc + i, m, a);
  }
}

void axpy_rows(const float* p, const float* v, int64_t rows, int64_t d, int64_t v_stride,
               float* acc) {
  axpy_rows_t<F32Rows>(p, v, rows, d, v_stride, acc);
}

// dot_rows for nq query rows sharing the keys: each K vector loaded once feeds every query. Every
// (query, key) score takes exactly dot_rows' operations (the same lanes over d, reduce4 for keys
// in whole groups of four from the first, the full reduction for the rest), so a query's scores
// do not depend on the queries beside it.
template <class Rows, int NQ>
void dot_rows_multi_n(const float* const* q, const typename Rows::T* k, int64_t rows, int64_t d,
                      int64_t k_stride, float scale, float* const* out) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const typename Rows::T* k0 = k + r * k_stride;
    __m512 a[NQ][4];
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) a[h][0] = a[h][1] = a[h][2] = a[h][3] = _mm512_setzero_ps();
    for (int64_t i = 0; i < d; i += kW) {
      const __mmask16 m = d - i >= kW ? __mmask16(0xffff) : tail_mask(d - i);
      const __m512 k0v = Rows::load(k0 + i, m);
      const __m512 k1v = Rows::load(k0 + k_stride + i, m);
      const __m512 k2v = Rows::load(k0 + 2 * k_stride + i, m);
      const __m512 k3v = Rows::load(k0 + 3 * k_stride + i, m);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m512 qv = _mm512_maskz_loadu_ps(m, q[h] + i);
        a[h][0] = _mm512_fmadd_ps(qv, k0v, a[h][0]);
        a[h][1] = _mm512_fmadd_ps(qv, k1v, a[h][1]);
        a[h][2] = _mm512_fmadd_ps(qv, k2v, a[h][2]);
        a[h][3] = _mm512_fmadd_ps(qv, k3v, a[h][3]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
      _mm_storeu_ps(out[h] + r, _mm_mul_ps(reduce4(a[h][0], a[h][1], a[h][2], a[h][3]), _mm_set1_ps(scale)));
    }
  }
  for (int h = 0; h < NQ; ++h) dot_rows_t<Rows>(q[h], k + r * k_stride, rows - r, d, k_stride, scale, out[h] + r);
}

template <class Rows>
void dot_rows_multi_t(const float* const* q, int nq, const typename Rows::T* k, int64_t rows, int64_t d,
                      int64_t k_stride, float scale, float* const* out) {
  for (; nq >= 4; nq -= 4, q += 4, out += 4) dot_rows_multi_n<Rows, 4>(q, k, rows, d, k_stride, scale, out);
  switch (nq) {
    case 3: dot_rows_multi_n<Rows, 3>(q, k, rows, d, k_stride, scale, out); break;
    case 2: dot_rows_multi_n<Rows, 2>(q, k, rows, d, k_stride, scale, out); break;
    case 1: dot_rows_t<Rows>(q[0], k, rows, d, k_stride, scale, out[0]); break;
    default: break;
  }
}

void dot_rows_multi(const float* const* q, int nq, const float* k, int64_t rows, int64_t d,
                    int64_t k_stride, float scale, float* const* out) {
  dot_rows_multi_t<F32Rows>(q, nq, k, rows, d, k_stride, scale, out);
}

void dot_rows_multi_16(DType dtype, const float* const* q, int nq, const uint16_t* k, int64_t rows, int64_t d,
                       int64_t k_stride, float scale, float* const* out) {
  if (dtype == DType::kBF16) {
    dot_rows_multi_t<Bf16Rows>(q, nq, k, rows, d, k_stride, scale, out);
  } else {
    dot_rows_multi_t<F16Rows>(q, nq, k, rows, d, k_stride, scale, out);
  }
}

// axpy_rows for nq accumulators over the same value rows: each V vector loaded once feeds every
// accumulator; each accumulator element sums its rows in axpy_rows' order.
template <class Rows, int NQ>
void axpy_rows_multi_n(const float* const* p, const typename Rows::T* v, int64_t rows, int64_t d,
                       int64_t v_stride, float* const* acc) {
  constexpr __mmask16 kAll = 0xffff;
  int64_t i = 0;
  for (; i + 4 * kW <= d; i += 4 * kW) {
    __m512 a[NQ][4];
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) a[h][c] = _mm512_loadu_ps(acc[h] + i + c * kW);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const typename Rows::T* vr = v + r * v_stride + i;
      const __m512 v0 = Rows::load(vr, kAll), v1 = Rows::load(vr + kW, kAll);
      const __m512 v2 = Rows::load(vr + 2 * kW, kAll), v3 = Rows::load(vr + 3 * kW, kAll);
#pragma GCC unroll 4
      for (int h = 0; h < NQ; ++h) {
        const __m512 pr = _mm512_set1_ps(p[h][r]);
        a[h][0] = _mm512_fmadd_ps(pr, v0, a[h][0]);
        a[h][1] = _mm512_fmadd_ps(pr, v1, a[h][1]);
        a[h][2] = _mm512_fmadd_ps(pr, v2, a[h][2]);
        a[h][3] = _mm512_fmadd_ps(pr, v3, a[h][3]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NQ; ++h) {
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) _mm512_storeu_ps(acc[h] + i + c * kW, a[h][c]);
    }
  }
  if (i < d) {
    for (int h = 0; h < NQ; ++h) axpy_rows_t<Rows>(p[h], v + i, rows, d - i, v_stride, acc[h] + i);
  }
}

template <class Rows>
void axpy_rows_multi_t(const float* const* p, int nq, const typename Rows::T* v, int64_t rows, int64_t d,
                       int64_t v_stride, float* const* acc) {
  for (; nq >= 4; nq -= 4, p += 4, acc += 4) axpy_rows_multi_n<Rows, 4>(p, v, rows, d, v_stride, acc);
  switch (nq) {
    case 3: axpy_rows_multi_n<Rows, 3>(p, v, rows, d, v_stride, acc); break;
    case 2: axpy_rows_multi_n<Rows, 2>(p, v, rows, d, v_stride, acc); break;
    case 1: axpy_rows_t<Rows>(p[0], v, rows, d, v_stride, acc[0]); break;
    default: break;
  }
}

void axpy_rows_multi(const float* const* p, int nq, const float* v, int64_t rows, int64_t d,
                     int64_t v_stride, float* const* acc) {
  axpy_rows_multi_t<F32Rows>(p, nq, v, rows, d, v_stride, acc);
}

void axpy_rows_multi_16(DType dtype, const float* const* p, int nq, const uint16_t* v, int64_t rows, int64_t d,
                        int64_t v_stride, float* const* acc) {
  if (dtype == DType::kBF16) {
    axpy_rows_multi_t<Bf16Rows>(p, nq, v, rows, d, v_stride, acc);
  } else {
    axpy_rows_multi_t<F16Rows>(p, nq, v, rows, d, v_stride, acc);
  }
}

float sum_squares(const float* x, int64_t n) {
  __m512 a = _mm512_setzero_ps(), b = a;
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    const __m512 u = _mm512_loadu_ps(x + i), w = _mm512_loadu_ps(x + i + kW);
    a = _mm512_fmadd_ps(u, u, a);
    b = _mm512_fmadd_ps(w, w, b);
  }
  for (; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 u = _mm512_maskz_loadu_ps(m, x + i);
    a = _mm512_fmadd_ps(u, u, a);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a, b));
}

// exp(x) to about 2 ulp (Cephes expf: range reduction by ln 2, degree-6 polynomial).
inline __m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
    const __m512 s =
        _mm512_div_ps(gv, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), gv))));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, uv));
  }
}

float max(const float* x, int64_t n) {
  __m512 a = _mm512_set1_ps(x[0]);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    a = _mm512_max_ps(a, _mm512_mask_loadu_ps(a, m, x + i));
  }
  return _mm512_reduce_max_ps(a);
}

float exp_shift(float* x, int64_t n, float shift) {
  const __m512 sh = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), sh));
    _mm512_mask_storeu_ps(x + i, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

// tanh(x) as tanh_ps in vec_avx2.cpp (Cephes tanhf).
inline __m512 tanh_ps(__m512 x) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  const __m512 e = exp_ps(_mm512_add_ps(ax, ax));
  const __m512 large_abs =
      _mm512_sub_ps(one, _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, one)));
  const __m512 large = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(large_abs), _mm512_and_si512(_mm512_castps_si512(x), sign)));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ), large,
                              small);
}

void gelu_tanh_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m512 beta = _mm512_set1_ps(static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
  const __m512 kappa = _mm512_set1_ps(0.044715f);
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 inner = _mm512_mul_ps(beta, _mm512_add_ps(x, _mm512_mul_ps(kappa, cube)));
    const __m512 y = _mm512_mul_ps(_mm512_mul_ps(half, x), _mm512_add_ps(one, tanh_ps(inner)));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(y, _mm512_maskz_loadu_ps(m, u + i)));
  }
}

void softcap(float* x, int64_t n, float cap) {
  const __m512 c = _mm512_set1_ps(cap);
  for (int64_t i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), c);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(c, tanh_ps(v)));
  }
}

}  // namespace

const VecOps kVecOpsAvx512 = {widen,          narrow,          dot_rows,  axpy_rows,
                              dot_rows_multi, axpy_rows_multi, sum_squares, silu_mul,
                              max,
                              exp_shift,      gelu_tanh_mul,   softcap,
                              dot_rows_multi_16, axpy_rows_multi_16};

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
