// Private to kernels/cpu: the instruction-set paths and the small vector routines every kernel
// family shares (widening 16-bit floats, dot products, axpy, SwiGLU), one table per path.
//
// Each path lives in its own translation unit (*_avx512.cpp, *_avx2.cpp, *_portable.cpp). The
// ISA files raise the target with `#pragma GCC target` *after* their includes, so only their own
// (internal-linkage) functions use the wider instructions and the library stays runnable on any
// x86-64; dispatch reads weft::cpu_features() at every call, so tests can switch paths.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"

namespace weft::kernels::cpu {

enum class Isa { kPortable, kAvx2, kAvx512 };

// The widest path cpu_features() allows now.
Isa current_isa();

struct VecOps {
  // dst[i] = float(src[i]) for src of dtype F32, F16 or BF16.
  void (*widen)(DType dtype, const void* src, float* dst, int64_t n);
  // dst[i] = dtype(src[i]) (round to nearest even) for dst of dtype F32, F16 or BF16.
  void (*narrow)(const float* src, DType dtype, void* dst, int64_t n);
  // out[r] = scale * dot(q[0..d), k[r * k_stride .. + d)) for r < rows. Each out[r] is the same,
  // bit for bit, whatever `rows` is (the exact product of block-quantized weights relies on it
  // for batch invariance).
  void (*dot_rows)(const float* q, const float* k, int64_t rows, int64_t d, int64_t k_stride,
                   float scale, float* out);
  // acc[0..d) += sum_r p[r] * v[r * v_stride .. + d).
  void (*axpy_rows)(const float* p, const float* v, int64_t rows, int64_t d, int64_t v_stride,
                    float* acc);
  // dot_rows for nq query rows against the same keys (the AVX-512 path loads each key once for
  // all of them): out[h][r] does not depend on nq, and for the keys in whole groups of four from
  // the first it is dot_rows(q[h], ..., out[h])'s, bit for bit. The last keys (rows % 4) may be
  // summed in another order (the AVX-512 path's cheaper reduction; attention does not need more).
  void (*dot_rows_multi)(const float* const* q, int nq, const float* k, int64_t rows, int64_t d,
                         int64_t k_stride, float scale, float* const* out);
  // axpy_rows for nq accumulators over the same value rows, each bit for bit as axpy_rows.
  void (*axpy_rows_multi)(const float* const* p, int nq, const float* v, int64_t rows, int64_t d,
                          int64_t v_stride, float* const* acc);
  // sum of x[i]^2.
  float (*sum_squares)(const float* x, int64_t n);
  // out[i] = silu(g[i]) * u[i]; out may alias g or u.
  void (*silu_mul)(const float* g, const float* u, float* out, int64_t n);
  // max of x[0..n), n >= 1 (exact, so the same whatever the order).
  float (*max)(const float* x, int64_t n);
  // x[i] = exp(x[i] - shift) in place; returns the sum of the new values.
  float (*exp_shift)(float* x, int64_t n, float shift);
  // out[i] = gelu_tanh(g[i]) * u[i], gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  // (torch's gelu(approximate="tanh")); out may alias g or u.
  void (*gelu_tanh_mul)(const float* g, const float* u, float* out, int64_t n);
  // x[i] = cap * tanh(x[i] / cap) in place (soft-capping).
  void (*softcap)(float* x, int64_t n, float cap);
  // dot_rows_multi / axpy_rows_multi over 16-bit key / value rows (`dtype` BF16 or F16, a KV
  // cache's), bit for bit what widening the rows and the F32 routine give (the AVX-512 path
  // widens each vector in its register as it loads it).
  void (*dot_rows_multi_16)(DType dtype, const float* const* q, int nq, const uint16_t* k, int64_t rows,
                            int64_t d, int64_t k_stride, float scale, float* const* out);
  void (*axpy_rows_multi_16)(DType dtype, const float* const* p, int nq, const uint16_t* v, int64_t rows,
                             int64_t d, int64_t v_stride, float* const* acc);
};

// dot_rows_multi / axpy_rows_multi as one call of the single-row routine per query.
template <auto DotRows>
void dot_rows_each(const float* const* q, int nq, const float* k, int64_t rows, int64_t d,
                   int64_t k_stride, float scale, float* const* out) {
  for (int h = 0; h < nq; ++h) DotRows(q[h], k, rows, d, k_stride, scale, out[h]);
}
template <auto AxpyRows>
void axpy_rows_each(const float* const* p, int nq, const float* v, int64_t rows, int64_t d,
                    int64_t v_stride, float* const* acc) {
  for (int h = 0; h < nq; ++h) AxpyRows(p[h], v, rows, d, v_stride, acc[h]);
}

// dot_rows_multi_16 / axpy_rows_multi_16 as the widened rows (into a per-thread buffer) and the
// F32 routine.
template <auto Widen, auto DotRowsMulti>
void dot_rows_multi_widened(DType dtype, const float* const* q, int nq, const uint16_t* k, int64_t rows,
                            int64_t d, int64_t k_stride, float scale, float* const* out) {
  thread_local std::vector<float> rows_f32;
  rows_f32.resize(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) Widen(dtype, k + r * k_stride, rows_f32.data() + r * d, d);
  DotRowsMulti(q, nq, rows_f32.data(), rows, d, d, scale, out);
}
template <auto Widen, auto AxpyRowsMulti>
void axpy_rows_multi_widened(DType dtype, const float* const* p, int nq, const uint16_t* v, int64_t rows,
                             int64_t d, int64_t v_stride, float* const* acc) {
  thread_local std::vector<float> rows_f32;
  rows_f32.resize(static_cast<size_t>(rows * d));
  for (int64_t r = 0; r < rows; ++r) Widen(dtype, v + r * v_stride, rows_f32.data() + r * d, d);
  AxpyRowsMulti(p, nq, rows_f32.data(), rows, d, d, acc);
}

const VecOps& vec_ops(Isa isa);
inline const VecOps& vec_ops() { return vec_ops(current_isa()); }

extern const VecOps kVecOpsPortable;
extern const VecOps kVecOpsAvx2;
extern const VecOps kVecOpsAvx512;

}  // namespace weft::kernels::cpu
