// weft info: what weft sees in a model directory and on this machine.
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cpu_features.h"
#include "kv/kv_disk_tier.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "model/gguf_file.h"
#include "model/model_config.h"
#include "model/model_files.h"
#include "model/model_identity.h"
#include "model/rope.h"
#include "model/stage_layout.h"
#include "model/weight_plan.h"

namespace weft {
namespace {

// "full causal" or e.g. "sliding window 4096 on layers 1-2 of 3 (full on the others)", and
// whether KV behind the window is freed (every layer windowed).
std::string attention_windows(const ModelConfig& c) {
  std::vector<int64_t> windowed;
  for (size_t i = 0; i < c.layer_window.size(); ++i) {
    if (c.layer_window[i] > 0) windowed.push_back(static_cast<int64_t>(i));
  }
  if (windowed.empty()) return "full causal on every layer";
  std::string out = absl::StrCat("sliding window ", c.layer_window[windowed[0]], " on ");
  if (windowed.size() == c.layer_window.size()) {
    absl::StrAppend(&out, "every layer (KV blocks behind it are freed)");
  } else {
    absl::StrAppend(&out, windowed.size(), " of ", c.layer_window.size(), " layers (",
                    absl::StrJoin(windowed, ","), "), full causal on the others");
  }
  return out;
}

// "none" or e.g. "8 per sparse layer, top-2 renormalised, intermediate 96; sparse layers 0,2 of 3".
std::string experts(const ModelConfig& c) {
  const MoeConfig& m = c.moe;
  if (!m.enabled()) return "none (dense)";
  std::vector<int64_t> sparse;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (m.is_sparse(i)) sparse.push_back(i);
  }
  std::string out = absl::StrCat(m.num_experts, " per sparse layer, top-", m.experts_per_token,
                                 m.normalize_topk ? " renormalised" : " not renormalised",
                                 ", expert intermediate ", m.expert_intermediate_size);
  if (m.shared_expert_intermediate_size > 0) {
    absl::StrAppend(&out, ", shared expert ", m.shared_expert_intermediate_size);
  }
  if (static_cast<int64_t>(sparse.size()) == c.num_hidden_layers) {
    absl::StrAppend(&out, "; every layer sparse");
  } else {
    absl::StrAppend(&out, "; sparse layers ", absl::StrJoin(sparse, ","), " of ", c.num_hidden_layers);
  }
  return out;
}

std::string rope_description(double theta, const RopeScaling& scaling) {
  std::string out = absl::StrCat("theta ", theta);
  if (scaling.type == RopeScalingType::kLinear) absl::StrAppend(&out, ", linear x", scaling.factor);
  if (scaling.type == RopeScalingType::kLlama3) absl::StrAppend(&out, ", llama3 x", scaling.factor);
  if (scaling.type == RopeScalingType::kLongRope) absl::StrAppend(&out, ", longrope");
  if (scaling.type == RopeScalingType::kYarn) absl::StrAppend(&out, ", yarn x", scaling.factor);
  if (scaling.type == RopeScalingType::kDynamic) absl::StrAppend(&out, ", dynamic NTK x", scaling.factor);
  return out;
}

// What Gemma 2 / 3 compute differently from the Llama layout; empty for the other families.
std::string gemma_lines(const ModelConfig& c) {
  if (!c.sandwich_norms) return "";
  std::string out = absl::StrCat(
      "norms: scale 1 + w; also on the attention and MLP outputs before each residual add\n",
      "mlp: ",
      c.mlp_activation == MlpActivation::kGeluTanh ? "GeGLU (gelu_pytorch_tanh)" : "SwiGLU",
      ", embeddings x ", c.embedding_multiplier, "\n");
  if (c.query_pre_attn_scalar) {
    absl::StrAppend(&out, "attention scale: query_pre_attn_scalar ", *c.query_pre_attn_scalar,
                    "^-0.5\n");
  }
  absl::StrAppend(&out, "soft-capping: attention ",
                  c.attn_logit_softcapping ? absl::StrCat(*c.attn_logit_softcapping) : "none",
                  ", final logits ",
                  c.final_logit_softcapping ? absl::StrCat(*c.final_logit_softcapping) : "none",
                  "\n");
  if (c.sliding_rope) {
    absl::StrAppend(&out, "rope: full-attention layers ",
                    rope_description(c.rope_theta, c.rope_scaling), "; sliding-window layers ",
                    rope_description(c.sliding_rope->rope_theta, c.sliding_rope->rope_scaling),
                    "\n");
  }
  return out;
}

// Weight elements of the whole model, and those one token's forward reads (a sparse layer's
// router, its top-k experts and its shared expert, not the other experts).
struct ParameterCounts {
  int64_t total = 0;
  int64_t active = 0;
};

ParameterCounts parameter_counts(const ModelConfig& c) {
  const int64_t h = c.hidden_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  ParameterCounts n;
  const int64_t embedding = c.vocab_size * h * (c.tie_word_embeddings ? 1 : 2) + h;
  n.total = n.active = embedding;
  const MoeConfig& m = c.moe;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const int64_t attention = 2 * h * q + 2 * h * kv + 2 * h;
    n.total += attention;
    n.active += attention;
    if (!m.is_sparse(i)) {
      n.total += 3 * h * c.intermediate_size;
      n.active += 3 * h * c.intermediate_size;
      continue;
    }
    const int64_t expert = 3 * h * m.expert_intermediate_size;
    const int64_t shared = m.shared_expert_intermediate_size > 0
                               ? 3 * h * m.shared_expert_intermediate_size + h
                               : 0;
    n.total += m.num_experts * h + m.num_experts * expert + shared;
    n.active += m.num_experts * h + m.experts_per_token * expert + shared;
  }
  return n;
}

// A GGUF file's tensors by dtype: its weights stay in the file's (mixed) block types, so the
// per-rank plan of model/weight_plan (one dtype for every weight) does not apply.
int print_gguf_tensors(const std::filesystem::path& path) {
  auto file = GgufFile::open(path);
  if (!file.ok()) {
    std::cerr << "weft info: " << file.status().message() << "\n";
    return 1;
  }
  std::map<std::string, std::pair<int64_t, uint64_t>> by_dtype;  // name -> tensors, bytes
  uint64_t total = 0;
  for (const auto& [name, info] : (*file)->tensors()) {
    auto& entry = by_dtype[dtype_name(info.dtype)];
    entry.first += 1;
    entry.second += info.bytes;
    total += info.bytes;
  }
  std::cout << "GGUF file: " << path.string() << " (version " << (*file)->version() << ")\n"
            << "weights: " << total << " bytes (" << total / 1048576.0 << " MiB) in "
            << (*file)->tensors().size() << " tensors:";
  for (const auto& [dtype, entry] : by_dtype) {
    std::cout << " " << dtype << " " << entry.first << " (" << entry.second << " bytes)";
  }
  std::cout << "\n";
  return 0;
}

// The disk KV tier directory's contents; with --model, which files are this model's.
int print_kv_disk_cache(const CliArgs& cli) {
  const std::string dir = *cli.get("kv-disk-cache");
  auto inv = inventory_kv_disk_cache(dir);
  if (!inv.ok()) {
    std::cerr << "weft info: " << inv.status().message() << "\n";
    return 1;
  }
  std::optional<uint64_t> mine;
  if (cli.has("model")) {
    auto identity = model_identity(*cli.get("model"));
    if (!identity.ok()) {
      std::cerr << "weft info: " << identity.status().message() << "\n";
      return 1;
    }
    mine = *identity;
  }
  int64_t files = 0, bytes = 0;
  for (const auto& [id, m] : inv->by_model) {
    files += m.files;
    bytes += m.bytes;
  }
  std::cout << "kv disk cache: " << dir << ": " << files << " block files, " << bytes << " bytes ("
            << bytes / 1048576.0 << " MiB), " << inv->by_model.size() << " model(s)"
            << (inv->locked ? ", in use by a running process" : "") << "\n";
  for (const auto& [id, m] : inv->by_model) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(id));
    std::cout << "  model " << hex << ": " << m.files << " files, " << m.bytes << " bytes"
              << (mine && *mine == id ? " (this model)" : "") << "\n";
  }
  if (inv->bad_headers > 0 || inv->temporary_files > 0) {
    std::cout << "  " << inv->bad_headers << " files with a bad header, " << inv->temporary_files
              << " unfinished temporary files (removed by the next process to open the directory)\n";
  }
  return 0;
}

}  // namespace

int run_info(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("info"), args, [](const absl::Status& status) {
    std::cerr << "weft info: " << status.message() << "\n";
    return 2;
  });
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs* cli = &std::get<CliArgs>(parsed);
  std::cout << "cpu features: " << cpu_features().to_string() << "\n";
  if (cli->has("kv-disk-cache")) {
    if (const int rc = print_kv_disk_cache(*cli); rc != 0) return rc;
  }
  if (!cli->has("model")) return 0;
  auto config = load_model_config(*cli->get("model"));
  if (!config.ok()) {
    std::cerr << "weft info: " << config.status().message() << "\n";
    return 1;
  }
  const ModelConfig& c = *config;
  std::cout << "architecture: " << c.architecture << "\n"
            << "layers: " << c.num_hidden_layers << ", hidden: " << c.hidden_size
            << ", intermediate: " << c.intermediate_size << "\n"
            << "heads: " << c.num_attention_heads << " (kv " << c.num_key_value_heads
            << "), head_dim: " << c.head_dim << "\n"
            << "vocab: " << c.vocab_size << ", max positions: " << c.max_position_embeddings
            << ", dtype: " << dtype_name(c.torch_dtype) << "\n"
            << "tied embeddings: " << (c.tie_word_embeddings ? "yes" : "no")
            << ", attention bias: " << (c.attention_bias ? "yes" : "no")
            << ", q/k norm: " << (c.qk_norm ? "yes" : "no") << "\n"
            << "attention: " << attention_windows(c) << "\n"
            << (c.sliding_rope ? "" : absl::StrCat("rope: ", rope_description(c.rope_theta, c.rope_scaling),
                                                   ", rotary dims ", rope_rotary_dim(c), "\n"))
            << "default max model len: " << default_max_model_len(c) << "\n"
            << "experts: " << experts(c) << "\n"
            << gemma_lines(c);
  if (c.checkpoint_quantization.enabled()) {
    std::cout << "checkpoint quantization: " << c.checkpoint_quantization.describe() << "\n";
  }
  if (auto gguf = gguf_model_file(*cli->get("model"))) return print_gguf_tensors(*gguf);
  const ParameterCounts params = parameter_counts(c);
  std::cout << "parameters: " << params.total << " (per token: " << params.active
            << " read, biases and q/k norms not counted)\n";
  // What each rank holds resident (model/weight_plan.h): the fused and sliced copies replace
  // the mapped originals, so a rank's weights occupy this once.
  const auto tp = cli->get_int("tp", 1), pp = cli->get_int("pp", 1), ep = cli->get_int("ep", 1);
  if (!tp.ok() || !pp.ok() || !ep.ok() || *tp < 1 || *pp < 1 || *ep < 1 || *tp % *ep != 0) {
    std::cerr << "weft info: --tp, --pp, --ep: positive integers, --ep dividing --tp\n";
    return 2;
  }
  const auto quantization = parse_weight_quantization(cli->get_or("quantize", "none"));
  if (!quantization.ok()) {
    std::cerr << "weft info: " << quantization.status().message() << "\n";
    return 2;
  }
  const bool quantize_lm_head = cli->has("quantize-lm-head");
  for (int stage = 0; stage < *pp; ++stage) {
    auto layout = stage_layout(static_cast<int>(c.num_hidden_layers), static_cast<int>(*pp), stage);
    if (!layout.ok()) {
      std::cerr << "weft info: " << layout.status().message() << "\n";
      return 1;
    }
    const absl::StatusOr<int64_t> planned = checked_planned_weight_bytes(
        c, static_cast<int>(*tp), static_cast<int>(*ep), *layout, *quantization, quantize_lm_head);
    if (!planned.ok()) {
      std::cerr << "weft info: " << planned.status().message() << "\n";
      return 1;
    }
    const int64_t bytes = *planned;
    std::cout << "weights per rank";
    if (*pp > 1) std::cout << ", stage " << stage << " (layers " << layout->first_layer << "-" << layout->end_layer - 1 << ")";
    std::cout << ": " << bytes << " bytes (" << bytes / 1048576.0 << " MiB; tp " << *tp
              << (*ep > 1 ? absl::StrCat(", ep ", *ep) : "")
              << (*quantization != WeightQuantization::kNone
                      ? absl::StrCat(", ", weight_quantization_name(*quantization))
                      : "")
              << (quantize_lm_head ? ", LM head int8" : "") << ")\n";
  }
  return 0;
}

}  // namespace weft
