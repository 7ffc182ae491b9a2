// Decisions every rank of the job must take together at start-up.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "parallel/mpi_world.h"

namespace weft {

// The minimum of `value` over every rank of the world (e.g. the KV blocks that fit on all ranks).
absl::StatusOr<int64_t> agree_on_minimum(int64_t value);

// Collective: OK on every rank when every rank's `mine` is OK; otherwise, on every rank, an error
// whose message names each failing rank and its message ("rank 2: <message>; rank 3: ...").
absl::Status agree_on_status(MpiWorld& world, const absl::Status& mine);

}  // namespace weft
