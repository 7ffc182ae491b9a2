#include "parallel/rank_hosts.h"

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusOr<std::string> describe_rank_hosts(const WorldConfig& layout,
                                                const std::vector<std::string>& hosts) {
  if (static_cast<int>(hosts.size()) != layout.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("describe_rank_hosts: ", hosts.size(),
                                                   " host names for a world of ", layout.world_size));
  }
  std::string out;
  WorldConfig where = layout;
  for (where.rank = 0; where.rank < layout.world_size; ++where.rank) {
    absl::StrAppend(&out, "weft: rank ", where.rank, " (stage ", where.pp_rank(), ", tp rank ",
                    where.tp_rank(), ") on host ", hosts[where.rank], "\n");
  }
  return out;
}

}  // namespace weft
