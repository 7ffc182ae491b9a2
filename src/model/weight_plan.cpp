#include "model/weight_plan.h"

namespace weft {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t planned_weight_bytes(const ModelConfig& c, int tp, int expert_parallel,
                             const StageLayout& layout) {
  const int64_t t = tp, d = c.head_dim, h = c.hidden_size;
  const int64_t q = c.num_attention_heads / t * d;
  const int64_t kv = (c.num_key_value_heads >= t ? c.num_key_value_heads / t : 1) * d;
  const int64_t weight_bytes = static_cast<int64_t>(dtype_size(c.torch_dtype));
  const int64_t norm_bytes = c.norm_weight_plus_one ? 4 : weight_bytes;

  int64_t elements = 0, norm_elements = 0;
  for (int i = layout.first_layer; i < layout.end_layer; ++i) {
    elements += h * (q + 2 * kv) + q * h;
    if (c.attention_bias) elements += q + 2 * kv;
    if (c.o_proj_bias) elements += h;
    norm_elements += (c.sandwich_norms ? 4 : 2) * h + (c.qk_norm ? 2 * d : 0);
    if (!c.moe.is_sparse(i)) {
      const int64_t inter = ceil_div(c.intermediate_size, t);
      elements += 3 * h * inter;
      if (c.mlp_bias) elements += 2 * inter + h;
      continue;
    }
    const MoeConfig& m = c.moe;
    elements += m.num_experts * h + m.num_experts / expert_parallel * 3 * h *
                                        ceil_div(m.expert_intermediate_size, t / expert_parallel);
    if (m.shared_expert_intermediate_size > 0) {
      elements += 3 * h * ceil_div(m.shared_expert_intermediate_size, t) + h;
    }
  }
  const int64_t vocab_shard = ceil_div(c.vocab_size, t) * h;
  if (layout.has_embedding || (layout.has_head && c.tie_word_embeddings)) elements += vocab_shard;
  if (layout.has_head) {
    norm_elements += h;
    if (!c.tie_word_embeddings) elements += vocab_shard;
  }
  return elements * weight_bytes + norm_elements * norm_bytes;
}

}  // namespace weft
