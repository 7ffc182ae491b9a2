// The sparse mixture-of-experts block (Mixtral, Qwen2-MoE, Qwen3-MoE; ModelConfig::moe): a router
// picks each token's top-k SwiGLU experts, the experts' outputs are summed with the routing
// weights, and Qwen2-MoE adds a shared expert scaled by a per-token sigmoid gate.
//
// Execution is grouped: the tokens routed to an expert are gathered into one matrix and the
// expert runs once over it (no per-token loop), experts with no tokens are skipped.
//
// Distribution. The router is replicated, and since every rank of the TP group holds the same
// input rows it computes the same routing. With expert_parallel = 1 each expert's intermediate
// dimension is split over the TP group (like the dense MLP); with expert_parallel = E the group
// is E expert groups of tp/E ranks, group g holding experts [g * N/E, (g + 1) * N/E) whole or
// split over its tp/E ranks. Either way each rank computes a partial sum of the block's output
// for every token from the experts it holds (plus its shard of the shared expert), and one
// all-reduce over the TP group completes it: the same single collective as the dense MLP. An
// all-to-all that sends each token to its experts' owners would move rows that every rank
// already holds; it pays only where ranks hold different tokens (data-parallel attention),
// which weft does not have.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/layers/forward_context.h"
#include "model/layers/gated_mlp.h"
#include "model/layers/load_context.h"

namespace weft {

class SparseMoe {
 public:
  // The block of decoder layer `layer`. Errors: a missing or misshapen tensor (the names
  // save_pretrained writes; a checkpoint holding the experts fused as one 3-D experts.gate_up_proj
  // is refused by name); num_experts not divisible by expert_parallel, or expert_parallel not
  // dividing the TP size.
  static absl::StatusOr<SparseMoe> load(const LoadContext& ctx, int64_t layer);

  // x: F32 [tokens, hidden]; out: F32 [tokens, hidden] (all-reduced over the TP group).
  absl::Status forward(const ForwardContext& fc, const TensorView& x, const TensorView& out) const;

  size_t weight_bytes() const;
  int64_t num_experts() const { return num_experts_; }
  // Expert slots this rank holds: [first_local_expert(), first_local_expert() + local count).
  int64_t first_local_expert() const { return first_expert_; }
  int64_t num_local_experts() const { return static_cast<int64_t>(experts_.size()); }
  // Weight bytes of one of this rank's experts (they are all the same size).
  size_t expert_weight_bytes() const { return experts_.empty() ? 0 : experts_[0].weight_bytes(); }
  // Tokens routed to each expert (of all num_experts) by the forwards since the last reset; a
  // token counts once per expert it chose. Updated by forward(); read and reset between steps.
  const std::vector<int64_t>& routed_tokens() const { return routed_tokens_; }
  void reset_routed_tokens() const;

 private:
  Tensor router_;  // [num_experts, hidden], replicated
  std::vector<GatedMlp> experts_;
  int64_t first_expert_ = 0;
  int64_t num_experts_ = 0;
  int64_t top_k_ = 0;
  bool normalize_topk_ = false;
  std::optional<GatedMlp> shared_expert_;
  Tensor shared_expert_gate_;  // [1, hidden]
  mutable std::vector<int64_t> routed_tokens_;
};

}  // namespace weft
