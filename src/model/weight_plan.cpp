#include "model/weight_plan.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace weft {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

namespace {

// planned_weight_bytes; `misfit` (may be null) gets the first linear weight whose shard columns
// fit no layout of the quantization.
int64_t plan(const ModelConfig& c, int tp, int expert_parallel, const StageLayout& layout,
             WeightQuantization quantization, bool quantize_lm_head, absl::Status* misfit) {
  const int64_t t = tp, d = c.head_dim, h = c.hidden_size;
  const int64_t q = c.num_attention_heads / t * d;
  const int64_t kv = (c.num_key_value_heads >= t ? c.num_key_value_heads / t : 1) * d;
  const int64_t dtype_bytes = static_cast<int64_t>(dtype_size(c.torch_dtype));
  const int64_t norm_bytes = c.norm_weight_plus_one ? 4 : dtype_bytes;
  const CheckpointQuantization& stored = c.checkpoint_quantization;
  // A linear weight of `rows` output rows by `cols` inputs of module `name` (full shape
  // [full_rows, full_cols]), as this rank holds it.
  const auto linear = [&](int64_t rows, int64_t cols, const std::string& name, int64_t full_rows,
                          int64_t full_cols) -> int64_t {
    if (stored.enabled()) {
      if (!stored.quantizes(name, full_rows, full_cols)) return rows * cols * dtype_bytes;
      const CheckpointQuantization& scheme = stored.scheme_for(name);
      const DType held = scheme.held_dtype(full_cols);
      const int64_t group = is_block_quantized(held) ? dtype_block_elems(held) : 0;
      if (misfit != nullptr && misfit->ok() && group > 0 && cols % group != 0) {
        *misfit = absl::InvalidArgumentError(absl::StrCat(
            "tensor '", name, ".weight': this rank's shard has ", cols, " input columns, which ",
            held == DType::kF8B64 ? "weft's fp8 blocks (f8b64) of " : "the checkpoint's int4 groups of ",
            group, " do not divide (a ", held == DType::kF8B64 ? "block" : "group",
            " may not cross a shard edge)"));
      }
      return scheme.shard_bytes(rows, cols, full_cols);
    }
    if (misfit != nullptr && misfit->ok() && quantization != WeightQuantization::kNone &&
        quantization != WeightQuantization::kInt8) {
      const absl::StatusOr<QuantizedLayout> fits = quantized_layout(quantization, cols);
      if (!fits.ok()) *misfit = fits.status();
    }
    return quantized_weight_bytes(quantization, rows, cols, dtype_bytes);
  };
  // Column-parallel parts fused into one weight of `cols` inputs: {rows, module, full rows}. The
  // layer holds them in one dtype, F32 when the checkpoint dequantizes some part at load, or
  // holds some part F8B64 and keeps another dense (native FP8: transformers leaves shapes the
  // blocks do not tile dense).
  struct Part {
    int64_t rows;
    std::string name;
    int64_t full_rows;
  };
  const auto fused = [&](const std::vector<Part>& parts, int64_t cols, int64_t full_cols) {
    bool upcast = false;
    if (stored.enabled()) {
      bool any_f32 = false, any_f8 = false, any_dense = false;
      for (const Part& p : parts) {
        const bool quantized = stored.quantizes(p.name, p.full_rows, full_cols);
        const DType held = stored.scheme_for(p.name).held_dtype(full_cols);
        any_f32 = any_f32 || (quantized && held == DType::kF32);
        any_f8 = any_f8 || (quantized && held == DType::kF8B64);
        any_dense = any_dense || !quantized;
      }
      upcast = any_f32 || (any_f8 && any_dense);
    }
    int64_t sum = 0;
    for (const Part& p : parts) {
      sum += upcast ? p.rows * cols * 4 : linear(p.rows, cols, p.name, p.full_rows, full_cols);
    }
    return sum;
  };
  // A gated MLP's three projections (gate and up: `inter` rows each of `full_inter`).
  const auto mlp = [&](int64_t inter, int64_t full_inter, const std::string& gate,
                       const std::string& up, const std::string& down,
                       const std::string& fused_gate_up) {
    const int64_t gate_up = fused_gate_up.empty()
                                ? fused({{inter, gate, full_inter}, {inter, up, full_inter}}, h, h)
                                : linear(2 * inter, h, fused_gate_up, 2 * full_inter, h);
    return gate_up + linear(h, inter, down, h, full_inter);
  };
  const int64_t full_q = c.num_attention_heads * d, full_kv = c.num_key_value_heads * d;

  int64_t bytes = 0, other = 0, norm_elements = 0;  // other: elements kept in the dtype
  for (int i = layout.first_layer; i < layout.end_layer; ++i) {
    const std::string attn = absl::StrCat("model.layers.", i, ".self_attn.");
    bytes += c.fused_qkv_proj
                 ? linear(q + 2 * kv, h, attn + "qkv_proj", full_q + 2 * full_kv, h)
                 : fused({{q, attn + "q_proj", full_q},
                          {kv, attn + "k_proj", full_kv},
                          {kv, attn + "v_proj", full_kv}},
                         h, h);
    bytes += linear(h, q, attn + "o_proj", h, full_q);
    if (c.attention_bias) other += q + 2 * kv;
    if (c.o_proj_bias) other += h;
    norm_elements += (c.sandwich_norms ? 4 : 2) * h + (c.qk_norm ? 2 * d : 0);
    const std::string ffn = absl::StrCat("model.layers.", i, ".mlp.");
    if (!c.moe.is_sparse(i)) {
      const int64_t inter = ceil_div(c.intermediate_size, t);
      bytes += mlp(inter, c.intermediate_size, ffn + "gate_proj", ffn + "up_proj", ffn + "down_proj",
                   c.fused_gate_up_proj ? ffn + "gate_up_proj" : "");
      if (c.mlp_bias) other += 2 * inter + h;
      continue;
    }
    const MoeConfig& m = c.moe;
    const bool mixtral = m.naming == MoeConfig::Naming::kMixtral;
    const std::string moe = absl::StrCat("model.layers.", i, mixtral ? ".block_sparse_moe." : ".mlp.");
    const int64_t expert_inter = ceil_div(m.expert_intermediate_size, t / expert_parallel);
    other += m.num_experts * h;  // the router
    const int64_t per_group = m.num_experts / expert_parallel;
    for (int64_t e = 0; e < per_group; ++e) {
      // Every expert group holds as many bytes; count the first group's experts by name.
      const std::string x = absl::StrCat(moe, "experts.", e, ".");
      const int64_t full = m.expert_intermediate_size;
      bytes += mixtral ? mlp(expert_inter, full, x + "w1", x + "w3", x + "w2", "")
                       : mlp(expert_inter, full, x + "gate_proj", x + "up_proj", x + "down_proj", "");
    }
    if (m.shared_expert_intermediate_size > 0) {
      const int64_t shared = ceil_div(m.shared_expert_intermediate_size, t);
      const std::string x = moe + "shared_expert.";
      bytes += mlp(shared, m.shared_expert_intermediate_size, x + "gate_proj", x + "up_proj",
                   x + "down_proj", "");
      other += h;  // shared_expert_gate
    }
  }
  const int64_t vocab_rows = ceil_div(c.vocab_size, t), vocab_shard = vocab_rows * h;
  if (layout.has_embedding || (layout.has_head && c.tie_word_embeddings)) other += vocab_shard;
  if (layout.has_head) {
    norm_elements += h;
    if (quantize_lm_head) {
      bytes += vocab_shard + vocab_rows * 4;  // int8 rows and their F32 scales (a tied head's own copy)
    } else if (!c.tie_word_embeddings) {
      other += vocab_shard;
    }
  }
  return bytes + other * dtype_bytes + norm_elements * norm_bytes;
}

}  // namespace

int64_t planned_weight_bytes(const ModelConfig& config, int tp, int expert_parallel,
                             const StageLayout& layout, WeightQuantization quantization,
                             bool quantize_lm_head) {
  return plan(config, tp, expert_parallel, layout, quantization, quantize_lm_head, nullptr);
}

absl::StatusOr<int64_t> checked_planned_weight_bytes(const ModelConfig& config, int tp,
                                                     int expert_parallel, const StageLayout& layout,
                                                     WeightQuantization quantization,
                                                     bool quantize_lm_head) {
  if (config.checkpoint_quantization.enabled() && quantization != WeightQuantization::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--quantize ", weight_quantization_name(quantization),
        ": the checkpoint is already quantized (config.json quantization_config: ",
        config.checkpoint_quantization.describe(), "); run it without --quantize"));
  }
  absl::Status misfit;
  const int64_t bytes = plan(config, tp, expert_parallel, layout, quantization, quantize_lm_head, &misfit);
  if (!misfit.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(misfit.message(), " (tensor parallelism of degree ",
                                                   tp, "): this layout cannot load"));
  }
  return bytes;
}

}  // namespace weft
