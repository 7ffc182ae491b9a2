#include "weft/kernels/cuda/device_buffer.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::kernels::cuda {

absl::Status cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err));
  if (err == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  if (err == cudaErrorInvalidValue) return absl::InvalidArgumentError(message);
  return absl::InternalError(message);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);  // nothing useful to do with an error in a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();  // a failed cudaMalloc leaves no sticky error, but clear it regardless
    return cuda_check(err, absl::StrCat("cudaMalloc(", bytes, " bytes)").c_str());
  }
  buffer.data_ = p;
  buffer.size_ = bytes;
  return buffer;
}

absl::Status DeviceBuffer::copy_from_host(const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes > size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_from_host: ", bytes, " bytes into a buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  if (auto st = cuda_check(cudaMemcpyAsync(data_, src, bytes, cudaMemcpyHostToDevice, stream),
                           "copy_from_host: cudaMemcpyAsync");
      !st.ok()) {
    return st;
  }
  return cuda_check(cudaStreamSynchronize(stream), "copy_from_host: cudaStreamSynchronize");
}

absl::Status DeviceBuffer::copy_to_host(void* dst, size_t bytes, cudaStream_t stream) const {
  if (bytes > size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_to_host: ", bytes, " bytes from a buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  if (auto st = cuda_check(cudaMemcpyAsync(dst, data_, bytes, cudaMemcpyDeviceToHost, stream),
                           "copy_to_host: cudaMemcpyAsync");
      !st.ok()) {
    return st;
  }
  return cuda_check(cudaStreamSynchronize(stream), "copy_to_host: cudaStreamSynchronize");
}

absl::Status DeviceBuffer::zero(cudaStream_t stream) {
  if (size_ == 0) return absl::OkStatus();
  return cuda_check(cudaMemsetAsync(data_, 0, size_, stream), "DeviceBuffer::zero");
}

}  // namespace weft::kernels::cuda
