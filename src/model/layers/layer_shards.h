// How one rank of a tensor-parallel group holds a dense decoder layer's projections: which rows
// of each column-parallel part (fused in order into one weight) and which input columns of each
// row-parallel projection. The one description both backends load from: the CPU layers
// (Attention, GatedMlp) and the CUDA weight layout (engine/cuda/cuda_weight_layout.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/layers/parallel_linear.h"
#include "model/model_config.h"
#include "parallel/tp_shard.h"

namespace weft {

// Input columns `shard` of `name` (without ".weight"), full shape [out_features, full_in].
struct RowPart {
  std::string name;
  int64_t out_features = 0;
  int64_t full_in = 0;
  ShardRange shard;
};

struct AttentionShards {
  ShardRange q_rows;   // of num_attention_heads * head_dim
  ShardRange kv_rows;  // of num_key_value_heads * head_dim (replicated heads when fewer than ranks)
  std::vector<ColumnPart> qkv;  // q, k, v (parts of a fused qkv_proj for Phi-3 style checkpoints)
  RowPart o_proj;
};

// `prefix`: "model.layers.<i>.self_attn". Errors: heads that do not split over `size` ranks.
absl::StatusOr<AttentionShards> attention_shards(const ModelConfig& c, const std::string& prefix, int rank,
                                                 int size);

struct MlpShards {
  ShardRange intermediate;     // of intermediate_size; padded past it on the last ranks
  std::vector<ColumnPart> gate_up;  // gate, up (parts of a fused gate_up_proj when the checkpoint has one)
  RowPart down;
};

// `prefix`: "model.layers.<i>.mlp".
MlpShards mlp_shards(const ModelConfig& c, const std::string& prefix, int rank, int size);

}  // namespace weft
