// CublasGemm::linear against its CPU twin, weft::kernels::linear, on host copies of the same
// 16-bit rounded x, W and bias: M in {1, 7, 64, 257}, odd and even N and K (1 .. 1031), F16 and
// BF16, with and without bias, 16-byte aligned operands (the cuBLASLt path) and misaligned ones
// (the cuBLAS GemmEx path), and repeated shapes (the cached plan) with fresh data.
//
// Tolerance per output: |gpu - cpu| <= u * |cpu| + K * 2^-23 * sum_k |x w| + 1e-6.
//   u: the one rounding of y to the output dtype (2^-8 for BF16's 8 significant bits, 2^-11 for
//      F16, doubled: 2^-7 and 2^-10 here, since the rounded value may sit on the other side of a
//      tie from the CPU's F32 result).
//   K * 2^-23 * sum |x w|: both sides accumulate exact 16-bit products in F32 but in different
//      orders (tensor-core tiles, split-K); each of the K additions may lose up to 1 ulp
//      (2^-23 relative, truncating accumulators included) of a partial sum bounded by sum |x w|,
//      computed here with the CPU twin on |x| and |W|.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor.h"
#include "core/thread_pool.h"
#include "cuda_attn_gemm_test_util.h"
#include "weft/kernels/cuda/gemm.h"
#include "weft/kernels/linear.h"

namespace weft::kernels::cuda {
namespace {

using gpu_test::from_bits;
using gpu_test::random_rounded;
using gpu_test::Rounded;
using gpu_test::to_device;
using gpu_test::to_host;

ThreadPool& cpu_pool() {
  static ThreadPool pool(0);
  return pool;
}

struct GemmCase {
  int64_t m, n, k;
  DType dtype;
  bool bias;
  // Elements the device copies of x, w, bias and y start after (0: 256-byte aligned buffers;
  // 1: 2-byte aligned, which forces the GemmEx fallback).
  int64_t offset = 0;
  uint32_t seed = 0;
};

std::string describe(const GemmCase& c) {
  return absl::StrCat(dtype_name(c.dtype), " m ", c.m, " n ", c.n, " k ", c.k,
                      c.bias ? " bias" : "", c.offset ? " misaligned" : "", " seed ", c.seed);
}

// The CPU twin: y = x w^T (+ bias) in F32, and sum |x| |w|^T for the tolerance.
struct Reference {
  std::vector<float> y, abs_sum;
};

Reference cpu_linear(const GemmCase& c, const Rounded& x, const Rounded& w, const Rounded& bias) {
  Reference ref;
  std::vector<float> xv = x.values;
  std::vector<uint16_t> wb = w.bits;
  std::vector<uint16_t> bb = bias.bits;
  Tensor xt = Tensor::wrap(xv.data(), DType::kF32, {c.m, c.k}, nullptr);
  Tensor wt = Tensor::wrap(wb.data(), c.dtype, {c.n, c.k}, nullptr);
  Tensor bt = Tensor::wrap(bb.data(), c.dtype, {c.n}, nullptr);
  Tensor y = Tensor::zeros(DType::kF32, {c.m, c.n});
  linear(xt, wt, c.bias ? &bt.view() : nullptr, y, cpu_pool());
  ref.y.assign(y.data_as<float>(), y.data_as<float>() + y.numel());

  for (float& v : xv) v = std::fabs(v);
  for (uint16_t& b : wb) b &= 0x7fff;  // |w|: clear the sign bit (F16 and BF16 alike)
  Tensor abs_y = Tensor::zeros(DType::kF32, {c.m, c.n});
  linear(xt, wt, nullptr, abs_y, cpu_pool());
  ref.abs_sum.assign(abs_y.data_as<float>(), abs_y.data_as<float>() + abs_y.numel());
  return ref;
}

// Device copy of `host` starting `offset` elements into the buffer.
DeviceBuffer to_device_at(const std::vector<uint16_t>& host, int64_t offset) {
  std::vector<uint16_t> padded(static_cast<size_t>(offset), 0);
  padded.insert(padded.end(), host.begin(), host.end());
  return to_device(padded);
}

class CudaGemmTest : public gpu_test::GpuTest {
 protected:
  void SetUp() override {
    gpu_test::GpuTest::SetUp();
    if (IsSkipped()) return;
    auto gemm = CublasGemm::create(nullptr);
    ASSERT_TRUE(gemm.ok()) << gemm.status();
    gemm_ = std::move(*gemm);
  }

  void check(const GemmCase& c) {
    SCOPED_TRACE(describe(c));
    std::mt19937 rng(c.seed);
    const Rounded x = random_rounded(static_cast<size_t>(c.m * c.k), c.dtype, rng, -1.0f, 1.0f);
    const Rounded w = random_rounded(static_cast<size_t>(c.n * c.k), c.dtype, rng, -1.0f, 1.0f);
    const Rounded bias = random_rounded(static_cast<size_t>(c.n), c.dtype, rng, -1.0f, 1.0f);
    const Reference ref = cpu_linear(c, x, w, bias);

    DeviceBuffer dx = to_device_at(x.bits, c.offset);
    DeviceBuffer dw = to_device_at(w.bits, c.offset);
    DeviceBuffer db = to_device_at(bias.bits, c.offset);
    // y starts as NaN so an unwritten output fails.
    DeviceBuffer dy = to_device_at(
        std::vector<uint16_t>(static_cast<size_t>(c.m * c.n), gpu_test::nan_bits(c.dtype)),
        c.offset);
    auto at = [&](const DeviceBuffer& b) { return b.as<uint16_t>() + c.offset; };
    const absl::Status st =
        gemm_->linear(at(dx), at(dw), c.bias ? at(db) : nullptr, at(dy), c.m, c.n, c.k, c.dtype);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_TRUE(cuda_check(cudaDeviceSynchronize(), "CublasGemm::linear").ok());
    const std::vector<uint16_t> bits =
        to_host<uint16_t>(dy, static_cast<size_t>(c.offset + c.m * c.n));

    const float u = c.dtype == DType::kBF16 ? 1.0f / 128.0f : 1.0f / 1024.0f;
    const float acc_eps = static_cast<float>(c.k) * std::ldexp(1.0f, -23);
    size_t bad = 0, worst = 0;
    float worst_excess = 0.0f;
    for (size_t i = 0; i < ref.y.size(); ++i) {
      const float got = from_bits(bits[static_cast<size_t>(c.offset) + i], c.dtype);
      const float tol = u * std::fabs(ref.y[i]) + acc_eps * ref.abs_sum[i] + 1e-6f;
      const float err = std::fabs(got - ref.y[i]);
      if (!(err <= tol)) {
        if (bad == 0 || err - tol > worst_excess) {
          worst = i;
          worst_excess = err - tol;
        }
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0u) << gemm_->last_path() << ": " << bad << " of " << ref.y.size()
                       << " outputs off; worst at row "
                       << worst / c.n << " col " << worst % c.n << ": gpu "
                       << from_bits(bits[static_cast<size_t>(c.offset) + worst], c.dtype) << " cpu "
                       << ref.y[worst];
  }

  std::unique_ptr<CublasGemm> gemm_;
};

struct NK {
  int64_t n, k;
};
const NK kShapes[] = {{1, 1}, {17, 33}, {127, 255}, {256, 512}, {515, 1031}, {1000, 64}};

TEST_F(CudaGemmTest, MatchesCpuOverShapes) {
  uint32_t seed = 1;
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (int64_t m : {1, 7, 64, 257}) {
      for (const NK& s : kShapes) {
        for (bool bias : {false, true}) check({m, s.n, s.k, dt, bias, 0, seed++});
      }
    }
  }
}

// With set_use_gemv(true) decode shapes take the gemv kernel (m <= 8, k % 8 == 0), m = 9
// cuBLAS: row counts around the limit, k from one 8-element vector to a tail that leaves lanes
// without a full group of in-flight loads (8200 = 1025 vectors), n not a multiple of a block's
// rows, and every row split (8 warps a row for n < 1056, 4 for 2048, 2 for 3072, 1 for 4608).
// The same cases with set_use_gemv(false), the default, check cuBLAS on them.
TEST_F(CudaGemmTest, DecodeShapesMatchCpu) {
  uint32_t seed = 300;
  const NK shapes[] = {{64, 8},   {1000, 64}, {2048, 2048}, {13, 8200},
                       {3, 4096}, {3072, 264}, {4608, 136}};
  for (bool use_gemv : {true, false}) {
    gemm_->set_use_gemv(use_gemv);
    for (DType dt : {DType::kF16, DType::kBF16}) {
      for (int64_t m : {1, 2, 3, 5, 8, 9}) {
        for (const NK& s : shapes) {
          for (bool bias : {false, true}) {
            check({m, s.n, s.k, dt, bias, 0, seed++});
            EXPECT_EQ(std::string(gemm_->last_path()) == "gemv", use_gemv && m <= 8)
                << gemm_->last_path() << " served m " << m << " n " << s.n << " k " << s.k;
          }
        }
      }
    }
  }
  gemm_->set_use_gemv(false);  // the default
}

// Operands only 2-byte aligned: cuBLASLt is not asked, GemmEx (and the bias broadcast) run.
TEST_F(CudaGemmTest, MisalignedOperandsMatchCpu) {
  uint32_t seed = 500;
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (int64_t m : {1, 7, 64}) {
      for (bool bias : {false, true}) {
        check({m, 127, 255, dt, bias, 1, seed++});
        check({m, 256, 512, dt, bias, 1, seed++});
      }
    }
  }
}

// The second call of a shape reuses the cached plan (and bias pointer update) with new data.
TEST_F(CudaGemmTest, RepeatedShapesReusePlans) {
  for (uint32_t seed : {900u, 901u, 902u}) {
    check({64, 256, 512, DType::kBF16, true, 0, seed});
    check({64, 256, 512, DType::kBF16, false, 0, seed + 10});
  }
}

TEST_F(CudaGemmTest, RejectsBadArguments) {
  alignas(16) uint16_t dummy[8] = {};
  absl::Status st = gemm_->linear(dummy, dummy, nullptr, dummy, 1, 1, 1, DType::kF32);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = gemm_->linear(dummy, dummy, nullptr, dummy, 1, 0, 1, DType::kBF16);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = gemm_->linear(nullptr, dummy, nullptr, dummy, 1, 1, 1, DType::kBF16);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(gemm_->linear(nullptr, nullptr, nullptr, nullptr, 0, 4, 4, DType::kBF16).ok());
}

}  // namespace
}  // namespace weft::kernels::cuda
