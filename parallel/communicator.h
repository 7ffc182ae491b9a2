// Collective and point-to-point transport for tensors within a group of ranks (a TP group, a PP
// pair, the world). Implementations: single-rank (no-op), MPI (host memory, CPUs), NCCL (device
// memory). Model layers receive a Communicator& and never call MPI or NCCL themselves.
#pragma once

#include "absl/status/status.h"
#include "core/tensor.h"

namespace weft {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // rank within this group
  virtual int size() const = 0;

  // In place: every rank ends with the element-wise sum over the group. F32 tensors.
  virtual absl::Status all_reduce_sum(const TensorView& tensor) = 0;
  // In place: for each element, the max over the group (used by distributed greedy sampling).
  virtual absl::Status all_reduce_max(const TensorView& tensor) = 0;
  // out[r * n : (r + 1) * n] = `in` of group rank r; out holds size() * in.numel() elements.
  virtual absl::Status all_gather(const TensorView& in, const TensorView& out) = 0;
  virtual absl::Status send(const TensorView& tensor, int dest) = 0;
  virtual absl::Status recv(const TensorView& tensor, int src) = 0;
  virtual absl::Status broadcast(const TensorView& tensor, int root) = 0;
};

}  // namespace weft
