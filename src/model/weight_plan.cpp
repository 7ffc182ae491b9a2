#include "model/weight_plan.h"

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

namespace {

// planned_weight_bytes; `misfit` (may be null) gets the first linear weight whose shard columns
// fit no layout of the quantization.
int64_t plan(const ModelConfig& c, int tp, int expert_parallel, const StageLayout& layout,
             WeightQuantization quantization, absl::Status* misfit) {
  const int64_t t = tp, d = c.head_dim, h = c.hidden_size;
  const int64_t q = c.num_attention_heads / t * d;
  const int64_t kv = (c.num_key_value_heads >= t ? c.num_key_value_heads / t : 1) * d;
  const int64_t dtype_bytes = static_cast<int64_t>(dtype_size(c.torch_dtype));
  const int64_t norm_bytes = c.norm_weight_plus_one ? 4 : dtype_bytes;
  // A linear weight of `rows` output rows by `cols` inputs, as this rank holds it.
  const auto linear = [&](int64_t rows, int64_t cols) {
    if (misfit != nullptr && misfit->ok() && quantization != WeightQuantization::kNone &&
        quantization != WeightQuantization::kInt8) {
      const absl::StatusOr<QuantizedLayout> fits = quantized_layout(quantization, cols);
      if (!fits.ok()) *misfit = fits.status();
    }
    return quantized_weight_bytes(quantization, rows, cols, dtype_bytes);
  };

  int64_t bytes = 0, other = 0, norm_elements = 0;  // other: elements kept in the dtype
  for (int i = layout.first_layer; i < layout.end_layer; ++i) {
    bytes += linear(q + 2 * kv, h) + linear(h, q);
    if (c.attention_bias) other += q + 2 * kv;
    if (c.o_proj_bias) other += h;
    norm_elements += (c.sandwich_norms ? 4 : 2) * h + (c.qk_norm ? 2 * d : 0);
    if (!c.moe.is_sparse(i)) {
      const int64_t inter = ceil_div(c.intermediate_size, t);
      bytes += linear(2 * inter, h) + linear(h, inter);
      if (c.mlp_bias) other += 2 * inter + h;
      continue;
    }
    const MoeConfig& m = c.moe;
    const int64_t expert_inter = ceil_div(m.expert_intermediate_size, t / expert_parallel);
    other += m.num_experts * h;  // the router
    bytes += m.num_experts / expert_parallel *
             (linear(2 * expert_inter, h) + linear(h, expert_inter));
    if (m.shared_expert_intermediate_size > 0) {
      const int64_t shared = ceil_div(m.shared_expert_intermediate_size, t);
      bytes += linear(2 * shared, h) + linear(h, shared);
      other += h;  // shared_expert_gate
    }
  }
  const int64_t vocab_shard = ceil_div(c.vocab_size, t) * h;
  if (layout.has_embedding || (layout.has_head && c.tie_word_embeddings)) other += vocab_shard;
  if (layout.has_head) {
    norm_elements += h;
    if (!c.tie_word_embeddings) other += vocab_shard;
  }
  return bytes + other * dtype_bytes + norm_elements * norm_bytes;
}

}  // namespace

int64_t planned_weight_bytes(const ModelConfig& config, int tp, int expert_parallel,
                             const StageLayout& layout, WeightQuantization quantization) {
  return plan(config, tp, expert_parallel, layout, quantization, nullptr);
}

absl::StatusOr<int64_t> checked_planned_weight_bytes(const ModelConfig& config, int tp,
                                                     int expert_parallel, const StageLayout& layout,
                                                     WeightQuantization quantization) {
  absl::Status misfit;
  const int64_t bytes = plan(config, tp, expert_parallel, layout, quantization, &misfit);
  if (!misfit.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(misfit.message(), " (tensor parallelism of degree ",
                                                   tp, "): this layout cannot load"));
  }
  return bytes;
}

}  // namespace weft
