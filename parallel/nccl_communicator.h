// The Communicator of a group of GPUs (one per rank), on device memory, over NCCL. Built only
// when WEFT_CUDA is ON (WEFT_HAVE_NCCL is then defined). This header needs no CUDA or NCCL
// headers: the stream is the opaque CUstream_st* that cudaStream_t names.
//
// Operations are enqueued on the communicator's own stream. Ordering with the caller's work:
//  - without a compute stream (default), the caller must have finished the work producing the
//    inputs (e.g. synchronized its stream) and every call returns once the operation is done
//    on the device, polling NCCL for asynchronous errors (a dead peer) meanwhile;
//  - with set_compute_stream(s), the operation waits for the work queued on s so far and s
//    waits for the operation: calls return at once, stream-ordered, like a kernel launch.
// Tensors must be Device::kCuda and live on this communicator's device. Reductions accept F32,
// F16, BF16, I32, I64; everything else moves bytes. Any NCCL / CUDA failure is an Internal
// status naming the operation, peer or root and NCCL's error text; after an asynchronous NCCL
// error the communicator is aborted and every later call fails.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "parallel/communicator.h"

struct ncclComm;
struct CUstream_st;
struct CUevent_st;

namespace weft {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `bootstrap`, a host-memory communicator of the same ranks (an
  // MpiCommunicator): its rank 0 makes an ncclUniqueId and broadcasts it; every rank then joins
  // with its bootstrap rank on `cuda_device`.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> create(Communicator& bootstrap,
                                                                  int cuda_device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::Status all_reduce_sum(const TensorView& tensor) override;
  absl::Status all_reduce_max(const TensorView& tensor) override;
  // out.nbytes() == size() * in.nbytes(); `in` may be out's slot of this rank (in place).
  absl::Status all_gather(const TensorView& in, const TensorView& out) override;
  absl::Status send(const TensorView& tensor, int dest) override;
  absl::Status recv(const TensorView& tensor, int src) override;
  absl::Status broadcast(const TensorView& tensor, int root) override;

  // nullptr restores the blocking mode. The stream must outlive its use here.
  void set_compute_stream(CUstream_st* stream) { compute_stream_ = stream; }
  CUstream_st* stream() const { return stream_; }
  int device() const { return device_; }

 private:
  NcclCommunicator(ncclComm* comm, CUstream_st* stream, CUevent_st* before, CUevent_st* after,
                   int rank, int size, int device);
  // Checks the tensor and makes this communicator's device current; orders after the compute
  // stream when there is one.
  absl::Status begin(const TensorView& t, const char* what);
  // Orders the compute stream after the operation, or waits for it (blocking mode).
  absl::Status finish(const char* what);
  absl::Status nccl_failure(int result, const char* what);

  ncclComm* comm_;
  CUstream_st* stream_;
  CUevent_st* before_;
  CUevent_st* after_;
  CUstream_st* compute_stream_ = nullptr;
  int rank_;
  int size_;
  int device_;
  bool aborted_ = false;
};

}  // namespace weft
