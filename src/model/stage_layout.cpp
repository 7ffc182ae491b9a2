#include "model/stage_layout.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft {

absl::StatusOr<StageLayout> stage_layout(int num_layers, int pp, int pp_rank,
                                         const std::vector<int>& layers_per_stage) {
  if (pp > num_layers) {
    return absl::InvalidArgumentError(absl::StrCat("--pp ", pp, " exceeds the model's ",
                                                   num_layers, " layers"));
  }
  std::vector<int> counts = layers_per_stage;
  if (counts.empty()) {
    for (int s = 0; s < pp; ++s) counts.push_back(num_layers / pp + (s < num_layers % pp ? 1 : 0));
  }
  const int sum = std::accumulate(counts.begin(), counts.end(), 0);
  bool positive = true;
  for (int c : counts) positive = positive && c > 0;
  if (static_cast<int>(counts.size()) != pp || sum != num_layers || !positive) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layers per stage [", absl::StrJoin(counts, ","), "] must be ", pp,
        " positive numbers summing to num_hidden_layers = ", num_layers));
  }
  StageLayout layout;
  layout.first_layer = std::accumulate(counts.begin(), counts.begin() + pp_rank, 0);
  layout.end_layer = layout.first_layer + counts[pp_rank];
  layout.has_embedding = pp_rank == 0;
  layout.has_head = pp_rank == pp - 1;
  return layout;
}

}  // namespace weft
