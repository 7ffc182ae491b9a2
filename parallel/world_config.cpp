#include "parallel/world_config.h"

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<WorldConfig> WorldConfig::create(int rank, int world_size, int tp, int pp) {
  if (tp < 1 || pp < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--tp and --pp must be at least 1 (got tp=", tp,
                                                   ", pp=", pp, ")"));
  }
  if (world_size != tp * pp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the job has ", world_size, " rank(s) but --tp ", tp, " x --pp ", pp, " = ", tp * pp,
        " are needed; start it with mpirun -np ", tp * pp));
  }
  if (rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " outside world of ", world_size));
  }
  return WorldConfig{rank, world_size, tp, pp};
}

}  // namespace weft
