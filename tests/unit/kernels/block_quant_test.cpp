// Block-quantized weights: the reference conversions against the `gguf` package (dumps in
// data/block_quant_reference.txt, made by data/make_block_quant_reference.py), the quantizers'
// round-trip bounds, and linear() with block-quantized weights on every ISA path against
// dequantize-then-multiply in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "weft/kernels/block_quant.h"
#include "weft/kernels/embedding.h"
#include "weft/kernels/linear.h"

#include "kernel_test_util.h"

namespace weft::kernels {
namespace {

const DType kBlockDTypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                              DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                              DType::kI4G64, DType::kI4G128, DType::kI4G32F, DType::kI4G64F,
                              DType::kI4G128F};

DType dtype_named(const std::string& name) {
  for (DType d : kBlockDTypes) {
    if (name == dtype_name(d)) return d;
  }
  ADD_FAILURE() << "unknown type " << name;
  return DType::kQ8_0;
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::vector<float> floats_of(std::istringstream& in, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) {
    std::string s;
    in >> s;
    f = std::strtof(s.c_str(), nullptr);
  }
  return v;
}

struct ReferenceCase {
  std::string kind;  // "dequantize" or "quantize"
  DType dtype;
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

std::vector<ReferenceCase> load_reference() {
  std::ifstream file(std::string(WEFT_SOURCE_DIR) + "/tests/unit/kernels/data/block_quant_reference.txt");
  std::vector<ReferenceCase> cases;
  std::string first, second;
  while (std::getline(file, first) && std::getline(file, second)) {
    std::istringstream a(first), b(second);
    ReferenceCase c;
    std::string type, tag, hex;
    int64_t n = 0;
    a >> c.kind >> type >> n;
    c.dtype = dtype_named(type);
    b >> tag;
    if (c.kind == "dequantize") {
      a >> hex;
      c.bytes = from_hex(hex);
      c.values = floats_of(b, n);
    } else {
      c.values = floats_of(a, n);
      b >> hex;
      c.bytes = from_hex(hex);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// On the AVX-512 path where the CPU has it ("native") and on the reference loop ("avx2").
TEST(BlockQuantReference, DequantizeIsBitExactWithGguf) {
  for (const char* isa : {"native", "avx2"}) {
    ASSERT_TRUE(limit_cpu_features(isa).ok());
    int checked = 0;
    for (const ReferenceCase& c : load_reference()) {
      if (c.kind != "dequantize") continue;
      const int64_t n = static_cast<int64_t>(c.values.size());
      ASSERT_EQ(c.bytes.size(), dtype_nbytes(c.dtype, n));
      std::vector<float> out(c.values.size());
      dequantize_row(c.dtype, c.bytes.data(), out.data(), n);
      for (int64_t t = 0; t < n; ++t) {
        ASSERT_EQ(out[t], c.values[t]) << dtype_name(c.dtype) << " element " << t << " (" << isa << ")";
      }
      ++checked;
    }
    EXPECT_EQ(checked, 8);  // every GGUF block type
  }
  ASSERT_TRUE(limit_cpu_features("native").ok());
}

TEST(BlockQuantReference, LegacyQuantizersAreBitExactWithGguf) {
  int checked = 0;
  for (const ReferenceCase& c : load_reference()) {
    if (c.kind != "quantize") continue;
    const int64_t n = static_cast<int64_t>(c.values.size());
    std::vector<uint8_t> out(dtype_nbytes(c.dtype, n));
    quantize_row(c.dtype, c.values.data(), out.data(), n);
    EXPECT_EQ(out, c.bytes) << dtype_name(c.dtype);
    ++checked;
  }
  EXPECT_EQ(checked, 5);  // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1
}

// Levels of a type: a round trip stays within 1.5 steps of the block's range (half a step from
// rounding, the rest from the f16 scales and the K-quants' 6-bit / int8 sub-scales).
double levels_of(DType d) {
  switch (d) {
    case DType::kQ8_0: return 255;
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ5_K: return 31;
    case DType::kQ6_K: return 63;
    default: return 15;
  }
}

// Every path dequantizes every block type to the same bits as the portable loop (the GGUF types
// are also checked against gguf above; this covers weft's own int4 groups and the AVX-512
// in-register decoders of every type).
TEST(BlockQuant, DequantizeIsTheSameOnEveryPath) {
  for (DType d : kBlockDTypes) {
    const int64_t n = dtype_block_elems(d) * 5;
    std::vector<float> x = random_floats(static_cast<size_t>(n), 23, -3.0f, 2.0f);
    std::vector<uint8_t> q(dtype_nbytes(d, n));
    quantize_row(d, x.data(), q.data(), n, false);
    ASSERT_TRUE(limit_cpu_features("portable").ok());
    std::vector<float> want(static_cast<size_t>(n));
    dequantize_row(d, q.data(), want.data(), n);
    for (const char* isa : {"avx2", "avx512-novnni", "native"}) {
      ASSERT_TRUE(limit_cpu_features(isa).ok());
      std::vector<float> got(static_cast<size_t>(n));
      dequantize_row(d, q.data(), got.data(), n);
      for (int64_t t = 0; t < n; ++t) {
        ASSERT_EQ(got[t], want[t]) << dtype_name(d) << " element " << t << " (" << isa << ")";
      }
    }
  }
  ASSERT_TRUE(limit_cpu_features("native").ok());
}

TEST(BlockQuant, RoundTripWithinAStepOfEachBlocksRange) {
  for (DType d : kBlockDTypes) {
    for (bool symmetric : {false, true}) {
      if (symmetric && d != DType::kI4G64 && d != DType::kI4G128 && d != DType::kI4G64F) continue;
      const int64_t block = dtype_block_elems(d), n = block * 6;
      std::vector<float> x = random_floats(static_cast<size_t>(n), 7);
      for (int64_t t = 0; t < block; ++t) x[t] = 0.0f;              // an all-zero block
      for (int64_t t = block; t < 2 * block; ++t) x[t] = 0.25f;      // a constant block
      for (int64_t t = 2 * block; t < 3 * block; ++t) x[t] *= 0.01f; // a small-scale block
      x[4 * block + 3] = 9.0f;                                        // an outlier
      std::vector<uint8_t> q(dtype_nbytes(d, n));
      quantize_row(d, x.data(), q.data(), n, symmetric);
      std::vector<float> back(static_cast<size_t>(n));
      dequantize_row(d, q.data(), back.data(), n);
      for (int64_t b = 0; b < n / block; ++b) {
        float lo = x[b * block], hi = lo;
        for (int64_t t = b * block; t < (b + 1) * block; ++t) {
          lo = std::min(lo, x[t]);
          hi = std::max(hi, x[t]);
        }
        // Symmetric and minimum-at-most-zero types quantize [min(lo, 0), max(hi, 0)] or
        // [-max|x|, max|x|]: the range that sets their step.
        const double range = std::max<double>(hi, 0.0) - std::min<double>(lo, 0.0) +
                             (symmetric || d == DType::kQ8_0 || d == DType::kQ4_0 || d == DType::kQ5_0 || d == DType::kQ6_K ? std::max(std::fabs(lo), std::fabs(hi)) : 0.0);
        const double bound = 1.5 * range / levels_of(d) + 1e-6;
        for (int64_t t = b * block; t < (b + 1) * block; ++t) {
          ASSERT_LE(std::fabs(back[t] - x[t]), bound)
              << dtype_name(d) << (symmetric ? " symmetric" : "") << " element " << t << " x=" << x[t];
        }
      }
    }
  }
}

// float_to_fp8_e4m3 against a brute-force search over every finite code: the nearest value,
// ties to the even code, past 448 saturated; and every finite code converts back to itself.
TEST(BlockQuant, Fp8E4m3RoundsToTheNearestCode) {
  std::vector<float> values;  // the 127 non-negative finite codes' values, by code
  for (int c = 0; c < 0x7F; ++c) values.push_back(fp8_e4m3_to_float(static_cast<uint8_t>(c)));
  auto nearest = [&](float v) {
    const float a = std::fabs(v);
    int best = 0;
    for (int c = 1; c < 0x7F; ++c) {
      const float d = std::fabs(values[c] - a), best_d = std::fabs(values[best] - a);
      if (d < best_d || (d == best_d && c % 2 == 0)) best = c;
    }
    return static_cast<uint8_t>((std::signbit(v) ? 0x80 : 0) | best);
  };
  for (int c = 0; c < 0x100; ++c) {
    if ((c & 0x7F) == 0x7F) continue;
    EXPECT_EQ(float_to_fp8_e4m3(fp8_e4m3_to_float(static_cast<uint8_t>(c))), c) << "code " << c;
  }
  std::vector<float> probes = random_floats(20000, 11, -500.0f, 500.0f);
  for (float v : random_floats(20000, 12, -0.03f, 0.03f)) probes.push_back(v);  // subnormals
  for (int c = 0; c + 1 < 0x7F; ++c) probes.push_back(0.5f * (values[c] + values[c + 1]));  // ties
  probes.push_back(1e9f);
  for (float v : probes) {
    const uint8_t want = std::fabs(v) >= 448.0f ? static_cast<uint8_t>((v < 0 ? 0x80 : 0) | 0x7E) : nearest(v);
    ASSERT_EQ(float_to_fp8_e4m3(v), want) << "v = " << v;
  }
  EXPECT_EQ(float_to_fp8_e4m3(std::nanf("")), 0x7E) << "NaN saturates: no NaN code is written";
}

// F8B64 quantization: each block's largest magnitude lands on 448 * scale exactly, and every
// element is within half an e4m3 step (relative 2^-4, or 2^-10 * scale among the subnormals).
TEST(BlockQuant, F8B64QuantizesEachBlockToTheNearestScaledCode) {
  const int64_t n = 64 * 5;
  std::vector<float> x = random_floats(static_cast<size_t>(n), 9, -3.0f, 3.0f);
  for (int64_t t = 0; t < 64; ++t) x[t] = 0.0f;      // an all-zero block
  for (int64_t t = 64; t < 128; ++t) x[t] *= 1e-6f;  // a tiny-scale block
  x[200] = -40.0f;                                   // an outlier sets its block's scale
  std::vector<uint8_t> q(dtype_nbytes(DType::kF8B64, n));
  quantize_row(DType::kF8B64, x.data(), q.data(), n);
  std::vector<float> back(static_cast<size_t>(n));
  dequantize_row(DType::kF8B64, q.data(), back.data(), n);
  for (int64_t b = 0; b < n / 64; ++b) {
    float scale;
    std::memcpy(&scale, q.data() + b * 68, 4);
    float amax = 0.0f;
    for (int64_t t = b * 64; t < (b + 1) * 64; ++t) amax = std::max(amax, std::fabs(x[t]));
    EXPECT_EQ(scale, amax / 448.0f) << "block " << b;
    for (int64_t t = b * 64; t < (b + 1) * 64; ++t) {
      const double bound = std::max(std::fabs(x[t]) / 16.0, std::ldexp(1.0, -10) * scale) + 1e-12;
      ASSERT_LE(std::fabs(back[t] - x[t]), bound) << "element " << t << " x=" << x[t];
      if (std::fabs(x[t]) == amax && amax > 0) {
        EXPECT_EQ(std::fabs(back[t]), 448.0f * scale);
      }
    }
  }
}

TEST(BlockQuant, ActivationGroupsRoundToHalfAStep) {
  std::vector<float> x = random_floats(64, 3, -5.0f, 5.0f);
  for (int t = 16; t < 32; ++t) x[t] = 0.0f;
  std::vector<int8_t> q(64);
  std::vector<float> scale(4), sums(4);
  quantize_activation_groups(x.data(), 64, q.data(), scale.data(), sums.data());
  EXPECT_EQ(scale[1], 0.0f);
  for (int g = 0; g < 4; ++g) {
    int sum = 0;
    for (int t = 16 * g; t < 16 * (g + 1); ++t) {
      EXPECT_LE(std::abs(static_cast<int>(q[t])), 127);
      EXPECT_LE(std::fabs(x[t] - q[t] * scale[g]), scale[g] * 0.5f * 1.0001f + 1e-7f);
      sum += q[t];
    }
    EXPECT_FLOAT_EQ(sums[g], scale[g] * static_cast<float>(sum));
  }
}

// Every path quantizes activations to the same bytes and scales (the int8 product's rows then
// agree across paths up to the tile's own arithmetic): random groups, an all-zero group, groups
// of tiny and huge magnitudes, and values that sit half a step apart.
TEST(BlockQuant, ActivationGroupsAreTheSameOnEveryPath) {
  const int64_t k = 16 * 40;
  std::vector<float> x = random_floats(static_cast<size_t>(k), 29, -4.0f, 3.0f);
  for (int t = 16; t < 32; ++t) x[t] = 0.0f;
  for (int t = 32; t < 48; ++t) x[t] *= 1e-30f;
  for (int t = 48; t < 64; ++t) x[t] *= 1e30f;
  for (int t = 64; t < 80; ++t) x[t] = 0.5f * static_cast<float>(t - 72);  // amax 4: q = t * 127 / 8
  x[100] = -1e-3f;                                                         // a lone value below the rest
  ASSERT_TRUE(limit_cpu_features("portable").ok());
  std::vector<int8_t> want_q(static_cast<size_t>(k));
  std::vector<float> want_scale(k / 16), want_sums(k / 16);
  quantize_activation_groups(x.data(), k, want_q.data(), want_scale.data(), want_sums.data());
  for (const char* isa : {"avx2", "avx512-novnni", "native"}) {
    ASSERT_TRUE(limit_cpu_features(isa).ok());
    std::vector<int8_t> q(static_cast<size_t>(k));
    std::vector<float> scale(k / 16), sums(k / 16);
    quantize_activation_groups(x.data(), k, q.data(), scale.data(), sums.data());
    for (int64_t t = 0; t < k; ++t) ASSERT_EQ(q[t], want_q[t]) << "element " << t << " (" << isa << ")";
    for (int64_t g = 0; g < k / 16; ++g) {
      ASSERT_EQ(scale[g], want_scale[g]) << "group " << g << " (" << isa << ")";
      ASSERT_EQ(sums[g], want_sums[g]) << "group " << g << " (" << isa << ")";
    }
  }
  ASSERT_TRUE(limit_cpu_features("native").ok());
}

TEST(BlockQuant, EmbeddingLookupDequantizesRows) {
  ThreadPool pool(2);
  const int64_t rows = 5, h = 256;
  for (DType d : kBlockDTypes) {
    std::vector<float> values = random_floats(static_cast<size_t>(rows * h), 11);
    Tensor table = Tensor::zeros(d, Shape{rows, h});
    for (int64_t r = 0; r < rows; ++r) {
      quantize_row(d, values.data() + r * h, static_cast<char*>(table.data()) + dtype_nbytes(d, r * h), h);
    }
    Tensor ids = Tensor::zeros(DType::kI32, Shape{3});
    ids.data_as<int32_t>()[0] = 12;  // vocabulary ids start at 10 in this shard
    ids.data_as<int32_t>()[1] = 3;   // another shard's id: a zero row
    ids.data_as<int32_t>()[2] = 14;
    Tensor out = Tensor::zeros(DType::kF32, Shape{3, h});
    embedding_lookup(table, ids, 10, out, pool);
    std::vector<float> want(static_cast<size_t>(h));
    for (int slot : {0, 2}) {
      const int64_t local = ids.data_as<int32_t>()[slot] - 10;
      dequantize_row(d, static_cast<char*>(table.data()) + dtype_nbytes(d, local * h), want.data(), h);
      for (int64_t t = 0; t < h; ++t) ASSERT_EQ(out.data_as<float>()[slot * h + t], want[t]) << dtype_name(d);
    }
    for (int64_t t = 0; t < h; ++t) ASSERT_EQ(out.data_as<float>()[h + t], 0.0f);
  }
}

// linear() with block-quantized weights, once per ISA path (AVX-512 with and without VNNI too).
class BlockLinearTest : public testing::TestWithParam<std::string> {
 protected:
  // The int8-activation kernels (--matmul-precision int8); DequantizedByDefault checks kF32.
  void SetUp() override {
    ASSERT_TRUE(limit_cpu_features(GetParam()).ok());
    set_matmul_precision(MatmulPrecision::kInt8);
  }
  void TearDown() override {
    set_matmul_precision(MatmulPrecision::kF32);
    ASSERT_TRUE(limit_cpu_features("native").ok());
  }
};

// wv [n, k] quantized row by row to `d`; `dequantized` receives the weights the tensor holds.
Tensor quantized_weights(DType d, int64_t n, int64_t k, const std::vector<float>& wv,
                         bool symmetric, std::vector<float>& dequantized) {
  Tensor w = Tensor::zeros(d, Shape{n, k});
  dequantized.resize(wv.size());
  for (int64_t j = 0; j < n; ++j) {
    char* row = static_cast<char*>(w.data()) + dtype_nbytes(d, j * k);
    quantize_row(d, wv.data() + j * k, row, k, symmetric);
    dequantize_row(d, row, dequantized.data() + j * k, k);
  }
  return w;
}

// Checks y against two double-precision references built from the dequantized weights w:
//   exact: the product with the activations as the kernel quantizes them (sum_g dx_g qx w):
//          only F32 rounding apart, |y - exact| <= 1e-5 * 3 max|w| sum|x| (+ the bias);
//   dense: x @ w^T, apart by the activation rounding, at most sum_t |w_t| max_g|x| / 254.
void check_block_linear(int64_t m, int64_t n, int64_t k, DType d, bool symmetric, bool with_bias,
                        ThreadPool& pool, uint32_t seed) {
  std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed, -2.0f, 2.0f);
  std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
  std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
  std::vector<float> wd;
  Tensor w = quantized_weights(d, n, k, wv, symmetric, wd);
  Tensor x = make_f32(xv, {m, k});
  Tensor b = make_f32(bv, {n});
  Tensor y = Tensor::zeros(DType::kF32, {m, n});
  std::fill(y.data_as<float>(), y.data_as<float>() + m * n, 12345.0f);
  const TensorView bias = b.view();
  linear(x, w, with_bias ? &bias : nullptr, y, pool);

  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> scale(static_cast<size_t>(k / 16)), sums(scale.size());
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    const float* xr = xv.data() + i * k;
    quantize_activation_groups(xr, k, q.data(), scale.data(), sums.data());
    for (int64_t j = 0; j < n; ++j) {
      const float* wr = wd.data() + j * k;
      double exact = with_bias ? bv[j] : 0.0, dense = exact, act_bound = 0.0, x_abs = 0.0, w_max = 0.0;
      for (int64_t t = 0; t < k; ++t) {
        exact += static_cast<double>(q[t]) * scale[t / 16] * wr[t];
        dense += static_cast<double>(xr[t]) * wr[t];
        act_bound += std::fabs(wr[t]) * scale[t / 16] * 0.5;
        x_abs += std::fabs(xr[t]);
        w_max = std::max<double>(w_max, std::fabs(wr[t]));
      }
      const double got = y.data_as<float>()[i * n + j];
      const double tight = 1e-5 * 3.0 * w_max * x_abs + 1e-5;
      if ((std::fabs(got - exact) > tight || std::fabs(got - dense) > act_bound * 1.0001 + tight) &&
          failures++ < 5) {
        ADD_FAILURE() << dtype_name(d) << (symmetric ? " sym" : "") << " m=" << m << " n=" << n
                      << " k=" << k << " bias=" << with_bias << " y[" << i << "," << j << "]=" << got
                      << " exact=" << exact << " dense=" << dense << " activation bound=" << act_bound;
      }
    }
  }
}

TEST_P(BlockLinearTest, EveryTypeOddShapesMatchTheDequantizedProduct) {
  ThreadPool pool(3);
  uint32_t seed = 1;
  for (DType d : kBlockDTypes) {
    const int64_t block = dtype_block_elems(d);
    // Blocks of 32: 2 and 4 are whole steps of 64 (weights decoded in registers on VNNI), 1, 3
    // and 5 end mid-step (decoded into a padded scratch row).
    for (int64_t k : {block, 2 * block, 3 * block, 4 * block, 5 * block}) {
      for (int64_t m : {1, 2, 3, 4, 5, 7, 17}) {
        for (int64_t n : {1, 3, 13, 37}) {
          check_block_linear(m, n, k, d, false, (m + n) % 2 == 0, pool, seed++);
        }
      }
    }
  }
}

// The default precision: each weight row dequantized to F32 and dotted with the F32 activations,
// so y is the dense product of the dequantized weights up to F32 rounding.
TEST_P(BlockLinearTest, DequantizedByDefault) {
  set_matmul_precision(MatmulPrecision::kF32);
  ThreadPool pool(3);
  uint32_t seed = 300;
  for (DType d : kBlockDTypes) {
    const int64_t k = 2 * dtype_block_elems(d);
    for (int64_t m : {1, 5}) {
      const int64_t n = 11;
      std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed, -2.0f, 2.0f);
      std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
      std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
      seed += 3;
      std::vector<float> wd;
      Tensor w = quantized_weights(d, n, k, wv, false, wd);
      Tensor x = make_f32(xv, {m, k});
      Tensor b = make_f32(bv, {n});
      Tensor y = Tensor::zeros(DType::kF32, {m, n});
      const TensorView bias = b.view();
      linear(x, w, &bias, y, pool);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double dense = bv[j], scale = 1e-5;
          for (int64_t t = 0; t < k; ++t) {
            dense += static_cast<double>(xv[i * k + t]) * wd[j * k + t];
            scale += 1e-6 * std::fabs(xv[i * k + t] * wd[j * k + t]);
          }
          ASSERT_NEAR(y.data_as<float>()[i * n + j], dense, scale)
              << dtype_name(d) << " m=" << m << " y[" << i << "," << j << "]";
        }
      }
    }
  }
}

TEST_P(BlockLinearTest, SymmetricInt4Groups) {
  ThreadPool pool(2);
  for (DType d : {DType::kI4G64, DType::kI4G128}) {
    check_block_linear(5, 19, 384, d, true, true, pool, 70);
    check_block_linear(1, 40, 640, d, true, false, pool, 71);
  }
}

TEST_P(BlockLinearTest, LargeShapesAcrossThreadCounts) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    check_block_linear(70, 150, 512, DType::kQ4_K, true, true, pool, 7 + threads);
    check_block_linear(1, 500, 768, DType::kQ4_0, false, false, pool, 17 + threads);
    check_block_linear(130, 40, 256, DType::kI4G128, false, true, pool, 27 + threads);
  }
}

// RowsEqualTheRowAlone at the current matmul precision.
void check_rows_equal_the_row_alone() {
  ThreadPool pool(2);
  uint32_t seed = 500;
  for (DType d : kBlockDTypes) {
    // 96 and 800: a half 64-element step, and 25 blocks of 32 (the exact product's decode tile
    // converts 16 blocks' scales at a time: a whole chunk, then a partial one).
    const bool blocks_of_32 = dtype_block_elems(d) == 32;
    for (int64_t k : {int64_t{256}, int64_t{512}, blocks_of_32 ? int64_t{96} : int64_t{768},
                      blocks_of_32 ? int64_t{800} : int64_t{1024}}) {
      const int64_t m = 23, n = 29;
      std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed, -2.0f, 2.0f);
      std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
      seed += 2;
      std::vector<float> wd;
      Tensor w = quantized_weights(d, n, k, wv, false, wd);
      Tensor y_all = Tensor::zeros(DType::kF32, {m, n});
      linear(make_f32(xv, {m, k}), w, nullptr, y_all, pool);
      for (int64_t rows : {1, 2, 3, 4, 5, 17}) {
        for (int64_t i0 = 0; i0 + rows <= m; i0 += 4) {
          std::vector<float> xs(xv.begin() + i0 * k, xv.begin() + (i0 + rows) * k);
          Tensor y = Tensor::zeros(DType::kF32, {rows, n});
          linear(make_f32(xs, {rows, k}), w, nullptr, y, pool);
          for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(y.data_as<float>()[i * n + j], y_all.data_as<float>()[(i0 + i) * n + j])
                  << dtype_name(d) << " k=" << k << " rows " << i0 << "+" << rows << " y[" << i << "," << j << "]";
            }
          }
        }
      }
    }
  }
}

// Batch invariance: every row of a product equals, bit for bit, the same row multiplied alone or
// in any slice of the batch, whatever the tiles (1-4 rows) and column blocks it falls in. The
// engine relies on it (preemption recompute, speculative verification); on VNNI it also holds
// between weights decoded in registers and in a scratch row (k = 96: a half step). Both
// precisions: int8 activations, and the default exact product (dequantized rows dotted with F32
// activations), whose lone rows were once summed across lanes in another order than rows in a
// group of four.
TEST_P(BlockLinearTest, RowsEqualTheRowAlone) {
  for (const MatmulPrecision precision : {MatmulPrecision::kInt8, MatmulPrecision::kF32}) {
    SCOPED_TRACE(precision == MatmulPrecision::kInt8 ? "int8 activations" : "f32 activations");
    set_matmul_precision(precision);
    check_rows_equal_the_row_alone();
    if (HasFatalFailure()) return;
  }
}


INSTANTIATE_TEST_SUITE_P(Isa, BlockLinearTest,
                         testing::Values("portable", "avx2", "avx512-novnni", "native"),
                         isa_test_name);

}  // namespace
}  // namespace weft::kernels
