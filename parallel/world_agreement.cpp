#include "parallel/world_agreement.h"

#include <mpi.h>

#include "absl/strings/str_cat.h"
#include "parallel/mpi_communicator.h"

namespace weft {

absl::StatusOr<int64_t> agree_on_minimum(int64_t value) {
  int64_t result = 0;
  const int rc = MPI_Allreduce(&value, &result, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("MPI_Allreduce(min) failed: ", mpi_error_string(rc)));
  }
  return result;
}

absl::Status agree_on_status(MpiWorld& world, const absl::Status& mine) {
  auto messages = world.gather_bytes(mine.ok() ? "" : std::string(mine.message()), 0);
  if (!messages.ok()) return messages.status();
  std::string summary;
  for (size_t r = 0; r < messages->size(); ++r) {
    if ((*messages)[r].empty()) continue;
    absl::StrAppend(&summary, summary.empty() ? "" : "; ", "rank ", r, ": ", (*messages)[r]);
  }
  if (absl::Status s = world.broadcast_bytes(summary, 0); !s.ok()) return s;
  if (summary.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(summary);
}

}  // namespace weft
