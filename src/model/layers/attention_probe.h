// Opt-in recording of attention weights (weft inspect): for chosen layers and query heads, the
// softmax weights that the rows whose logits a step wants (the rows tokens are sampled from) gave
// every context position, as the engine's own attention kernel computed them
// (kernels::AttentionWeightsOut). Each rank records its own layers (its pipeline stage) and its
// own query heads (its TP slice) under their global indices; the coordinator gathers the records
// (serialize / parse). A position recorded again (a recomputed or re-verified row) keeps the
// newest weights. Not thread-safe: one forward pass at a time, as a rank runs them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "model/forward_batch.h"
#include "weft/kernels/attention.h"

namespace weft {

struct AttentionSelection {
  std::vector<int> layers;  // global layer indices
  std::vector<int> heads;   // global query-head indices
};

// One query row of one head: weights[p] for key positions p in [0, position].
struct AttentionRecord {
  int layer = 0;
  int head = 0;
  int32_t position = 0;  // the query row's position in its sequence
  int64_t seq_id = 0;
  std::vector<float> weights;
};

class AttentionProbe {
 public:
  explicit AttentionProbe(AttentionSelection selection);

  const AttentionSelection& selection() const { return selection_; }
  bool records_layer(int layer) const;

  // One layer's recording of one forward pass: begin() builds the kernel's output for the
  // batch's logit rows (all local heads), end() keeps the selected heads. `first_head`: the
  // global index of this rank's first local query head.
  class Pass {
   public:
    const kernels::AttentionWeightsOut* out() const { return rows_.empty() ? nullptr : &out_; }

   private:
    friend class AttentionProbe;
    std::vector<int32_t> row_of_token_;
    std::vector<int32_t> rows_;  // batch token of each recorded row
    std::vector<float> weights_;
    kernels::AttentionWeightsOut out_;
  };
  Pass begin(const ForwardBatch& batch, int64_t num_local_heads) const;
  void end(const Pass& pass, const ForwardBatch& batch, int layer, int64_t first_head,
           int64_t num_local_heads);

  // The newest record of every (sequence, layer, head, position), in that order.
  std::vector<AttentionRecord> records() const;
  void clear() { records_.clear(); }

  // Bytes for the gather to rank 0, and back (InvalidArgument on malformed bytes).
  static std::string serialize(const std::vector<AttentionRecord>& records);
  static absl::StatusOr<std::vector<AttentionRecord>> parse(const std::string& bytes);

 private:
  AttentionSelection selection_;
  std::map<std::tuple<int64_t, int, int, int32_t>, std::vector<float>> records_;
};

}  // namespace weft
