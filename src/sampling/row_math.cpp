#include "sampling/row_math.h"

#include <cmath>
#include <limits>

#include "core/cpu_features.h"

namespace weft {
namespace {

// The bodies, inlined into a baseline and an AVX-512 function each (the compiler vectorises them
// for the target it compiles them for; this file is built with -ffp-contract=off, so no target
// fuses a multiply and an add the other does not).

[[gnu::always_inline]] inline float row_max_body(const float* x, int64_t n) {
  // 16 independent lanes (NaNs never replace a lane's value), then the lanes, then x[0]'s rule.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float& l : lane) l = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  }
  for (; i < n; ++i) lane[0] = x[i] > lane[0] ? x[i] : lane[0];
  float m = x[0];
  for (float l : lane) m = l > m ? l : m;
  return m;
}

// exp_nonpositive with floor(fx) taken by std::floor (a vector instruction where AVX-512 is,
// which GCC vectorises there; exp_nonpositive's truncate-and-correct, which it vectorises on
// baseline x86-64, it does not): the same value of n for every fx the function meets, so the
// same bits (tests/unit/sampling/row_math_test.cpp checks both over the whole input range).
[[gnu::always_inline]] inline float exp_nonpositive_by_floor(float x) {
  const bool underflow = !(x >= -87.0f);
  x = underflow ? -87.0f : x;
  return underflow ? 0.0f : exp_given_floor(x, std::floor(x * 1.44269504088896341f + 0.5f));
}

template <float (*Exp)(float)>
[[gnu::always_inline]] inline double exp_row_body(const float* __restrict x, float max, float* __restrict w,
                                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) w[i] = Exp(x[i] - max);
  // Independent accumulators: the sum is latency-bound otherwise.
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j];
  }
  for (; i < n; ++i) acc[0] += w[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

[[gnu::always_inline]] inline void divide_row_body(float* x, int64_t n, float divisor) {
  for (int64_t i = 0; i < n; ++i) x[i] /= divisor;
}

float row_max_baseline(const float* x, int64_t n) { return row_max_body(x, n); }
double exp_row_baseline(const float* x, float max, float* w, int64_t n) {
  return exp_row_body<exp_nonpositive>(x, max, w, n);
}
void divide_row_baseline(float* x, int64_t n, float divisor) { divide_row_body(x, n, divisor); }

#if defined(__x86_64__)
[[gnu::target("avx512f")]] float row_max_avx512(const float* x, int64_t n) { return row_max_body(x, n); }
[[gnu::target("avx512f")]] double exp_row_avx512(const float* x, float max, float* w, int64_t n) {
  return exp_row_body<exp_nonpositive_by_floor>(x, max, w, n);
}
[[gnu::target("avx512f")]] void divide_row_avx512(float* x, int64_t n, float divisor) {
  divide_row_body(x, n, divisor);
}
bool use_avx512() { return cpu_features().avx512f; }
#else
float row_max_avx512(const float* x, int64_t n) { return row_max_body(x, n); }
double exp_row_avx512(const float* x, float max, float* w, int64_t n) {
  return exp_row_body<exp_nonpositive>(x, max, w, n);
}
void divide_row_avx512(float* x, int64_t n, float divisor) { divide_row_body(x, n, divisor); }
bool use_avx512() { return false; }
#endif

}  // namespace

float exp_nonpositive_vectorised(float x) { return exp_nonpositive_by_floor(x); }

float row_max(const float* x, int64_t n) { return use_avx512() ? row_max_avx512(x, n) : row_max_baseline(x, n); }

double exp_row(const float* x, float max, float* w, int64_t n) {
  return use_avx512() ? exp_row_avx512(x, max, w, n) : exp_row_baseline(x, max, w, n);
}

void divide_row(float* x, int64_t n, float divisor) {
  if (use_avx512()) {
    divide_row_avx512(x, n, divisor);
  } else {
    divide_row_baseline(x, n, divisor);
  }
}

}  // namespace weft
