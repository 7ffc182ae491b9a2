// DeviceStaging (host_staged_communicator.h) for CUDA device memory: copies on one stream, each
// waited for. Built only when WEFT_CUDA is ON. The stream is the opaque CUstream_st* that
// cudaStream_t names, so this header needs no CUDA headers.
#pragma once

#include "parallel/host_staged_communicator.h"

struct CUstream_st;

namespace weft {

class CudaDeviceStaging final : public DeviceStaging {
 public:
  // `stream`: the compute stream whose queued work produces the tensors (null: the legacy
  // default stream). The device is the caller's current one.
  explicit CudaDeviceStaging(CUstream_st* stream = nullptr) : stream_(stream) {}
  absl::Status to_host(const void* device, void* host, size_t bytes) override;
  absl::Status to_device(const void* host, void* device, size_t bytes) override;

 private:
  CUstream_st* stream_;
};

}  // namespace weft
