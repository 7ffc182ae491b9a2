// linear() against a double-precision reference over odd shapes, every weight dtype and every
// ISA path. Tolerance: |y - ref| <= 1e-5 * sum_k |x w| + 1e-6 (F32 accumulation over k <= 768
// in a different order than the reference; an indexing error is O(sum |x w|)).
#include "weft/kernels/block_quant.h"
#include "weft/kernels/linear.h"
#include "weft/kernels/quantize.h"

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "core/half.h"

#include "kernel_test_util.h"

namespace weft::kernels {
namespace {

class LinearTest : public IsaTest {};

// The double-precision dot product of x[0..k) and w[0..k), and the sum of |x w| (the scale of
// F32 rounding errors).
struct RefDot {
  double sum = 0.0, mag = 0.0;
};
RefDot ref_dot(const float* x, const float* w, int64_t k) {
  RefDot d;
  for (int64_t t = 0; t < k; ++t) {
    const double p = static_cast<double>(x[t]) * w[t];
    d.sum += p;
    d.mag += std::fabs(p);
  }
  return d;
}

void check_linear(int64_t m, int64_t n, int64_t k, DType wdt, bool with_bias, DType bias_dt,
                  ThreadPool& pool, uint32_t seed) {
  std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed);
  std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
  std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
  Tensor x = make_f32(xv, {m, k});
  Tensor w = make_stored(wv, wdt, {n, k});
  Tensor b = make_stored(bv, bias_dt, {n});
  Tensor y = Tensor::zeros(DType::kF32, {m, n});
  std::fill(y.data_as<float>(), y.data_as<float>() + m * n, 12345.0f);  // must be overwritten
  const TensorView bias_view = b.view();
  linear(x, w, with_bias ? &bias_view : nullptr, y, pool);
  const float* out = y.data_as<float>();
  int failures = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const RefDot d = ref_dot(xv.data() + i * k, wv.data() + j * k, k);
      const double ref = d.sum + (with_bias ? bv[j] : 0.0), mag = d.mag;
      const double err = std::fabs(out[i * n + j] - ref);
      if (err > 1e-5 * mag + 1e-6 && failures++ < 5) {
        ADD_FAILURE() << "m=" << m << " n=" << n << " k=" << k << " w=" << dtype_name(wdt)
                      << " bias=" << with_bias << " y[" << i << "," << j << "]=" << out[i * n + j]
                      << " ref=" << ref;
      }
    }
  }
}

TEST_P(LinearTest, OddShapesAllDTypes) {
  ThreadPool pool(3);
  uint32_t seed = 1;
  for (DType wdt : kFloatDTypes) {
    for (int64_t k : {1, 3, 16, 17, 63, 65, 130}) {
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33}) {
        for (int64_t n : {1, 3, 7, 13, 37, 100}) {
          check_linear(m, n, k, wdt, false, DType::kF32, pool, seed++);
        }
      }
    }
  }
}

TEST_P(LinearTest, BiasOfEveryDType) {
  ThreadPool pool(2);
  uint32_t seed = 100;
  for (DType wdt : kFloatDTypes) {
    for (DType bdt : kFloatDTypes) {
      check_linear(5, 37, 65, wdt, true, bdt, pool, seed++);
      check_linear(1, 100, 17, wdt, true, bdt, pool, seed++);
    }
  }
}

// Shapes that split over both m and n into many tasks (row blocks of 64, L2-sized column
// blocks), on pools of several sizes.
TEST_P(LinearTest, LargeShapesAcrossThreadCounts) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    check_linear(70, 300, 520, DType::kBF16, true, DType::kF32, pool, 7 + threads);
    check_linear(1, 1000, 768, DType::kF16, false, DType::kF32, pool, 17 + threads);
    check_linear(130, 96, 200, DType::kF32, false, DType::kF32, pool, 27 + threads);
  }
}

TEST_P(LinearTest, ZeroK) {
  ThreadPool pool(1);
  check_linear(3, 5, 0, DType::kF32, true, DType::kF32, pool, 3);
  check_linear(3, 5, 0, DType::kBF16, false, DType::kF32, pool, 3);
}

// MatmulPrecision::kBf16: where the path is taken (AVX-512 with AVX512-BF16, BF16 weights) y is
// the product of the BF16-rounded x with w, accumulated in F32; elsewhere the flag changes
// nothing. Odd k exercises the masked tail of the 32-element pairs; on a CPU with AMX, "native"
// takes the AMX tiles for k a multiple of 32 (m = 40 and 70 reach the 2x2 tiles and the second
// row block, n = 48 and 100 the weight-row tails).
TEST_P(LinearTest, Bf16ActivationsMatchTheRoundedReference) {
  set_matmul_precision(MatmulPrecision::kBf16);
  const bool bf16_path = linear_uses_bf16_activations(DType::kBF16);
  ThreadPool pool(2);
  uint32_t seed = 500;
  int checked = 0;
  for (int64_t k : {1, 31, 32, 33, 64, 130, 768}) {
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 17, 40, 70}) {
      for (int64_t n : {1, 5, 8, 13, 48, 100}) {
        std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed);
        std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
        std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
        seed += 3;
        Tensor x = make_f32(xv, {m, k});
        Tensor w = make_stored(wv, DType::kBF16, {n, k});
        Tensor b = make_f32(bv, {n});
        Tensor y = Tensor::zeros(DType::kF32, {m, n});
        const TensorView bias = b.view();
        linear(x, w, &bias, y, pool);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double ref = bv[j], mag = 0.0;
            for (int64_t t = 0; t < k; ++t) {
              const float xt = bf16_path ? bf16_to_float(float_to_bf16(xv[i * k + t])) : xv[i * k + t];
              const double p = static_cast<double>(xt) * bf16_to_float(float_to_bf16(wv[j * k + t]));
              ref += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y.data_as<float>()[i * n + j], ref, 1e-5 * mag + 1e-6)
                << "m=" << m << " n=" << n << " k=" << k << " bf16 path " << bf16_path;
            ++checked;
          }
        }
      }
    }
  }
  set_matmul_precision(MatmulPrecision::kF32);
  EXPECT_GT(checked, 1000);
  RecordProperty("bf16_activation_path", bf16_path ? "taken" : "not available");
}

// linear_int8 against the double-precision product with the dequantized weights, and
// quantize_rows_int8's rounding bound, on every ISA path and odd shapes (masked tails).
TEST_P(LinearTest, Int8WeightsMatchTheDequantizedReference) {
  ThreadPool pool(2);
  uint32_t seed = 900;
  for (int64_t k : {1, 7, 15, 16, 17, 33, 130, 768}) {
    for (int64_t m : {1, 2, 3, 4, 5, 9}) {
      for (int64_t n : {1, 4, 7, 8, 13, 100}) {
        std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed);
        std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
        std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
        seed += 3;
        if (n > 3) std::fill(wv.begin() + 3 * k, wv.begin() + 4 * k, 0.0f);  // an all-zero row
        Tensor x = make_f32(xv, {m, k});
        Tensor w = make_stored(wv, DType::kBF16, {n, k});
        const QuantizedRows q = quantize_rows_int8(w.view(), pool);
        ASSERT_EQ(q.values.dtype(), DType::kI8);
        for (int64_t j = 0; j < n; ++j) {
          const float scale = q.scales.data_as<float>()[j];
          for (int64_t t = 0; t < k; ++t) {
            const float back = q.values.data_as<int8_t>()[j * k + t] * scale;
            ASSERT_LE(std::fabs(back - wv[j * k + t]), scale * 0.5f + 1e-7f) << j << "," << t;
          }
        }
        Tensor b = make_f32(bv, {n});
        Tensor y = Tensor::zeros(DType::kF32, {m, n});
        const TensorView bias = b.view();
        linear_int8(x, q.values.view(), q.scales.view(), &bias, y, pool);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double ref = bv[j], mag = 0.0;
            const double scale = q.scales.data_as<float>()[j];
            for (int64_t t = 0; t < k; ++t) {
              const double p = static_cast<double>(xv[i * k + t]) *
                               (q.values.data_as<int8_t>()[j * k + t] * scale);
              ref += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y.data_as<float>()[i * n + j], ref, 1e-5 * mag + 1e-6)
                << "m=" << m << " n=" << n << " k=" << k;
          }
        }
      }
    }
  }
}

// linear_int8 under --matmul-precision int8 (W8A8): where the VNNI path exists (k a multiple of
// 64) y is the product of the activations as quantize_activation_groups rounds them with the int8
// weights, up to F32 rounding, and every row equals itself multiplied alone, bit for bit;
// elsewhere the W8A16 product as without the flag.
TEST_P(LinearTest, Int8WeightsWithInt8ActivationsMatchTheQuantizedProduct) {
  struct PrecisionGuard {
    PrecisionGuard() { set_matmul_precision(MatmulPrecision::kInt8); }
    ~PrecisionGuard() { set_matmul_precision(MatmulPrecision::kF32); }
  } guard;
  ThreadPool pool(2);
  uint32_t seed = 1300;
  for (int64_t k : {64, 576, 100}) {
    const bool w8a8 = cpu_kernel_isa() == "avx512" && cpu_features().avx512vnni && k % 64 == 0;
    for (int64_t m : {1, 3, 4, 5, 17}) {
      for (int64_t n : {1, 13, 40}) {
        std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed, -2.0f, 2.0f);
        std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
        std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
        seed += 3;
        const QuantizedRows q = quantize_rows_int8(make_stored(wv, DType::kBF16, {n, k}).view(), pool);
        const Tensor b = make_f32(bv, {n});
        const TensorView bias = b.view();
        Tensor y = Tensor::zeros(DType::kF32, {m, n});
        linear_int8(make_f32(xv, {m, k}), q.values.view(), q.scales.view(), &bias, y, pool);
        std::vector<int8_t> xq(static_cast<size_t>(k));
        std::vector<float> dx(static_cast<size_t>(k / 16)), sums(dx.size());
        for (int64_t i = 0; i < m; ++i) {
          const float* xr = xv.data() + i * k;
          if (w8a8) quantize_activation_groups(xr, k, xq.data(), dx.data(), sums.data());
          for (int64_t j = 0; j < n; ++j) {
            const double w_scale = q.scales.data_as<float>()[j];
            double ref = bv[j], mag = 0.0;
            for (int64_t t = 0; t < k; ++t) {
              const double xt = w8a8 ? static_cast<double>(xq[t]) * dx[t / 16] : xr[t];
              const double p = xt * (q.values.data_as<int8_t>()[j * k + t] * w_scale);
              ref += p;
              mag += std::fabs(p);
            }
            ASSERT_NEAR(y.data_as<float>()[i * n + j], ref, 1e-5 * mag + 1e-6)
                << "w8a8=" << w8a8 << " m=" << m << " n=" << n << " k=" << k << " y[" << i << "," << j << "]";
          }
          if (!w8a8 || m == 1) continue;
          Tensor alone = Tensor::zeros(DType::kF32, {1, n});
          std::vector<float> row(xr, xr + k);
          linear_int8(make_f32(row, {1, k}), q.values.view(), q.scales.view(), &bias, alone, pool);
          for (int64_t j = 0; j < n; ++j) {
            ASSERT_EQ(alone.data_as<float>()[j], y.data_as<float>()[i * n + j]) << "row " << i << " alone";
          }
        }
      }
    }
  }
}

// An F8B64 [n, k] weight of random e4m3 codes (every code but NaN: zeros, subnormals, the
// largest) and random F32 scales per 64 elements; `dequantized` gets e4m3 * scale in F32, the
// weight the F32 dequantized path holds.
Tensor make_f8b64(int64_t n, int64_t k, uint32_t seed, std::vector<float>& dequantized) {
  std::mt19937 rng(seed);
  Tensor w = Tensor::zeros(DType::kF8B64, {n, k});
  dequantized.assign(static_cast<size_t>(n * k), 0.0f);
  uint8_t* b = static_cast<uint8_t*>(w.data());
  std::uniform_real_distribution<float> scale_dist(1e-4f, 4e-3f);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t blk = 0; blk < k / 64; ++blk, b += 68) {
      const float s = scale_dist(rng);
      std::memcpy(b, &s, 4);
      for (int64_t t = 0; t < 64; ++t) {
        uint8_t code;
        do code = static_cast<uint8_t>(rng() & 0xFF); while ((code & 0x7F) == 0x7F);
        b[4 + t] = code;
        dequantized[j * k + blk * 64 + t] = fp8_e4m3_to_float(code) * s;
      }
    }
  }
  return w;
}

// The e4m3 decoding: every code against its definition (sign, 4-bit exponent with bias 7,
// 3-bit mantissa, subnormals at exponent 0, S.1111.111 NaN), and dequantize_row of F8B64.
TEST(Fp8Test, E4m3CodesAndDequantizeRow) {
  for (int v = 0; v < 256; ++v) {
    const int e = (v >> 3) & 0xF, mant = v & 7;
    const float got = fp8_e4m3_to_float(static_cast<uint8_t>(v));
    if (e == 15 && mant == 7) {
      EXPECT_TRUE(std::isnan(got)) << v;
      continue;
    }
    const double mag = e == 0 ? mant / 8.0 * std::ldexp(1.0, -6) : (1 + mant / 8.0) * std::ldexp(1.0, e - 7);
    EXPECT_EQ(got, static_cast<float>((v & 0x80) ? -mag : mag)) << v;
  }
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  std::vector<float> want;
  Tensor w = make_f8b64(3, 192, 5, want);
  std::vector<float> got(3 * 192);
  for (int64_t j = 0; j < 3; ++j) {
    dequantize_row(DType::kF8B64, static_cast<const char*>(w.data()) + dtype_nbytes(DType::kF8B64, j * 192),
                   got.data() + j * 192, 192);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(dtype_nbytes(DType::kF8B64, 3 * 192), 3u * 3 * 68);
}

// linear() with F8B64 weights against the double-precision product of the dequantized weights
// and against linear() with those weights in F32 (the path FP8 checkpoints took before), on
// every ISA path, m = 1..9 and 33, bias or not. F8B64 needs k a multiple of 64 (the loader
// holds other FP8 weights in F32, CheckpointQuantization::held_dtype).
TEST_P(LinearTest, Fp8WeightsMatchTheDequantizedReference) {
  ThreadPool pool(2);
  uint32_t seed = 1700;
  for (int64_t k : {64, 128, 192, 576}) {
    for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 33}) {
      for (int64_t n : {1, 3, 8, 21, 100}) {
        std::vector<float> wv;
        Tensor w = make_f8b64(n, k, seed, wv);
        std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed + 1);
        std::vector<float> bv = random_floats(static_cast<size_t>(n), seed + 2);
        seed += 3;
        const bool with_bias = (m + n) % 2 == 0;
        Tensor x = make_f32(xv, {m, k});
        Tensor b = make_f32(bv, {n});
        const TensorView bias = b.view();
        Tensor y = Tensor::zeros(DType::kF32, {m, n});
        std::fill(y.data_as<float>(), y.data_as<float>() + m * n, 12345.0f);
        linear(x, w, with_bias ? &bias : nullptr, y, pool);
        Tensor w32 = make_f32(wv, {n, k});
        Tensor y32 = Tensor::zeros(DType::kF32, {m, n});
        linear(x, w32, with_bias ? &bias : nullptr, y32, pool);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            const RefDot d = ref_dot(xv.data() + i * k, wv.data() + j * k, k);
            const double ref = d.sum + (with_bias ? bv[j] : 0.0), mag = d.mag;
            const float got = y.data_as<float>()[i * n + j];
            ASSERT_NEAR(got, ref, 1e-5 * mag + 1e-6) << "m=" << m << " n=" << n << " k=" << k;
            ASSERT_NEAR(got, y32.data_as<float>()[i * n + j], 2e-5 * mag + 1e-6)
                << "vs the F32 path: m=" << m << " n=" << n << " k=" << k;
          }
        }
      }
    }
  }
}

TEST_P(LinearTest, Fp8LargeShapesAcrossThreadCounts) {
  for (int threads : {1, 2, 5}) {
    ThreadPool pool(threads);
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1000, 768},
                                  {70, 300, 512}}) {
      std::vector<float> wv;
      Tensor w = make_f8b64(n, k, 40 + threads, wv);
      std::vector<float> xv = random_floats(static_cast<size_t>(m * k), 41 + threads);
      Tensor x = make_f32(xv, {m, k});
      Tensor y = Tensor::zeros(DType::kF32, {m, n});
      linear(x, w, nullptr, y, pool);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          const RefDot d = ref_dot(xv.data() + i * k, wv.data() + j * k, k);
          ASSERT_NEAR(y.data_as<float>()[i * n + j], d.sum, 1e-5 * d.mag + 1e-6)
              << m << "x" << n << "x" << k;
        }
      }
    }
  }
}

// On every path, a row of x gets bit-identical outputs whether it is multiplied alone (the GEMV
// tiles) or inside a batch (the GEMM tiles, at any offset in the batch): decode and prefill of
// the same token agree exactly, and a sequence's output does not depend on its batch neighbours.
// Checked where a path sums every output element in one fixed order (F32, F16 and BF16 weights on
// AVX2 and AVX-512, the portable path); elsewhere it is recorded as not checked.
TEST_P(LinearTest, BatchedRowsEqualTheRowAlone) {
  const std::string isa(cpu_kernel_isa());
  const bool fixed_order = isa == "portable" || isa == "avx2" || isa.starts_with("avx512");
  RecordProperty("batch_invariance", fixed_order ? "checked" : "not claimed on this path");
  if (!fixed_order) return;
  ThreadPool pool(2);
  uint32_t seed = 1300;
  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t k : {15, 16, 48, 67, 576}) {
      for (int64_t n : {1, 3, 8, 21, 200}) {
        const int64_t m = 11;
        std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed);
        std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
        seed += 2;
        Tensor x = make_f32(xv, {m, k});
        Tensor w = make_stored(wv, dtype, {n, k});
        Tensor y = Tensor::zeros(DType::kF32, {m, n});
        linear(x, w, nullptr, y, pool);
        for (int64_t i = 0; i < m; ++i) {
          std::vector<float> row(xv.begin() + i * k, xv.begin() + (i + 1) * k);
          Tensor xi = make_f32(row, {1, k});
          Tensor yi = Tensor::zeros(DType::kF32, {1, n});
          linear(xi, w, nullptr, yi, pool);
          for (int64_t j = 0; j < n; ++j) {
            ASSERT_EQ(yi.data_as<float>()[j], y.data_as<float>()[i * n + j])
                << dtype_name(dtype) << " k=" << k << " n=" << n << " row " << i << " column " << j;
          }
        }
      }
    }
  }
  // F8B64 (FP8) weights: one order on every path too, for every m.
  for (int64_t k : {64, 576}) {
    for (int64_t n : {1, 3, 8, 21, 200}) {
      const int64_t m = 11;
      std::vector<float> wv;
      Tensor w = make_f8b64(n, k, seed, wv);
      std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed + 1);
      seed += 2;
      Tensor x = make_f32(xv, {m, k});
      Tensor y = Tensor::zeros(DType::kF32, {m, n});
      linear(x, w, nullptr, y, pool);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t rows = 1; rows <= 9 && i + rows <= m; rows += 4) {
          std::vector<float> part(xv.begin() + i * k, xv.begin() + (i + rows) * k);
          Tensor xi = make_f32(part, {rows, k});
          Tensor yi = Tensor::zeros(DType::kF32, {rows, n});
          linear(xi, w, nullptr, yi, pool);
          for (int64_t j = 0; j < n; ++j) {
            ASSERT_EQ(yi.data_as<float>()[j], y.data_as<float>()[i * n + j])
                << "f8b64 k=" << k << " n=" << n << " row " << i << " first of " << rows;
          }
        }
      }
    }
  }
}

// MatmulPrecision::kBf16, BF16 weights: every row of x gets bit-identical outputs alone, in a
// batch and in any slice of it, on the AMX path ("native" on a CPU with AMX-BF16: 2x2 tiles,
// decode's single-column tiles, partial x tiles and weight-row tails) and on the AVX512-BF16 one
// ("avx512-noamx", and every shape whose k is not a multiple of 32).
TEST_P(LinearTest, Bf16ActivationRowsEqualTheRowAlone) {
  set_matmul_precision(MatmulPrecision::kBf16);
  const bool bf16_path = linear_uses_bf16_activations(DType::kBF16);
  RecordProperty("bf16_activation_path", !bf16_path ? "not available"
                                         : cpu_features().amx_bf16 ? "amx" : "avx512bf16");
  ThreadPool pool(2);
  uint32_t seed = 1700;
  for (int64_t k : {32, 33, 576}) {
    for (int64_t n : {5, 16, 40, 100}) {
      const int64_t m = 70;  // two row blocks of run_linear_tiles (64 + 6)
      std::vector<float> xv = random_floats(static_cast<size_t>(m * k), seed);
      std::vector<float> wv = random_floats(static_cast<size_t>(n * k), seed + 1);
      seed += 2;
      Tensor x = make_f32(xv, {m, k});
      Tensor w = make_stored(wv, DType::kBF16, {n, k});
      Tensor y = Tensor::zeros(DType::kF32, {m, n});
      linear(x, w, nullptr, y, pool);
      for (int64_t i = 0; i < m; i += 3) {
        // 5 and 6 rows: a speculative verification of 4-5 guesses, one row tile each.
        for (int64_t rows : {1, 2, 5, 6, 17, 33}) {
          if (i + rows > m) continue;
          std::vector<float> part(xv.begin() + i * k, xv.begin() + (i + rows) * k);
          Tensor xi = make_f32(part, {rows, k});
          Tensor yi = Tensor::zeros(DType::kF32, {rows, n});
          linear(xi, w, nullptr, yi, pool);
          for (int64_t r = 0; r < rows; ++r) {
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(yi.data_as<float>()[r * n + j], y.data_as<float>()[(i + r) * n + j])
                  << "k=" << k << " n=" << n << " row " << i + r << " of a slice of " << rows
                  << " column " << j;
            }
          }
        }
      }
    }
  }
  set_matmul_precision(MatmulPrecision::kF32);
}

INSTANTIATE_TEST_SUITE_P(Isa, LinearTest,
                         testing::Values("portable", "avx2", "avx512-noamx", "native"),
                         isa_test_name);

}  // namespace
}  // namespace weft::kernels
