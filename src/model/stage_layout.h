// Which decoder layers a pipeline stage runs, and whether it holds the embedding (first stage)
// or the final norm and LM head (last stage).
#pragma once

#include <vector>

#include "absl/status/statusor.h"

namespace weft {

struct StageLayout {
  int first_layer = 0;
  int end_layer = 0;  // exclusive
  bool has_embedding = true;
  bool has_head = true;

  int num_layers() const { return end_layer - first_layer; }
};

// Splits num_layers over pp stages. `layers_per_stage` empty: as evenly as possible (earlier
// stages take the remainder). Otherwise it must have pp positive entries summing to num_layers.
absl::StatusOr<StageLayout> stage_layout(int num_layers, int pp, int pp_rank,
                                         const std::vector<int>& layers_per_stage = {});

}  // namespace weft
