// Shared helpers of the CPU kernel tests: random data, 16-bit rounding, and a fixture that runs
// every test once per instruction-set path.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/half.h"
#include "core/tensor.h"
#include "weft/kernels/cpu_isa.h"

namespace weft::kernels {

// The path each parameter must select on a machine that supports it.
inline std::string expected_isa(const std::string& limit) {
  const CpuFeatures& f = cpu_features();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl;
  if (limit == "portable") return "portable";
  if (limit == "avx2") return avx2 ? "avx2" : "portable";
  return avx512 ? "avx512" : avx2 ? "avx2" : "portable";
}

// Runs the test body under limit_cpu_features(GetParam()) and restores "native" afterwards.
class IsaTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(limit_cpu_features(GetParam()).ok());
    const std::string want = expected_isa(GetParam());
    ASSERT_EQ(std::string(cpu_kernel_isa()), want);
  }
  void TearDown() override { ASSERT_TRUE(limit_cpu_features("native").ok()); }
};

// A test name for an ISA parameter ("avx512-noamx" -> "avx512_noamx").
inline std::string isa_test_name(const testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

#define WEFT_INSTANTIATE_ISA_TESTS(Suite)                                             \
  INSTANTIATE_TEST_SUITE_P(Isa, Suite, testing::Values("portable", "avx2", "native"), \
                           isa_test_name)

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// `values` stored as `dtype` in a new tensor of `shape`; `values` is replaced by what the tensor
// holds after rounding (so references use exactly the stored numbers).
inline Tensor make_stored(std::vector<float>& values, DType dtype, Shape shape) {
  Tensor t = Tensor::zeros(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      t.data_as<float>()[i] = values[i];
    } else if (dtype == DType::kBF16) {
      const uint16_t b = float_to_bf16(values[i]);
      t.data_as<uint16_t>()[i] = b;
      values[i] = bf16_to_float(b);
    } else {
      const uint16_t h = float_to_f16(values[i]);
      t.data_as<uint16_t>()[i] = h;
      values[i] = f16_to_float(h);
    }
  }
  return t;
}

inline Tensor make_f32(const std::vector<float>& values, Shape shape) {
  Tensor t = Tensor::zeros(DType::kF32, shape);
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

inline const DType kFloatDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

}  // namespace weft::kernels
