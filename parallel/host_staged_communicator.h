// A Communicator for device tensors over a host-memory one (an MpiCommunicator): each operation
// copies its device tensors into host buffers, runs the host operation on them, and copies the
// results back. Two copies and the host transport per call make it slower than NCCL, but it works
// where NCCL cannot: several ranks sharing one GPU (NCCL refuses two ranks of a communicator on
// one device). That is how the multi-rank GPU path runs on a one-GPU machine.
//
// - Device tensors (Device::kCuda) are staged; host tensors go straight to the host communicator.
//   Both tensors of an all_gather must be on the same side.
// - Sums and maxima of F16 / BF16 tensors (a GPU's activations) are taken in F32 on the host and
//   rounded once to the tensor's dtype (nearest even): every rank ends with the same bits. F32,
//   I32 and I64 reduce as the host communicator does.
// - Each call returns once its results are in the caller's tensors (the staging copies wait for
//   the device work queued before them: DeviceStaging's contract).
// - The host buffers are kept and grown, so a steady step reuses them.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "parallel/communicator.h"

namespace weft {

// Copies between device memory and host memory for HostStagedCommunicator.
class DeviceStaging {
 public:
  virtual ~DeviceStaging() = default;
  // Copies `bytes` from device memory to host memory; returns once they are there, after the
  // device work that produced them.
  virtual absl::Status to_host(const void* device, void* host, size_t bytes) = 0;
  // Copies `bytes` from host memory to device memory; returns once the host buffer may be reused.
  virtual absl::Status to_device(const void* host, void* device, size_t bytes) = 0;
};

class HostStagedCommunicator final : public Communicator {
 public:
  // Borrows both; they must outlive this communicator.
  HostStagedCommunicator(Communicator& host, DeviceStaging& staging) : host_(host), staging_(staging) {}

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  absl::Status all_reduce_sum(const TensorView& tensor) override;
  absl::Status all_reduce_max(const TensorView& tensor) override;
  absl::Status all_gather(const TensorView& in, const TensorView& out) override;
  absl::Status send(const TensorView& tensor, int dest) override;
  absl::Status recv(const TensorView& tensor, int src) override;
  absl::Status broadcast(const TensorView& tensor, int root) override;

 private:
  enum class Reduction { kSum, kMax };
  absl::Status reduce(const TensorView& tensor, Reduction op);
  // A host view of `t`'s shape over host buffer `which` (0 or 1), grown to fit; with `copy_in`,
  // holding `t`'s bytes.
  absl::StatusOr<TensorView> stage(const TensorView& t, int which, bool copy_in);
  absl::Status unstage(const TensorView& host, const TensorView& device);

  Communicator& host_;
  DeviceStaging& staging_;
  std::vector<unsigned char> buffers_[2];
  std::vector<float> widened_;  // F16 / BF16 reductions in F32
};

}  // namespace weft
