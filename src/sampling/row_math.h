// The sampler's passes over a whole logits row (a vocabulary: 32k-256k floats, once per row per
// step): the maximum, exp(x - max) with its sum, and division by the temperature. Each runs as
// AVX-512 code where the CPU has it (cpu_features()) and as baseline x86-64 code elsewhere, with
// the same arithmetic per element and the same summation order: the results are bit for bit the
// same on every path, so a seeded draw picks the same token on every machine.
#pragma once

#include <cstdint>
#include <cstring>

namespace weft {

// Cephes expf's polynomial and exponent for x in [-87, 0], given nf = floor(x * log2(e) + 0.5).
inline float exp_given_floor(float x, float nf) {
  const int n = static_cast<int>(nf);
  const float r = x - nf * 0.693359375f + nf * 2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

// exp(x) for x <= 0 to about 1 ulp (Cephes expf), written so loops over it vectorise on baseline
// x86-64; x below -87 (including -inf) gives exactly 0: such tokens weigh < 1e-38 of the most
// probable.
inline float exp_nonpositive(float x) {
  const bool underflow = !(x >= -87.0f);
  x = underflow ? -87.0f : x;
  const float fx = x * 1.44269504088896341f + 0.5f;
  int n = static_cast<int>(fx);
  n -= fx < static_cast<float>(n);  // floor for negative values
  return underflow ? 0.0f : exp_given_floor(x, static_cast<float>(n));
}

// exp_nonpositive as the AVX-512 path computes it (another floor, the same bits): for tests.
float exp_nonpositive_vectorised(float x);

// The value std::max_element finds in x[0, n), n >= 1: the largest, NaNs skipped, except that
// a NaN x[0] is the answer.
float row_max(const float* x, int64_t n);

// w[i] = exp_nonpositive(x[i] - max) over the row; returns sum(w) in double, added into 8
// accumulators (element i into accumulator i % 8, the tail into the first) and those summed
// pairwise.
double exp_row(const float* x, float max, float* w, int64_t n);

// x[i] /= divisor over the row.
void divide_row(float* x, int64_t n, float divisor);

}  // namespace weft
