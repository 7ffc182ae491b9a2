// Owning device memory and CUDA error translation for the CUDA backend (tests and the GPU model
// runner). Valid C++17 (included by .cu files).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::kernels::cuda {

// OK for cudaSuccess; otherwise an Internal error "<what>: <cudaGetErrorName>: <description>".
absl::Status cuda_check(cudaError_t err, const char* what);

// A cudaMalloc'd allocation on the current device, freed on destruction. Move-only; a
// moved-from or default-constructed buffer is empty (data() == nullptr, size() == 0).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // `bytes` of uninitialised device memory (0 bytes gives an empty buffer). ResourceExhausted /
  // Internal from cudaMalloc, naming the size.
  static absl::StatusOr<DeviceBuffer> allocate(size_t bytes);

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t size() const { return size_; }

  // Copies `bytes` from host memory `src` into the start of the buffer, or the buffer's first
  // `bytes` into `dst`, ordered on `stream`, and waits for the stream to finish (so pageable
  // host memory may be reused at once). InvalidArgument when `bytes` exceeds size().
  absl::Status copy_from_host(const void* src, size_t bytes, cudaStream_t stream = nullptr);
  absl::Status copy_to_host(void* dst, size_t bytes, cudaStream_t stream = nullptr) const;
  // Sets every byte to zero, asynchronously on `stream`.
  absl::Status zero(cudaStream_t stream = nullptr);

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace weft::kernels::cuda
