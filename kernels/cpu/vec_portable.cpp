// Portable (scalar, compiler-vectorised where it can) vector routines: the fallback path and
// the shape every wider path must agree with.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "cpu/isa.h"

namespace weft::kernels::cpu {
namespace {

// Eight independent partial sums let the compiler use SIMD without reassociating a float sum.
constexpr int kLanes = 8;

void widen(DType dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(s[i]);
      return;
    }
    case DType::kF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_float(s[i]);
      return;
    }
    default:
      return;
  }
}

void narrow(const float* src, DType dtype, void* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_bf16(src[i]);
      return;
    }
    case DType::kF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = float_to_f16(src[i]);
      return;
    }
    default:
      return;
  }
}

float dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void dot_rows(const float* q, const float* k, int64_t rows, int64_t d, int64_t k_stride,
              float scale, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = scale * dot(q, k + r * k_stride, d);
}

void axpy_rows(const float* p, const float* v, int64_t rows, int64_t d, int64_t v_stride,
               float* acc) {
  for (int64_t r = 0; r < rows; ++r) {
    const float a = p[r];
    const float* vr = v + r * v_stride;
    for (int64_t i = 0; i < d; ++i) acc[i] += a * vr[i];
  }
}

float sum_squares(const float* x, int64_t n) { return dot(x, x, n); }

void silu_mul(const float* g, const float* u, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

float max(const float* x, int64_t n) {
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

float exp_shift(float* x, int64_t n, float shift) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - shift);
    sum += x[i];
  }
  return sum;
}

// The order of operations of torch's CPU gelu(approximate="tanh").
void gelu_tanh_mul(const float* g, const float* u, float* out, int64_t n) {
  constexpr float kBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  constexpr float kKappa = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = g[i];
    const float inner = kBeta * (x + kKappa * (x * x * x));
    out[i] = 0.5f * x * (1.0f + std::tanh(inner)) * u[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace

const VecOps kVecOpsPortable = {widen,
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
