// gemv_quantized (the CUDA twins of the CPU's int8 and int4 products) against the CPU kernels on
// the same quantized weights: linear_int8() for kI8 (W8A16), linear() at MatmulPrecision::kF32
// (the weights dequantized exactly) for the 4-bit group types.
//
// Two checks per type:
//   - one-hot rows of x: each output is a single dequantized weight (times 1, plus 0), so the
//     GPU's y must equal the CPU's dequantized weight rounded to the output dtype, exactly:
//     the decode (fields, nibble order, zero, the two roundings) is exactly the CPU's;
//   - random x and bias: |gpu - cpu| <= 2u |cpu| + (k + 1) 2^-23 sum_t |x_t w_t| + 1e-6, as in
//     cuda_gemm_test.cpp (u: the one rounding of y; the sums run in another order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "cuda_attn_gemm_test_util.h"
#include "weft/kernels/block_quant.h"
#include "weft/kernels/cuda/gemv_quantized.h"
#include "weft/kernels/linear.h"
#include "weft/kernels/quantize.h"

namespace weft::kernels::cuda {
namespace {

using gpu_test::from_bits;
using gpu_test::random_rounded;
using gpu_test::Rounded;
using gpu_test::to_bits;
using gpu_test::to_device;
using gpu_test::to_host;

ThreadPool& cpu_pool() {
  static ThreadPool pool(0);
  return pool;
}

const DType kWeightTypes[] = {DType::kI8,    DType::kQ4_0,   DType::kQ4_1,   DType::kI4G64,
                              DType::kI4G128, DType::kI4G32F, DType::kI4G64F, DType::kI4G128F};

// Quantized weights [n, k] of w_dtype from uniform values, with their exact F32 dequantization.
struct Weights {
  DType dtype;
  int64_t n = 0, k = 0;
  std::vector<uint8_t> bytes;
  std::vector<float> scales;     // kI8 only
  std::vector<float> dequantized;
};

Weights make_weights(DType dtype, int64_t n, int64_t k, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 0.75f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = dist(rng);
  Tensor wt = Tensor::wrap(w.data(), DType::kF32, {n, k}, nullptr);
  Weights out{dtype, n, k, {}, {}, std::vector<float>(w.size())};
  if (dtype == DType::kI8) {
    QuantizedRows q = quantize_rows_int8(wt, cpu_pool());
    const auto* values = q.values.data_as<int8_t>();
    out.bytes.assign(reinterpret_cast<const uint8_t*>(values),
                     reinterpret_cast<const uint8_t*>(values) + n * k);
    out.scales.assign(q.scales.data_as<float>(), q.scales.data_as<float>() + n);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t t = 0; t < k; ++t) {
        out.dequantized[j * k + t] = static_cast<float>(values[j * k + t]) * out.scales[j];
      }
    }
  } else {
    Tensor q = quantize_rows(wt, dtype, /*symmetric=*/false, cpu_pool());
    const auto* b = static_cast<const uint8_t*>(q.data());
    out.bytes.assign(b, b + dtype_nbytes(dtype, n * k));
    const size_t row_bytes = dtype_nbytes(dtype, k);
    for (int64_t j = 0; j < n; ++j) {
      dequantize_row(dtype, b + j * row_bytes, out.dequantized.data() + j * k, k);
    }
  }
  return out;
}

// The CPU twin's y [m, n] for x (the exact values of its 16-bit bits) and bias (or null).
std::vector<float> cpu_product(const Weights& w, const std::vector<float>& x, int64_t m,
                               const Rounded* bias, DType dtype) {
  std::vector<float> xv = x;
  std::vector<uint8_t> wb = w.bytes;
  std::vector<float> scales = w.scales;
  std::vector<uint16_t> bb = bias != nullptr ? bias->bits : std::vector<uint16_t>(1);
  Tensor xt = Tensor::wrap(xv.data(), DType::kF32, {m, w.k}, nullptr);
  Tensor wt = Tensor::wrap(wb.data(), w.dtype, {w.n, w.k}, nullptr);
  Tensor bt = Tensor::wrap(bb.data(), dtype, {w.n}, nullptr);
  Tensor y = Tensor::zeros(DType::kF32, {m, w.n});
  const TensorView* bv = bias != nullptr ? &bt.view() : nullptr;
  if (w.dtype == DType::kI8) {
    Tensor st = Tensor::wrap(scales.data(), DType::kF32, {w.n}, nullptr);
    linear_int8(xt, wt, st, bv, y, cpu_pool());
  } else {
    const MatmulPrecision before = matmul_precision();
    set_matmul_precision(MatmulPrecision::kF32);
    linear(xt, wt, bv, y, cpu_pool());
    set_matmul_precision(before);
  }
  return std::vector<float>(y.data_as<float>(), y.data_as<float>() + y.numel());
}

class CudaGemvQuantizedTest : public gpu_test::GpuTest {
 protected:
  // y bits [m, n] from the GPU.
  std::vector<uint16_t> gpu_product(const Weights& w, const std::vector<uint16_t>& x_bits,
                                    int64_t m, const Rounded* bias, DType dtype) {
    DeviceBuffer dx = to_device(x_bits);
    DeviceBuffer dw = to_device(w.bytes);
    DeviceBuffer ds = to_device(w.scales);
    DeviceBuffer db = to_device(bias != nullptr ? bias->bits : std::vector<uint16_t>(1));
    // y starts as NaN so an unwritten output fails.
    DeviceBuffer dy = to_device(
        std::vector<uint16_t>(static_cast<size_t>(m * w.n), gpu_test::nan_bits(dtype)));
    const absl::Status st = gemv_quantized(
        dx.data(), dw.data(), w.dtype == DType::kI8 ? ds.as<float>() : nullptr,
        bias != nullptr ? db.data() : nullptr, dy.data(), m, w.n, w.k, dtype, w.dtype, nullptr);
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_TRUE(cuda_check(cudaDeviceSynchronize(), "gemv_quantized").ok());
    return to_host<uint16_t>(dy, static_cast<size_t>(m * w.n));
  }
};

TEST_F(CudaGemvQuantizedTest, OneHotRowsGiveTheCpusDequantizedWeights) {
  std::mt19937 rng(7);
  for (DType wd : kWeightTypes) {
    for (DType dt : {DType::kBF16, DType::kF16}) {
      const int64_t n = 45, k = 512, m = 8;
      SCOPED_TRACE(absl::StrCat(dtype_name(wd), " ", dtype_name(dt)));
      const Weights w = make_weights(wd, n, k, rng);
      std::vector<uint16_t> x(static_cast<size_t>(m * k), to_bits(0.0f, dt));
      int64_t columns[m];
      for (int64_t r = 0; r < m; ++r) {
        columns[r] = (r * 97 + 13) % k;  // low and high nibbles, several blocks
        x[r * k + columns[r]] = to_bits(1.0f, dt);
      }
      const std::vector<uint16_t> y = gpu_product(w, x, m, nullptr, dt);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          // Compared as values: a -0 weight may come out as +0 (the F32 sums start at +0).
          const float want = from_bits(to_bits(w.dequantized[j * k + columns[r]], dt), dt);
          ASSERT_EQ(from_bits(y[r * n + j], dt), want)
              << "row " << r << " feature " << j << " element " << columns[r];
        }
      }
    }
  }
}

TEST_F(CudaGemvQuantizedTest, RandomRowsMatchTheCpuTwin) {
  std::mt19937 rng(11);
  struct NK {
    int64_t n, k;
  };
  const NK shapes[] = {{1, 128}, {37, 256}, {300, 1024}, {2048, 2048}, {5, 8192}};
  for (DType wd : kWeightTypes) {
    for (DType dt : {DType::kBF16, DType::kF16}) {
      for (const NK& s : shapes) {
        for (int64_t m : {1, 3, 8}) {
          for (bool with_bias : {false, true}) {
            SCOPED_TRACE(absl::StrCat(dtype_name(wd), " ", dtype_name(dt), " m ", m, " n ", s.n,
                                      " k ", s.k, with_bias ? " bias" : ""));
            const Weights w = make_weights(wd, s.n, s.k, rng);
            const Rounded x = random_rounded(static_cast<size_t>(m * s.k), dt, rng, -1.0f, 1.0f);
            const Rounded bias = random_rounded(static_cast<size_t>(s.n), dt, rng, -1.0f, 1.0f);
            const Rounded* b = with_bias ? &bias : nullptr;
            const std::vector<float> want = cpu_product(w, x.values, m, b, dt);
            const std::vector<uint16_t> got = gpu_product(w, x.bits, m, b, dt);
            const float u = dt == DType::kBF16 ? 1.0f / 128.0f : 1.0f / 1024.0f;
            const float acc_eps = static_cast<float>(s.k + 1) * std::ldexp(1.0f, -23);
            int bad = 0;
            for (int64_t r = 0; r < m; ++r) {
              for (int64_t j = 0; j < s.n; ++j) {
                double abs_sum = 0.0;
                for (int64_t t = 0; t < s.k; ++t) {
                  abs_sum += std::fabs(x.values[r * s.k + t] * w.dequantized[j * s.k + t]);
                }
                const float cpu = want[r * s.n + j];
                const float gpu = from_bits(got[r * s.n + j], dt);
                const float tol = u * std::fabs(cpu) + acc_eps * static_cast<float>(abs_sum) + 1e-6f;
                if (!(std::fabs(gpu - cpu) <= tol) && bad++ < 3) {
                  ADD_FAILURE() << "row " << r << " feature " << j << ": gpu " << gpu << " cpu "
                                << cpu << " tolerance " << tol;
                }
              }
            }
            ASSERT_EQ(bad, 0);
          }
        }
      }
    }
  }
}

// The argument checks run before any CUDA call, so they are tested on every machine.
TEST(CudaGemvQuantizedArguments, UnsupportedProblemsAreRefused) {
  alignas(16) static uint8_t buffer[64];
  EXPECT_TRUE(gemv_quantized_supported(DType::kI4G64, 1, 128, buffer, buffer));
  EXPECT_TRUE(gemv_quantized_supported(DType::kI8, 8, 32, buffer, buffer));
  EXPECT_FALSE(gemv_quantized_supported(DType::kI4G64, 9, 128, buffer, buffer));   // m > 8
  EXPECT_FALSE(gemv_quantized_supported(DType::kI4G128, 1, 64, buffer, buffer));   // k % 128
  EXPECT_FALSE(gemv_quantized_supported(DType::kI8, 1, 24, buffer, buffer));       // k % 16
  EXPECT_FALSE(gemv_quantized_supported(DType::kI8, 1, 32, buffer, buffer + 4));   // w alignment
  EXPECT_FALSE(gemv_quantized_supported(DType::kQ4_0, 1, 32, buffer + 2, buffer)); // x alignment
  EXPECT_FALSE(gemv_quantized_supported(DType::kQ4_K, 1, 256, buffer, buffer));    // not a twin
  EXPECT_FALSE(gemv_quantized_supported(DType::kBF16, 1, 256, buffer, buffer));
  const absl::Status refused = gemv_quantized(buffer, buffer, nullptr, nullptr, buffer, 9, 4, 128,
                                              DType::kBF16, DType::kI4G64, nullptr);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(refused.message()).find("i4g64"), std::string::npos) << refused;
  const absl::Status no_scales = gemv_quantized(buffer, buffer, nullptr, nullptr, buffer, 1, 4, 16,
                                                DType::kBF16, DType::kI8, nullptr);
  EXPECT_EQ(no_scales.code(), absl::StatusCode::kInvalidArgument) << no_scales;
}

}  // namespace
}  // namespace weft::kernels::cuda
