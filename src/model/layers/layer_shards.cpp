#include "model/layers/layer_shards.h"

#include "core/status_macros.h"

namespace weft {

absl::StatusOr<AttentionShards> attention_shards(const ModelConfig& c, const std::string& prefix, int rank,
                                                 int size) {
  AttentionShards s;
  WEFT_ASSIGN_OR_RETURN(s.q_rows, head_shard(c.num_attention_heads, c.head_dim, rank, size, "num_attention_heads"));
  WEFT_ASSIGN_OR_RETURN(s.kv_rows, kv_head_shard(c.num_key_value_heads, c.head_dim, rank, size));
  const int64_t q_full = c.num_attention_heads * c.head_dim;
  const int64_t kv_full = c.num_key_value_heads * c.head_dim;
  s.qkv = {{prefix + ".q_proj", q_full, s.q_rows},
           {prefix + ".k_proj", kv_full, s.kv_rows},
           {prefix + ".v_proj", kv_full, s.kv_rows}};
  if (c.fused_qkv_proj) {
    // One qkv_proj of [q; k; v] rows: this rank's heads of each, at their offsets in it.
    const std::string fused = prefix + ".qkv_proj";
    const int64_t rows = q_full + 2 * kv_full;
    s.qkv = {{fused, q_full, s.q_rows, 0, rows},
             {fused, kv_full, s.kv_rows, q_full, rows},
             {fused, kv_full, s.kv_rows, q_full + kv_full, rows}};
  }
  s.o_proj = {prefix + ".o_proj", c.hidden_size, q_full, s.q_rows};
  return s;
}

MlpShards mlp_shards(const ModelConfig& c, const std::string& prefix, int rank, int size) {
  MlpShards s;
  s.intermediate = padded_shard(c.intermediate_size, rank, size);
  const int64_t inter = c.intermediate_size;
  s.gate_up = {{prefix + ".gate_proj", inter, s.intermediate}, {prefix + ".up_proj", inter, s.intermediate}};
  if (c.fused_gate_up_proj) {
    // One gate_up_proj of [gate; up] rows: this rank's slice of each half.
    const std::string fused = prefix + ".gate_up_proj";
    s.gate_up = {{fused, inter, s.intermediate, 0, 2 * inter}, {fused, inter, s.intermediate, inter, 2 * inter}};
  }
  s.down = {prefix + ".down_proj", c.hidden_size, inter, s.intermediate};
  return s;
}

}  // namespace weft
