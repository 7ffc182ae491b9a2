// Which host each rank of the job runs on, said once at start-up so that a later failure that
// names only a host (OpenMPI: "Peer host: H", "Remote daemon ... on node H") or only a rank
// (weft's watchdog, MPI errors) can be tied to the other. Host names are what the MPI library
// reports (MPI_Get_processor_name, normally the machine's host name).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "parallel/world_config.h"

namespace weft {

// One line per rank, "weft: rank R (stage S, tp rank T) on host H", in rank order, each ending
// in '\n'. `hosts[r]` is rank r's host; `layout` gives tp and pp (its own rank is not used).
// Errors when hosts.size() is not layout.world_size.
absl::StatusOr<std::string> describe_rank_hosts(const WorldConfig& layout,
                                                const std::vector<std::string>& hosts);

}  // namespace weft
