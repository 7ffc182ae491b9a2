// The parts of a Hugging Face model directory's config.json and generation_config.json that
// weft uses, validated on load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "model/checkpoint_quantization.h"

namespace weft {

// dynamic: transformers' dynamic NTK scaling, whose base grows with the sequence length past
// max_position_embeddings (model/rope.h: dynamic_ntk_inv_freq says which length a token uses).
enum class RopeScalingType { kDefault, kLinear, kLlama3, kLongRope, kYarn, kDynamic };

// The gate activation of the gated MLP: SiLU (SwiGLU; Llama family) or the tanh approximation of
// GELU (GeGLU; Gemma's gelu_pytorch_tanh).
enum class MlpActivation { kSilu, kGeluTanh };

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kDefault;
  double factor = 1.0;                              // linear, llama3, longrope, yarn, dynamic
  double low_freq_factor = 1.0;                     // llama3
  double high_freq_factor = 4.0;                    // llama3
  int64_t original_max_position_embeddings = 8192;  // llama3, longrope, yarn
  // yarn (transformers' _compute_yarn_parameters): the pairs whose wavelength fits the original
  // context fewer than beta_slow times are interpolated (divided by factor), those fitting more
  // than beta_fast times kept, a linear ramp between (bounds floored / ceiled when truncate);
  // cos and sin are multiplied by attention_factor (below).
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  // longrope (Phi3; "su" and "yarn" are its old names there): per rotary pair, the divisor of the
  // default inverse frequency while a sequence is within original_max_position_embeddings
  // (short) and past it (long); rotary_dim / 2 entries each. `factor` is the configured one, or
  // max_position_embeddings / original_max_position_embeddings; attention_factor the configured
  // one, or sqrt(1 + ln(factor) / ln(original)) when factor > 1, else 1 (transformers'
  // _compute_longrope_parameters). See model/rope.h for which set a token uses. yarn: the
  // configured attention_factor, else mscale(factor, mscale) / mscale(factor, mscale_all_dim)
  // when both are set, else mscale(factor) = 0.1 * ln(factor) + 1 (1 when factor <= 1).
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  double attention_factor = 1.0;
};

// Mixture-of-experts feed-forward blocks (Mixtral, Qwen2-MoE, Qwen3-MoE). A sparse layer routes
// each token through `experts_per_token` of `num_experts` SwiGLU experts: softmax over the router
// logits in F32, top-k, the chosen probabilities renormalised to sum 1 when normalize_topk, the
// experts' outputs summed with those weights; Qwen2-MoE adds a shared expert gated per token by
// sigmoid(shared_expert_gate . x). Dense layers keep the ordinary MLP of intermediate_size.
struct MoeConfig {
  enum class Naming {
    kMixtral,  // block_sparse_moe.gate, block_sparse_moe.experts.N.{w1 (gate), w3 (up), w2 (down)}
    kQwen,     // mlp.gate, mlp.experts.N.{gate,up,down}_proj (+ mlp.shared_expert[_gate])
  };
  int64_t num_experts = 0;  // 0: a dense model
  int64_t experts_per_token = 0;
  int64_t expert_intermediate_size = 0;
  bool normalize_topk = false;
  int64_t shared_expert_intermediate_size = 0;  // 0: no shared expert
  Naming naming = Naming::kQwen;
  // Per layer: true when the layer's feed-forward block is sparse (Qwen: not in mlp_only_layers
  // and (i + 1) % decoder_sparse_step == 0; Mixtral: every layer).
  std::vector<bool> sparse_layers;

  bool enabled() const { return num_experts > 0; }
  bool is_sparse(int64_t layer) const {
    return enabled() && sparse_layers[static_cast<size_t>(layer)];
  }
};

struct ModelConfig {
  std::string architecture;  // "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                             // "Qwen3ForCausalLM", "Phi3ForCausalLM", "MixtralForCausalLM",
                             // "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "Gemma2ForCausalLM",
                             // "Gemma3ForCausalLM"
  std::string model_type;    // "llama", "mistral", "qwen2", "qwen3", "phi3", "mixtral",
                             // "qwen2_moe", "qwen3_moe", "gemma2", "gemma3_text"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // see the defaults below
  int64_t head_dim = 0;             // explicit, or hidden_size / num_attention_heads
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  // Leading dimensions of each head that RoPE rotates (rotate_half pairs i and i + rotary_dim/2);
  // the rest pass through. int(head_dim * partial_rotary_factor), even; head_dim except for
  // Phi3 with partial_rotary_factor < 1 (Phi-4-mini: 0.75).
  int64_t rotary_dim = 0;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (Qwen2 always; Llama/Qwen3 if attention_bias)
  bool o_proj_bias = false;     // o_proj bias (Llama/Qwen3 if attention_bias; never Qwen2/Mistral)
  bool mlp_bias = false;        // gate/up/down biases (Llama mlp_bias only)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  // Checkpoint layout (Phi3): one self_attn.qkv_proj of [q; k; v] rows instead of
  // q_proj/k_proj/v_proj, and one mlp.gate_up_proj of [gate; up] rows instead of
  // gate_proj/up_proj. Each TP rank still loads only its head and intermediate slices.
  bool fused_qkv_proj = false;
  bool fused_gate_up_proj = false;
  // The config's window as transformers resolves it (Qwen2/3: only with use_sliding_window).
  std::optional<int64_t> sliding_window;
  // Per layer: 0 for full causal attention, else W: a query at position p sees keys (p - W, p].
  // Mistral and Phi3: every layer takes sliding_window; Qwen2/3: the layers `layer_types` marks
  // "sliding_attention" (derived, when absent, as transformers does: layers >= max_window_layers
  // when use_sliding_window); Llama: none.
  std::vector<int64_t> layer_window;
  MoeConfig moe;
  DType torch_dtype = DType::kF32;        // dtype the checkpoint declares
  // quantization_config: how the checkpoint stores its linear weights (none: dense).
  CheckpointQuantization checkpoint_quantization;
  std::vector<int64_t> eos_token_ids;     // from config.json (may be empty)
  std::optional<int64_t> bos_token_id;

  // Gemma 2 / Gemma 3 (parsed in model/gemma_config.cpp; the defaults below are everyone else's).
  // Every RMSNorm scales by (1 + weight), in F32, instead of weight.
  bool norm_weight_plus_one = false;
  // post_attention_layernorm normalises the attention output before its residual add, and
  // pre_feedforward_layernorm / post_feedforward_layernorm sit before and after the MLP (its
  // output normalised before its residual add); without it, post_attention_layernorm is the norm
  // before the MLP (Llama).
  bool sandwich_norms = false;
  MlpActivation mlp_activation = MlpActivation::kSilu;
  // The first stage multiplies the token embeddings by this (Gemma: sqrt(hidden_size) rounded to
  // torch_dtype, as transformers casts it to the embedding weights' dtype).
  float embedding_multiplier = 1.0f;
  // Attention scores are q.k * query_pre_attn_scalar^-0.5 (Gemma); unset: head_dim^-0.5.
  std::optional<int64_t> query_pre_attn_scalar;
  // cap * tanh(x / cap) on the attention scores before the softmax, and on the LM-head logits.
  std::optional<double> attn_logit_softcapping;
  std::optional<double> final_logit_softcapping;
  // Gemma 3: the RoPE of the sliding-window layers (rope_parameters.sliding_attention; legacy
  // rope_local_base_freq), while the full-attention layers use rope_theta / rope_scaling above.
  // Unset: every layer uses rope_theta / rope_scaling. Never longrope or partial rotary.
  struct LayerRope {
    double rope_theta = 10000.0;
    RopeScaling rope_scaling;
  };
  std::optional<LayerRope> sliding_rope;
};

// Parses config.json text. `source` names the file in errors. Errors name the field and what was
// expected: malformed JSON, unsupported architecture (listing the supported ones), missing or
// non-positive sizes, a field of the wrong JSON type, num_attention_heads not a multiple of
// num_key_value_heads, hidden_size not divisible by heads without head_dim, unknown rope type.
//
// Defaults mirror transformers 5.x when a key is absent: num_key_value_heads = heads for Llama
// and Phi3 and the class default otherwise (Mistral and Mixtral 8, Qwen2/Qwen3 32, Qwen2-MoE 16,
// Qwen3-MoE 4; null = heads); head_dim = hidden_size / heads (Qwen3: 128, its class default; null
// means hidden_size / heads); tie_word_embeddings false; rms_norm_eps 1e-6 (Phi3 and Mixtral
// 1e-5); rope_theta 10000 (Mixtral 1e6); Mistral sliding_window 4096, Qwen2/3 and the Qwen MoEs
// sliding_window only when use_sliding_window, max_window_layers 28 (Qwen2-MoE: the even layers
// below it; Qwen3-MoE: every layer), Phi3 and Mixtral none; Qwen2-MoE qkv_bias true; Phi3 bos 1
// and eos 32000, Mixtral bos 1 and eos 2. The experts: model/moe_config.h. A window larger than max_position_embeddings on a layer
// that uses it (except Phi3, whose published configs ship 262144 over 131072 positions), a
// `layer_types` entry other than full_attention / sliding_attention or of the wrong length, and a
// sliding layer without a window are errors naming the field. RoPE parameters are read from
// `rope_parameters` (transformers >= 5 writes rope_theta inside it) or from the legacy
// `rope_scaling` + top-level `rope_theta`; "type" is accepted for "rope_type".
// linear, dynamic, llama3 and yarn need a positive factor (dynamic: >= 1);
// llama3 needs low_freq_factor < high_freq_factor; original_max_position_embeddings
// defaults to max_position_embeddings. Phi3 accepts default and longrope (su, yarn: aliases, as
// in Phi3Config) and refuses other types; longrope needs short_factor and long_factor of
// rotary_dim / 2 numbers, and takes original_max_position_embeddings from the top-level key
// (class default 4096), which Phi3Config puts over the one inside rope_parameters.
// partial_rotary_factor (inside rope_parameters, else top-level, else 1) must be in (0, 1] and
// give an even rotary_dim >= 2; any other value than 1 is refused for the other architectures,
// whose transformers modeling code rotates the whole head.
// Gemma2ForCausalLM / Gemma3ForCausalLM: num_key_value_heads 4, head_dim 256 and tied embeddings
// by default, and their own fields as model/gemma_config.h describes.
absl::StatusOr<ModelConfig> parse_model_config(const std::string& json_text,
                                               const std::string& source = "config.json");
absl::StatusOr<ModelConfig> load_model_config(const std::filesystem::path& model_dir);

// How far back any layer attends: the largest layer window when every layer has one (KV older
// than that is never read again and its blocks can be freed), 0 when some layer attends over the
// whole context.
int64_t kv_window(const ModelConfig& config);

// The sequence length weft allows when --max-model-len is not given: max_position_embeddings,
// times the factor for dynamic NTK RoPE, which exists to run past it (as vLLM derives it).
int64_t default_max_model_len(const ModelConfig& config);

// Prompts longer than this many tokens have KV that depends on the prompt's length, not only on
// its tokens (dynamic NTK RoPE: max_position_embeddings; LongRoPE:
// original_max_position_embeddings; model/rope.h), so no other sequence may share it through
// the prefix cache. 0: KV depends on the tokens alone.
int64_t prompt_dependent_kv_above(const ModelConfig& config);

struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> pad_token_id;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> min_p;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> max_new_tokens;
  bool do_sample = false;
};

absl::StatusOr<GenerationConfig> parse_generation_config(
    const std::string& json_text, const std::string& source = "generation_config.json");
// A missing generation_config.json is not an error: returns defaults with the eos ids of config.
absl::StatusOr<GenerationConfig> load_generation_config(const std::filesystem::path& model_dir,
                                                        const ModelConfig& config);

}  // namespace weft
