#include "parallel/single_rank_communicator.h"

#include <cstring>

namespace weft {

absl::Status SingleRankCommunicator::all_gather(const TensorView& in, const TensorView& out) {
  if (out.nbytes() != in.nbytes()) {
    return absl::InvalidArgumentError("all_gather: output must hold exactly the input on one rank");
  }
  if (out.data != in.data) std::memcpy(out.data, in.data, in.nbytes());
  return absl::OkStatus();
}

absl::Status SingleRankCommunicator::send(const TensorView&, int dest) {
  return absl::FailedPreconditionError("send on a single-rank communicator (no peer " +
                                       std::to_string(dest) + ")");
}

absl::Status SingleRankCommunicator::recv(const TensorView&, int src) {
  return absl::FailedPreconditionError("recv on a single-rank communicator (no peer " +
                                       std::to_string(src) + ")");
}

}  // namespace weft
