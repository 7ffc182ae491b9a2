// weft info: what weft sees in a model directory and on this machine.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cpu_features.h"
#include "launcher/command_specs.h"
#include "launcher/commands.h"
#include "model/model_config.h"

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

std::string rope_description(double theta, const RopeScaling& scaling) {
  std::string out = absl::StrCat("theta ", theta);
  if (scaling.type == RopeScalingType::kLinear) absl::StrAppend(&out, ", linear x", scaling.factor);
  if (scaling.type == RopeScalingType::kLlama3) absl::StrAppend(&out, ", llama3 x", scaling.factor);
  if (scaling.type == RopeScalingType::kLongRope) absl::StrAppend(&out, ", longrope");
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

}  // namespace

int run_info(const std::vector<std::string>& args) {
  auto parsed = parse_command(command_spec("info"), args, [](const absl::Status& status) {
    std::cerr << "weft info: " << status.message() << "\n";
    return 2;
  });
  if (const int* done = std::get_if<int>(&parsed)) return *done;
  const CliArgs* cli = &std::get<CliArgs>(parsed);
  std::cout << "cpu features: " << cpu_features().to_string() << "\n";
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
            << gemma_lines(c);
  return 0;
}

}  // namespace weft
