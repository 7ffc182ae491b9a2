// The Communicator of a group of MPI ranks, on host memory (CPU runs; control-plane tensors).
//
// Every operation is blocking and collective over the group (send/recv: between the two ranks
// involved), so all ranks must issue the same calls in the same order. Failures of MPI (the
// communicator is set to MPI_ERRORS_RETURN) come back as absl::InternalError naming the
// operation, the peer or group, and MPI's error string. Messages larger than
// max_message_bytes() (1 GiB by default) are split into several MPI calls, because MPI counts
// are ints.
#pragma once

#include <cstddef>
#include <memory>

#include <mpi.h>

#include "absl/status/statusor.h"
#include "parallel/communicator.h"

namespace weft {

inline constexpr size_t kDefaultMaxMpiMessageBytes = size_t{1} << 30;

class MpiCommunicator final : public Communicator {
 public:
  enum class Ownership { kBorrow, kOwn };

  // Wraps `comm` (not MPI_COMM_NULL). kOwn: MPI_Comm_free in the destructor (skipped when MPI is
  // already finalized). Sets MPI_ERRORS_RETURN on it. Errors if MPI is not initialized.
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> create(
      MPI_Comm comm, Ownership ownership,
      size_t max_message_bytes = kDefaultMaxMpiMessageBytes);
  // A private duplicate of `comm` (its own message space), owned.
  static absl::StatusOr<std::unique_ptr<MpiCommunicator>> duplicate(
      MPI_Comm comm, size_t max_message_bytes = kDefaultMaxMpiMessageBytes);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Reductions accept F32, I32 and I64 host tensors (F16 / BF16: InvalidArgument).
  absl::Status all_reduce_sum(const TensorView& tensor) override;
  absl::Status all_reduce_max(const TensorView& tensor) override;
  // Any dtype. out.nbytes() must be size() * in.nbytes(). `in` may alias out's slot of this
  // rank (in place); any other overlap is an error.
  absl::Status all_gather(const TensorView& in, const TensorView& out) override;
  // Any dtype, by bytes. The receiver's tensor must have exactly the sender's byte count: a
  // larger message is an MPI truncation error, a smaller one an InvalidArgument naming both.
  absl::Status send(const TensorView& tensor, int dest) override;
  absl::Status recv(const TensorView& tensor, int src) override;
  absl::Status broadcast(const TensorView& tensor, int root) override;
  // Blocks until every rank of the group has entered it.
  absl::Status barrier();

  MPI_Comm comm() const { return comm_; }
  size_t max_message_bytes() const { return max_message_bytes_; }

 private:
  MpiCommunicator(MPI_Comm comm, bool owned, int rank, int size, size_t max_message_bytes);
  absl::Status reduce(const TensorView& tensor, MPI_Op op, const char* what);
  absl::Status check_peer(int peer, const char* what) const;

  MPI_Comm comm_;
  bool owned_;
  int rank_;
  int size_;
  size_t max_message_bytes_;
};

// "MPI_Send failed: <MPI's error string>" style text for an MPI error code.
std::string mpi_error_string(int code);

}  // namespace weft
