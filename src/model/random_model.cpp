#include "model/random_model.h"

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "model/safetensors.h"
#include "nlohmann/json.hpp"

namespace weft {
namespace {

// Fills a tensor with uniform values of standard deviation `stddev` around `mean`.
Tensor random_tensor(Shape shape, DType dtype, float mean, float stddev, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(dtype, shape);
  const float half_width = stddev * std::sqrt(3.0f);
  std::uniform_real_distribution<float> dist(mean - half_width, mean + half_width);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float v = dist(rng);
    switch (dtype) {
      case DType::kF32: t.data_as<float>()[i] = v; break;
      case DType::kBF16: t.data_as<uint16_t>()[i] = float_to_bf16(v); break;
      default: t.data_as<uint16_t>()[i] = float_to_f16(v); break;
    }
  }
  return t;
}

const char* torch_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
    default: return "float32";
  }
}

}  // namespace

namespace {

int64_t parameters(const RandomModelSpec& spec, int64_t experts_read) {
  const int64_t h = spec.hidden_size, kv = spec.num_kv_heads * spec.head_dim();
  const int64_t mlp = 3 * h * spec.intermediate_size;
  const int64_t feed_forward =
      spec.num_experts > 0 ? spec.num_experts * h + experts_read * mlp : mlp;
  const int64_t per_layer = h * (h * 2 + kv * 2) + feed_forward + 2 * h;
  return spec.vocab_size * h * (spec.tie_word_embeddings ? 1 : 2) + spec.num_layers * per_layer + h;
}

}  // namespace

int64_t RandomModelSpec::num_parameters() const { return parameters(*this, num_experts); }
int64_t RandomModelSpec::active_parameters() const {
  return parameters(*this, num_experts > 0 ? experts_per_token : 0);
}

absl::Status write_random_model(const std::filesystem::path& dir, const RandomModelSpec& spec) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  std::mt19937_64 rng(spec.seed);
  const int64_t h = spec.hidden_size, d = spec.head_dim();
  const float proj_std = 1.0f / std::sqrt(static_cast<float>(h));
  std::map<std::string, Tensor> tensors;
  tensors["model.embed_tokens.weight"] = random_tensor(Shape{spec.vocab_size, h}, spec.dtype, 0, 1.0f, rng);
  for (int64_t l = 0; l < spec.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    tensors[p + "input_layernorm.weight"] = random_tensor(Shape{h}, spec.dtype, 1, 0.05f, rng);
    tensors[p + "post_attention_layernorm.weight"] = random_tensor(Shape{h}, spec.dtype, 1, 0.05f, rng);
    tensors[p + "self_attn.q_proj.weight"] = random_tensor(Shape{spec.num_heads * d, h}, spec.dtype, 0, proj_std, rng);
    tensors[p + "self_attn.k_proj.weight"] = random_tensor(Shape{spec.num_kv_heads * d, h}, spec.dtype, 0, proj_std, rng);
    tensors[p + "self_attn.v_proj.weight"] = random_tensor(Shape{spec.num_kv_heads * d, h}, spec.dtype, 0, proj_std, rng);
    tensors[p + "self_attn.o_proj.weight"] = random_tensor(Shape{h, spec.num_heads * d}, spec.dtype, 0, proj_std, rng);
    const float down_std = 1.0f / std::sqrt(static_cast<float>(spec.intermediate_size));
    const auto add_mlp = [&](const std::string& gate, const std::string& up, const std::string& down) {
      tensors[gate] = random_tensor(Shape{spec.intermediate_size, h}, spec.dtype, 0, proj_std, rng);
      tensors[up] = random_tensor(Shape{spec.intermediate_size, h}, spec.dtype, 0, proj_std, rng);
      tensors[down] = random_tensor(Shape{h, spec.intermediate_size}, spec.dtype, 0, down_std, rng);
    };
    if (spec.num_experts == 0) {
      add_mlp(p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight");
      continue;
    }
    const std::string moe = p + "block_sparse_moe.";
    tensors[moe + "gate.weight"] = random_tensor(Shape{spec.num_experts, h}, spec.dtype, 0, proj_std, rng);
    for (int64_t e = 0; e < spec.num_experts; ++e) {
      const std::string expert = absl::StrCat(moe, "experts.", e, ".");
      add_mlp(expert + "w1.weight", expert + "w3.weight", expert + "w2.weight");
    }
  }
  tensors["model.norm.weight"] = random_tensor(Shape{h}, spec.dtype, 1, 0.05f, rng);
  if (!spec.tie_word_embeddings) {
    tensors["lm_head.weight"] = random_tensor(Shape{spec.vocab_size, h}, spec.dtype, 0, proj_std, rng);
  }
  WEFT_RETURN_IF_ERROR(write_safetensors(dir / "model.safetensors", tensors));

  nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"vocab_size", spec.vocab_size},
      {"hidden_size", h},
      {"intermediate_size", spec.intermediate_size},
      {"num_hidden_layers", spec.num_layers},
      {"num_attention_heads", spec.num_heads},
      {"num_key_value_heads", spec.num_kv_heads},
      {"max_position_embeddings", spec.max_position_embeddings},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"tie_word_embeddings", spec.tie_word_embeddings},
      {"torch_dtype", torch_dtype_name(spec.dtype)},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
  };
  if (spec.num_experts > 0) {
    config["architectures"] = {"MixtralForCausalLM"};
    config["model_type"] = "mixtral";
    config["num_local_experts"] = spec.num_experts;
    config["num_experts_per_tok"] = spec.experts_per_token;
    config["sliding_window"] = nullptr;
  }
  std::ofstream(dir / "config.json") << config.dump(2) << "\n";
  std::ofstream(dir / "generation_config.json")
      << nlohmann::json{{"bos_token_id", 1}, {"eos_token_id", 2}}.dump(2) << "\n";
  return absl::OkStatus();
}

}  // namespace weft
