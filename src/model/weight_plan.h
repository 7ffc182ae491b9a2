// How many bytes of weights one rank holds, from the config and its place in the job, before
// loading anything: what DecoderModel::weight_bytes() reports once the rank has loaded (the
// distributed golden check compares the two). weft info prints it per rank, and the
// resident-memory test holds the process to it.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "model/stage_layout.h"
#include "model/weight_quantization.h"

namespace weft {

// A rank of a TP group of `tp` ranks (expert_parallel as in LoadContext) running `layout`'s
// layers: its shards of attention (KV heads replicated when fewer than tp), of the MLP and
// vocabulary (padded to ceil(size / tp)), of the experts (num_experts / ep whole experts split
// over tp / ep ranks, the router whole), the norms whole (Gemma's 1 + w norms as F32), and the
// embedding on the first stage (and the last when tied) and the LM head on the last. Every rank
// of a stage holds the same amount.
// With kInt8 the column- and row-parallel weights take one byte per element plus an F32 scale
// per output row, with int4 / GGUF block types their blocks' bytes (quantized_weight_bytes, with
// the same group fallback as the load); biases, embeddings, the LM head, routers and norms keep
// their dtype. With quantize_lm_head (LoadContext) the head takes int8 rows and F32 scales, a
// tied one besides the embedding.
int64_t planned_weight_bytes(const ModelConfig& config, int tp, int expert_parallel,
                             const StageLayout& layout,
                             WeightQuantization quantization = WeightQuantization::kNone,
                             bool quantize_lm_head = false);

// The same, or an InvalidArgument when some linear weight's shard fits no layout of the
// quantization (the load would fail: model/weight_quantization.h quantized_layout): weft info.
absl::StatusOr<int64_t> checked_planned_weight_bytes(const ModelConfig& config, int tp,
                                                     int expert_parallel, const StageLayout& layout,
                                                     WeightQuantization quantization,
                                                     bool quantize_lm_head = false);

}  // namespace weft
