// Host-side helpers of the CUDA op tests: dtype-typed host arrays, uploads and downloads, and
// the tolerance of one rounding to a dtype.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "weft/kernels/cuda/device_buffer.h"

namespace weft::test {

// A host array of `dtype` elements (F32, F16 or BF16), read and written as floats.
class HostArray {
 public:
  HostArray(DType dtype, int64_t n) : dtype_(dtype), bytes_(n * dtype_size(dtype)), n_(n) {}
  DType dtype() const { return dtype_; }
  int64_t size() const { return n_; }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  size_t nbytes() const { return bytes_.size(); }
  float get(int64_t i) const;
  void set(int64_t i, float v);  // rounds to nearest even
  std::vector<float> to_floats() const;

 private:
  DType dtype_;
  std::vector<uint8_t> bytes_;
  int64_t n_;
};

// Uniform values in [lo, hi), already representable in the array's dtype.
HostArray random_array(DType dtype, int64_t n, float lo, float hi, std::mt19937& rng);

// v rounded to `dtype` and back.
float round_to(DType dtype, float v);

// Relative error of one round-to-nearest in `dtype` (half an ulp), for tolerances.
float unit_roundoff(DType dtype);

// Allocates a device buffer holding `bytes` of `src`; aborts the test on failure (ASSERT-style
// checks live in the callers: these return an empty buffer after an ADD_FAILURE).
kernels::cuda::DeviceBuffer upload(const void* src, size_t bytes);
template <typename T>
kernels::cuda::DeviceBuffer upload(const std::vector<T>& v) {
  return upload(v.data(), v.size() * sizeof(T));
}
kernels::cuda::DeviceBuffer upload(const HostArray& a);
kernels::cuda::DeviceBuffer device_zeros(size_t bytes);
void download(const kernels::cuda::DeviceBuffer& b, void* dst, size_t bytes);
template <typename T>
std::vector<T> download(const kernels::cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  download(b, v.data(), n * sizeof(T));
  return v;
}
HostArray download(const kernels::cuda::DeviceBuffer& b, DType dtype, int64_t n);

// Waits for the default stream; a failed asynchronous kernel shows up here.
void sync_device();

}  // namespace weft::test
