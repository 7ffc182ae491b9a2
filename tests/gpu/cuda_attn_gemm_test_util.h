// Host-side helpers of the CUDA attention and GEMM tests: 16-bit rounding, device copies.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/half.h"
#include "weft/kernels/cuda/device_buffer.h"
#include "weft/kernels/cuda_device.h"

namespace weft::kernels::cuda::gpu_test {

// Skips every test of a fixture on machines without a CUDA GPU (ctest then reports "skipped").
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU";
  }
};

inline uint16_t to_bits(float f, DType dt) {
  return dt == DType::kF16 ? float_to_f16(f) : float_to_bf16(f);
}

inline float from_bits(uint16_t b, DType dt) {
  return dt == DType::kF16 ? f16_to_float(b) : bf16_to_float(b);
}

// A quiet NaN of the 16-bit dtype: planted where a kernel must not read.
inline uint16_t nan_bits(DType dt) { return dt == DType::kF16 ? 0x7e00 : 0x7fc0; }

// Uniform values in [lo, hi) rounded to `dt`: `bits` holds the stored form, `values` the exact
// floats those bits mean (what the CPU twin sees).
struct Rounded {
  std::vector<uint16_t> bits;
  std::vector<float> values;
};

inline Rounded random_rounded(size_t n, DType dt, std::mt19937& rng, float lo, float hi) {
  // Draws from a table of 4096 rounded uniform values with a xorshift index: KV caches of
  // millions of elements are filled in milliseconds, still with no pattern a kernel could
  // accidentally match.
  constexpr size_t kTable = 4096;
  std::uniform_real_distribution<float> dist(lo, hi);
  uint16_t table[kTable];
  for (uint16_t& b : table) b = to_bits(dist(rng), dt);
  uint64_t state = (static_cast<uint64_t>(rng()) << 32) | rng() | 1u;
  Rounded r;
  r.bits.resize(n);
  r.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    r.bits[i] = table[(state >> 20) % kTable];
    r.values[i] = from_bits(r.bits[i], dt);
  }
  return r;
}

// A device copy of `host` (gtest-fails and returns an empty buffer on error).
template <typename T>
DeviceBuffer to_device(const std::vector<T>& host) {
  const size_t bytes = host.size() * sizeof(T);
  auto buf = DeviceBuffer::allocate(bytes == 0 ? sizeof(T) : bytes);
  EXPECT_TRUE(buf.ok()) << buf.status();
  if (!buf.ok()) return DeviceBuffer();
  if (bytes > 0) {
    const absl::Status st = buf->copy_from_host(host.data(), bytes);
    EXPECT_TRUE(st.ok()) << st;
  }
  return std::move(*buf);
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer& buf, size_t n) {
  std::vector<T> host(n);
  const absl::Status st = buf.copy_to_host(host.data(), n * sizeof(T));
  EXPECT_TRUE(st.ok()) << st;
  return host;
}

}  // namespace weft::kernels::cuda::gpu_test
