// apply_rope's partial rotary (Phi3's partial_rotary_factor) and per-token frequency tables
// (LongRoPE's short/long sets) against a double-precision reference written here.
// Tolerance 1e-5 relative (+2e-6 absolute), as the full-head RoPE test in elementwise_test.cpp;
// the pass-through dimensions must be bit-identical.
#include "weft/kernels/rope.h"

#include <cmath>
#include <cstring>

#include "kernel_test_util.h"

namespace weft::kernels {
namespace {

void expect_near_all(const float* got, const std::vector<double>& want, double rel, double abs,
                     const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], abs + rel * std::fabs(want[i])) << what << " at " << i;
  }
}

// rotate_half over the first 2 * pairs dims of each head with the token's row of `inv`.
std::vector<double> rope_ref(const std::vector<float>& x, const std::vector<int32_t>& pos,
                             const std::vector<float>& inv, const std::vector<int32_t>& row,
                             int64_t heads, int64_t d, int64_t pairs, float scaling) {
  std::vector<double> out(x.begin(), x.end());
  const int64_t tokens = static_cast<int64_t>(pos.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* xr = x.data() + (t * heads + h) * d;
      double* rr = out.data() + (t * heads + h) * d;
      for (int64_t i = 0; i < pairs; ++i) {
        const float a = static_cast<float>(pos[t]) * inv[row[t] * pairs + i];
        const double c = std::cos(static_cast<double>(a)) * scaling;
        const double s = std::sin(static_cast<double>(a)) * scaling;
        rr[i] = xr[i] * c - xr[i + pairs] * s;
        rr[i + pairs] = xr[i + pairs] * c + xr[i] * s;
      }
    }
  }
  return out;
}

TEST(RopeKernelTest, PartialRotaryLeavesTheTailUntouched) {
  ThreadPool pool(2);
  const int64_t tokens = 9, heads = 3, d = 16;
  for (int64_t rotary : {2, 8, 12, 16}) {
    const int64_t pairs = rotary / 2;
    std::vector<float> xv = random_floats(tokens * heads * d, 11 + rotary, -2, 2);
    std::vector<float> inv(pairs);
    for (int64_t i = 0; i < pairs; ++i)
      inv[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / rotary));
    std::vector<int32_t> pos(tokens), row(tokens, 0);
    for (int64_t t = 0; t < tokens; ++t) pos[t] = static_cast<int32_t>(t * 531 % 3000);
    Tensor x = make_f32(xv, {tokens, heads, d});
    Tensor p = Tensor::zeros(DType::kI32, {tokens});
    std::memcpy(p.data(), pos.data(), tokens * sizeof(int32_t));
    apply_rope(x, p, make_f32(inv, {pairs}), 1.25f, pool);
    const std::vector<double> ref = rope_ref(xv, pos, inv, row, heads, d, pairs, 1.25f);
    expect_near_all(x.data_as<float>(), ref, 1e-5, 2e-6, "rotary " + std::to_string(rotary));
    for (int64_t r = 0; r < tokens * heads; ++r) {
      for (int64_t i = rotary; i < d; ++i) {
        ASSERT_EQ(x.data_as<float>()[r * d + i], xv[r * d + i]) << "pass-through dim " << i;
      }
    }
  }
}

TEST(RopeKernelTest, EachTokenUsesItsTableRow) {
  ThreadPool pool(3);
  const int64_t tokens = 13, heads = 2, d = 12, pairs = 4;  // rotary 8 of 12
  std::vector<float> xv = random_floats(tokens * heads * d, 5, -2, 2);
  std::vector<float> inv(2 * pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    const float base = static_cast<float>(std::pow(10000.0, -2.0 * i / (2 * pairs)));
    inv[i] = base / (1.0f + 0.5f * i);          // "short"
    inv[pairs + i] = base / (1.0f + 7.0f * i);  // "long"
  }
  std::vector<int32_t> pos(tokens), row(tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    pos[t] = static_cast<int32_t>(40 + t);
    row[t] = pos[t] + 1 > 48 ? 1 : 0;
  }
  Tensor x = make_f32(xv, {tokens, heads, d});
  Tensor p = Tensor::zeros(DType::kI32, {tokens});
  std::memcpy(p.data(), pos.data(), tokens * sizeof(int32_t));
  Tensor table = Tensor::zeros(DType::kI32, {tokens});
  std::memcpy(table.data(), row.data(), tokens * sizeof(int32_t));
  apply_rope(x, p, make_f32(inv, {2, pairs}), 1.1f, pool, &table.view());
  expect_near_all(x.data_as<float>(), rope_ref(xv, pos, inv, row, heads, d, pairs, 1.1f), 1e-5,
                  2e-6, "two tables");
  // Both rows are really used: the token at 47 differs from what the long row would give.
  std::vector<int32_t> all_long(tokens, 1);
  const std::vector<double> other = rope_ref(xv, pos, inv, all_long, heads, d, pairs, 1.1f);
  EXPECT_GT(std::fabs(other[7 * heads * d + 1] - x.data_as<float>()[7 * heads * d + 1]), 1e-3);
}

}  // namespace
}  // namespace weft::kernels
