#include "parallel/cuda_device_staging.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

// Queues the copy on `stream` after its earlier work and waits for it.
absl::Status copy_and_wait(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                           const char* what) {
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrCat("host-staged communicator: ", what, " of ", bytes, " bytes failed: ",
                                            cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaDeviceStaging::to_host(const void* device, void* host, size_t bytes) {
  return copy_and_wait(host, device, bytes, cudaMemcpyDeviceToHost, stream_, "device-to-host copy");
}

absl::Status CudaDeviceStaging::to_device(const void* host, void* device, size_t bytes) {
  return copy_and_wait(device, host, bytes, cudaMemcpyHostToDevice, stream_, "host-to-device copy");
}

}  // namespace weft
