#include "cuda_ops_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/half.h"

namespace weft::test {

using kernels::cuda::DeviceBuffer;

float HostArray::get(int64_t i) const {
  if (dtype_ == DType::kF32) {
    float f;
    std::memcpy(&f, bytes_.data() + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes_.data() + i * 2, 2);
  return dtype_ == DType::kBF16 ? bf16_to_float(h) : f16_to_float(h);
}

void HostArray::set(int64_t i, float v) {
  if (dtype_ == DType::kF32) {
    std::memcpy(bytes_.data() + i * 4, &v, 4);
    return;
  }
  const uint16_t h = dtype_ == DType::kBF16 ? float_to_bf16(v) : float_to_f16(v);
  std::memcpy(bytes_.data() + i * 2, &h, 2);
}

std::vector<float> HostArray::to_floats() const {
  std::vector<float> v(n_);
  for (int64_t i = 0; i < n_; ++i) v[i] = get(i);
  return v;
}

HostArray random_array(DType dtype, int64_t n, float lo, float hi, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  HostArray a(dtype, n);
  for (int64_t i = 0; i < n; ++i) a.set(i, dist(rng));
  return a;
}

float round_to(DType dtype, float v) {
  HostArray a(dtype, 1);
  a.set(0, v);
  return a.get(0);
}

float unit_roundoff(DType dtype) {
  switch (dtype) {
    case DType::kBF16:
      return 1.0f / 256.0f;  // 8 significant bits
    case DType::kF16:
      return 1.0f / 2048.0f;  // 11 significant bits
    default:
      return 6.0e-8f;  // 24 significant bits
  }
}

DeviceBuffer upload(const void* src, size_t bytes) {
  auto buffer = DeviceBuffer::allocate(bytes);
  if (!buffer.ok()) {
    ADD_FAILURE() << buffer.status();
    return DeviceBuffer();
  }
  const absl::Status st = buffer->copy_from_host(src, bytes);
  if (!st.ok()) ADD_FAILURE() << st;
  return std::move(*buffer);
}

DeviceBuffer upload(const HostArray& a) { return upload(a.data(), a.nbytes()); }

DeviceBuffer device_zeros(size_t bytes) {
  auto buffer = DeviceBuffer::allocate(bytes);
  if (!buffer.ok()) {
    ADD_FAILURE() << buffer.status();
    return DeviceBuffer();
  }
  const absl::Status st = buffer->zero();
  if (!st.ok()) ADD_FAILURE() << st;
  return std::move(*buffer);
}

void download(const DeviceBuffer& b, void* dst, size_t bytes) {
  const absl::Status st = b.copy_to_host(dst, bytes);
  if (!st.ok()) ADD_FAILURE() << st;
}

HostArray download(const DeviceBuffer& b, DType dtype, int64_t n) {
  HostArray a(dtype, n);
  download(b, a.data(), a.nbytes());
  return a;
}

void sync_device() {
  const absl::Status st =
      kernels::cuda::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (!st.ok()) ADD_FAILURE() << st;
}

}  // namespace weft::test
