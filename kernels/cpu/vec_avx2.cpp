// AVX2 + FMA + F16C vector routines. See isa.h for why the target pragma follows the includes.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "cpu/isa.h"

#if defined(__x86_64__)
#pragma GCC target("avx2,fma,f16c")

namespace weft::kernels::cpu {
namespace {

constexpr int64_t kW = 8;

// Lane mask for the first n (< 8) lanes, for _mm256_maskload_ps / _mm256_maskstore_ps.
inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

inline __m256 load_bf16(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m128i to_bf16(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  __m256i out = _mm256_srli_epi32(rounded, 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  out = _mm256_blendv_epi8(out, quiet, nan);
  // Values are < 2^16, so the unsigned-saturating pack is exact; packus works per 128-bit lane.
  const __m256i packed = _mm256_packus_epi32(out, out);
  return _mm_unpacklo_epi64(_mm256_castsi256_si128(packed), _mm256_extracti128_si256(packed, 1));
}

void widen(DType dtype, const void* src, float* dst, int64_t n) {
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  if (dtype == DType::kBF16) {
    for (; i + kW <= n; i += kW) _mm256_storeu_ps(dst + i, load_bf16(s + i));
    for (; i < n; ++i) dst[i] = bf16_to_float(s[i]);
  } else {
    for (; i + kW <= n; i += kW) _mm256_storeu_ps(dst + i, load_f16(s + i));
    for (; i < n; ++i) dst[i] = f16_to_float(s[i]);
  }
}

void narrow(const float* src, DType dtype, void* dst, int64_t n) {
  if (dtype == DType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  if (dtype == DType::kBF16) {
    for (; i + kW <= n; i += kW) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), to_bf16(_mm256_loadu_ps(src + i)));
    }
    for (; i < n; ++i) d[i] = float_to_bf16(src[i]);
  } else {
    for (; i + kW <= n; i += kW) {
      _mm_storeu_si128(
          reinterpret_cast<__m128i*>(d + i),
          _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    for (; i < n; ++i) d[i] = float_to_f16(src[i]);
  }
}

inline __m128 reduce4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// One vector's sum in reduce4's order (reduce1 adds the lanes in another order).
inline float reduce_like4(__m256 a) { return _mm_cvtss_f32(reduce4(a, a, a, a)); }

inline float reduce1(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void dot_rows(const float* q, const float* k, int64_t rows, int64_t d, int64_t k_stride,
              float scale, float* out) {
  const int64_t dv = d / kW * kW;
  const __m256i m = tail_mask(d - dv);
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* k0 = k + r * k_stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i < dv; i += kW) {
      const __m256 qv = _mm256_loadu_ps(q + i);
      a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + i), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + k_stride + i), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 2 * k_stride + i), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 3 * k_stride + i), a3);
    }
    if (i < d) {
      const __m256 qv = _mm256_maskload_ps(q + i, m);
      a0 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + i, m), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + k_stride + i, m), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + 2 * k_stride + i, m), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_maskload_ps(k0 + 3 * k_stride + i, m), a3);
    }
    _mm_storeu_ps(out + r, _mm_mul_ps(reduce4(a0, a1, a2, a3), _mm_set1_ps(scale)));
  }
  for (; r < rows; ++r) {
    const float* kr = k + r * k_stride;
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i < dv; i += kW) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(kr + i), a);
    if (i < d) a = _mm256_fmadd_ps(_mm256_maskload_ps(q + i, m), _mm256_maskload_ps(kr + i, m), a);
    out[r] = scale * reduce_like4(a);  // as in a group of four: VecOps::dot_rows' contract
  }
}

void axpy_rows(const float* p, const float* v, int64_t rows, int64_t d, int64_t v_stride,
               float* acc) {
  int64_t i = 0;
  for (; i + 4 * kW <= d; i += 4 * kW) {
    __m256 a0 = _mm256_loadu_ps(acc + i), a1 = _mm256_loadu_ps(acc + i + kW);
    __m256 a2 = _mm256_loadu_ps(acc + i + 2 * kW), a3 = _mm256_loadu_ps(acc + i + 3 * kW);
    for (int64_t r = 0; r < rows; ++r) {
      const __m256 pr = _mm256_set1_ps(p[r]);
      const float* vr = v + r * v_stride + i;
      a0 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(vr), a0);
      a1 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(vr + kW), a1);
      a2 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(vr + 2 * kW), a2);
      a3 = _mm256_fmadd_ps(pr, _mm256_loadu_ps(vr + 3 * kW), a3);
    }
    _mm256_storeu_ps(acc + i, a0);
    _mm256_storeu_ps(acc + i + kW, a1);
    _mm256_storeu_ps(acc + i + 2 * kW, a2);
    _mm256_storeu_ps(acc + i + 3 * kW, a3);
  }
  for (; i < d; i += kW) {
    const __m256i m = tail_mask(d - i >= kW ? kW : d - i);
    __m256 a = _mm256_maskload_ps(acc + i, m);
    for (int64_t r = 0; r < rows; ++r) {
      a = _mm256_fmadd_ps(_mm256_set1_ps(p[r]), _mm256_maskload_ps(v + r * v_stride + i, m), a);
    }
    _mm256_maskstore_ps(acc + i, m, a);
  }
}

float sum_squares(const float* x, int64_t n) {
  __m256 a = _mm256_setzero_ps(), b = a;
  int64_t i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    const __m256 u = _mm256_loadu_ps(x + i), w = _mm256_loadu_ps(x + i + kW);
    a = _mm256_fmadd_ps(u, u, a);
    b = _mm256_fmadd_ps(w, w, b);
  }
  float s = reduce1(_mm256_add_ps(a, b));
  for (; i < n; ++i) s += x[i] * x[i];
  return s;
}

// exp(x) to about 2 ulp (Cephes expf: range reduction by ln 2, degree-6 polynomial).
inline __m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n built in the exponent field; n is within [-126, 127] after the clamp.
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 s =
        _mm256_div_ps(gv, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

float max(const float* x, int64_t n) {
  float m = x[0];
  int64_t i = 0;
  if (n >= kW) {
    __m256 a = _mm256_loadu_ps(x);
    for (i = kW; i + kW <= n; i += kW) a = _mm256_max_ps(a, _mm256_loadu_ps(x + i));
    alignas(32) float lanes[kW];
    _mm256_store_ps(lanes, a);
    for (float v : lanes) m = std::max(m, v);
  }
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

float exp_shift(float* x, int64_t n, float shift) {
  const __m256 sh = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  float s = reduce1(sum);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    s += x[i];
  }
  return s;
}

// tanh(x) to a few ulp (Cephes tanhf): an odd polynomial for |x| < 0.625, else
// 1 - 2 / (exp(2|x|) + 1) with the sign of x (exp_ps clamps, so large |x| gives exactly +-1).
inline __m256 tanh_ps(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  const __m256 z = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  const __m256 e = exp_ps(_mm256_add_ps(ax, ax));
  __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  large = _mm256_or_ps(large, _mm256_and_ps(x, sign));
  return _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

void gelu_tanh_mul(const float* g, const float* u, float* out, int64_t n) {
  const __m256 beta = _mm256_set1_ps(static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
  const __m256 kappa = _mm256_set1_ps(0.044715f);
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 x = _mm256_loadu_ps(g + i);
    const __m256 cube = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    const __m256 inner = _mm256_mul_ps(beta, _mm256_add_ps(x, _mm256_mul_ps(kappa, cube)));
    const __m256 y = _mm256_mul_ps(_mm256_mul_ps(half, x), _mm256_add_ps(one, tanh_ps(inner)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(y, _mm256_loadu_ps(u + i)));
  }
  kVecOpsPortable.gelu_tanh_mul(g + i, u + i, out + i, n - i);
}

void softcap(float* x, int64_t n, float cap) {
  const __m256 c = _mm256_set1_ps(cap);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), c);
    _mm256_storeu_ps(x + i, _mm256_mul_ps(c, tanh_ps(v)));
  }
  kVecOpsPortable.softcap(x + i, n - i, cap);
}

}  // namespace

const VecOps kVecOpsAvx2 = {widen,
                              narrow,
                              dot_rows,
                              axpy_rows,
                              dot_rows_each<dot_rows>,
                              axpy_rows_each<axpy_rows>,
                              sum_squares,
                              silu_mul,
                              max,
                              exp_shift,
                              gelu_tanh_mul,
                              softcap,
                              dot_rows_multi_widened<widen, dot_rows_each<dot_rows>>,
                              axpy_rows_multi_widened<widen, axpy_rows_each<axpy_rows>>};

}  // namespace weft::kernels::cpu

#endif  // __x86_64__
