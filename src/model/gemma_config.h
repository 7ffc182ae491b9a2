// The Gemma 2 / Gemma 3 (text) parts of config.json, as transformers 5's Gemma2Config and
// Gemma3TextConfig resolve them. parse_model_config (model/model_config.h) reads the fields every
// architecture shares and calls parse_gemma_config for model_type gemma2 / gemma3_text.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "model/json_reader.h"
#include "model/model_config.h"
#include "nlohmann/json.hpp"

namespace weft {

// model_type "gemma2" (Gemma2ForCausalLM) or "gemma3_text" (Gemma3ForCausalLM).
bool is_gemma(std::string_view model_type);

// Class defaults the shared parser applies to absent keys (both classes): num_key_value_heads 4,
// head_dim 256, tie_word_embeddings true.
inline constexpr int64_t kGemmaNumKeyValueHeads = 4;
inline constexpr int64_t kGemmaHeadDim = 256;

// Reads the Gemma-specific fields into `config`, whose shared fields (sizes, heads, head_dim,
// rms_norm_eps, dtype, token ids; Gemma 2's RoPE) are already parsed. Sets the flags the decoder
// reads: norm_weight_plus_one, sandwich_norms, mlp_activation (GeGLU), embedding_multiplier
// (sqrt(hidden_size) rounded to torch_dtype), query_pre_attn_scalar (class default 256),
// the soft-capping values, qk_norm (Gemma 3), layer_window and sliding_rope (Gemma 3).
//
// Class defaults for absent keys: Gemma 2 attn_logit_softcapping 50 and final_logit_softcapping
// 30 (null: none); Gemma 3 neither; sliding_window 4096 (null: none); layer_types derived as
// transformers does (Gemma 2: layers 0, 2, 4, ... sliding; Gemma 3: every
// sliding_window_pattern-th layer (class default 6) full, the others sliding); eos 1, bos 2.
// Gemma 3's RoPE: rope_parameters {"full_attention": {...}, "sliding_attention": {...}}, or the
// legacy rope_theta (class default 1e6) + rope_scaling (applied to full-attention layers only)
// + rope_local_base_freq (1e4); rope_scaling's keys are written over the full_attention entry.
//
// Errors name the field: hidden_activation (or hidden_act, which transformers does not read for
// Gemma, when it differs) other than gelu_pytorch_tanh; use_bidirectional_attention true;
// Gemma 3 attn_logit_softcapping set (Gemma3Attention never applies it); a non-positive
// soft-cap, query_pre_attn_scalar or window; a sliding layer without a window; layer_types of
// the wrong length or with other values; null num_key_value_heads / head_dim and hidden_size not
// divisible by num_attention_heads (both refused by transformers' strict config classes);
// Gemma 3 rope_parameters that are not per layer type (transformers would ignore them), a rope
// type other than default / linear, a "factor" or "type" that transformers would not apply
// (rope_scaling {"type": "linear"} without rope_type leaves the type default), and
// partial_rotary_factor other than 1.
absl::Status parse_gemma_config(const JsonFields& fields, const nlohmann::json& root,
                                ModelConfig& config);

}  // namespace weft
