// Where this process sits in the job: world rank and size, and the tensor x pipeline layout.
// tp_rank = rank % tp, pp_rank = rank / tp (DESIGN.md section 1). This type owns that arithmetic.
#pragma once

#include "absl/status/statusor.h"

namespace weft {

struct WorldConfig {
  int rank = 0;
  int world_size = 1;
  int tp = 1;
  int pp = 1;

  // Errors when tp or pp is below 1 or world_size != tp * pp, naming the numbers.
  static absl::StatusOr<WorldConfig> create(int rank, int world_size, int tp, int pp);

  int tp_rank() const { return rank % tp; }
  int pp_rank() const { return rank / tp; }
  bool is_coordinator() const { return rank == 0; }
  bool is_first_stage() const { return pp_rank() == 0; }
  bool is_last_stage() const { return pp_rank() == pp - 1; }
  // World rank of (pp_rank, tp_rank).
  int rank_of(int pp_rank, int tp_rank) const { return pp_rank * tp + tp_rank; }
};

}  // namespace weft
