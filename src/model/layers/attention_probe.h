// Opt-in recording of attention weights: for chosen layers and query heads, the softmax weights
// that the rows whose logits a step wants (the rows tokens are sampled from) gave every context
// position, as the engine's own attention kernel computed them (kernels::AttentionWeightsOut).
// Two kinds: one selection for every sequence of every pass (weft inspect, for the whole run),
// or a selection per sequence (one step plan's StepPlan::record_attention: weft serve's
// "weft_debug" requests), where the other sequences of the batch cost nothing. Each rank records
// its own layers (its pipeline stage) and its own query heads (its TP slice) under their global
// indices; the coordinator gathers the records (serialize / parse). A position recorded again (a
// recomputed or re-verified row) keeps the newest weights. Not thread-safe: one forward pass at
// a time, as a rank runs them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "model/attention_selection.h"
#include "model/forward_batch.h"
#include "weft/kernels/attention.h"

namespace weft {

class AttentionProbe {
 public:
  // Every sequence: `selection`.
  explicit AttentionProbe(AttentionSelection selection);
  // Only the listed sequences, each with its own selection.
  static AttentionProbe for_sequences(const std::vector<AttentionRecording>& per_sequence);

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


 private:
  // The selection of a sequence; null when it is not recorded.
  const AttentionSelection* selection_of(int64_t seq_id) const;
  // The sequence of batch token `token`.
  static int64_t seq_of(const ForwardBatch& batch, int32_t token);

  AttentionSelection selection_;  // every sequence's, unless per_sequence_
  bool for_every_sequence_ = true;
  std::map<int64_t, AttentionSelection> per_sequence_;
  std::map<std::tuple<int64_t, int, int, int32_t>, std::vector<float>> records_;
};

}  // namespace weft
