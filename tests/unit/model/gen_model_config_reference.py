#!/usr/bin/env python3
"""Dumps what Hugging Face transformers makes of a set of config.json files: the resolved fields
(head_dim, defaults, biases, tying, fused Phi3 projections, rotary dims) and the RoPE inverse
frequencies and attention scaling of the model's rotary embedding module (LongRoPE: both sets). model_loading_test parses the same config.json texts with weft and compares.

Run from the repository root (needs torch + transformers; the output is committed):
    python3 tests/unit/model/gen_model_config_reference.py
"""
import json
import os
import tempfile

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model_config_reference.json")

BASE = {
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
}

ABSENT = "<absent>"  # an override that deletes the BASE key

CASES = {
    "llama_default": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_key_value_heads": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "eos_token_id": 2, "bos_token_id": 1,
    },
    "llama_llama3_rope_parameters": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 256, "num_attention_heads": 2, "num_key_value_heads": 1,
        "max_position_embeddings": 131072,
        "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192},
        "eos_token_id": [128001, 128008, 128009], "bos_token_id": 128000,
        "torch_dtype": "bfloat16", "vocab_size": 128256,
    },
    "llama_llama3_legacy_rope_scaling": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 128, "num_attention_heads": 2, "max_position_embeddings": 16384,
        "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    },
    "llama_linear_legacy_type_key": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 4.0},
        "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True,
    },
    "mistral_explicit_head_dim": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_key_value_heads": 2,
        "head_dim": 32, "rope_theta": 1000000.0, "dtype": "bfloat16",
    },
    "mistral_sliding_window_null": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral",
        "sliding_window": None, "head_dim": None, "num_attention_heads": 8,
    },  # num_key_value_heads absent: MistralConfig's default of 8
    "qwen2_defaults": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 2,
        "rope_theta": 1000000.0, "use_sliding_window": False, "sliding_window": 4096,
        "rope_scaling": None,
    },
    "qwen3_head_dim_absent": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_key_value_heads": 2,
        "rope_theta": 1000000.0, "tie_word_embeddings": True,
    },
    "qwen3_explicit_head_dim_bias": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_key_value_heads": 1,
        "head_dim": 32, "attention_bias": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    "qwen3_kv_heads_null": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_key_value_heads": None,
        "head_dim": 16, "use_sliding_window": True, "sliding_window": 512,
    },
    "model_type_only": {
        "model_type": "llama", "rope_theta": 250000.0,
    },
    "mistral_window_absent": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_hidden_layers": 2,
        "num_key_value_heads": 2,
    },  # sliding_window absent: MistralConfig's default of 4096 on every layer
    "mistral_window_64": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_hidden_layers": 3,
        "num_key_value_heads": 1,
        "sliding_window": 64,
    },
    "qwen2_window_max_window_layers": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 2, "num_hidden_layers": 4,
        "use_sliding_window": True, "sliding_window": 128, "max_window_layers": 2,
    },
    "qwen2_window_layer_types": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 2, "num_hidden_layers": 3,
        "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 0,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    },
    "qwen2_window_unused": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 2, "num_hidden_layers": 2,
        "use_sliding_window": False, "sliding_window": 32, "max_window_layers": 0,
    },
    "qwen3_window_all_layers": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "num_key_value_heads": 2, "num_hidden_layers": 2,
        "head_dim": 16, "use_sliding_window": True, "sliding_window": 100, "max_window_layers": 0,
    },
    # Phi3: defaults (num_key_value_heads = heads, rms_norm_eps 1e-5, no window), legacy keys as
    # Phi-3-mini-4k ships them (rope_scaling null, sliding_window 2047 on every layer).
    "phi3_mini_4k_like": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "num_hidden_layers": 2,
        "rms_norm_eps": ABSENT, "rope_theta": 10000.0, "rope_scaling": None, "sliding_window": 2047,
        "original_max_position_embeddings": 4096,
    },
    "phi3_defaults": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "rms_norm_eps": ABSENT,
    },
    # Phi-3.5-mini's shape of config: longrope in legacy rope_scaling, 262144 window > 131072.
    "phi3_longrope_legacy": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "num_key_value_heads": 4,
        "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0, "sliding_window": 262144,
        "rope_scaling": {"type": "longrope",
                         "short_factor": [1.0, 1.02, 1.05, 1.1, 1.3, 1.6, 2.1, 2.7],
                         "long_factor": [1.08, 1.3, 2.0, 4.5, 9.0, 17.0, 30.0, 51.0]},
    },
    # Phi-4-mini's shape: top-level partial_rotary_factor 0.75, tied embeddings, GQA.
    "phi3_partial_longrope_tied": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "num_key_value_heads": 2,
        "hidden_size": 128, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_theta": 250000.0, "partial_rotary_factor": 0.75, "tie_word_embeddings": True,
        "sliding_window": 262144,
        "rope_scaling": {"type": "longrope",
                         "short_factor": [1.0, 1.1, 1.2, 1.4, 1.7, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0],
                         "long_factor": [1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 13.0, 18.0, 24.0, 31.0, 39.0, 48.0]},
    },
    # transformers 5 spelling: partial factor, factor and attention_factor inside
    # rope_parameters; the top-level original_max_position_embeddings wins over the inner one.
    "phi3_rope_parameters_factors": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "num_key_value_heads": 1,
        "max_position_embeddings": 8192, "original_max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "longrope", "rope_theta": 500000.0, "partial_rotary_factor": 0.5,
                            "original_max_position_embeddings": 1024, "factor": 3.0,
                            "short_factor": [1.0, 1.25, 1.5, 2.0], "long_factor": [2.0, 3.0, 5.0, 8.0]},
    },
    "phi3_attention_factor": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "max_position_embeddings": 8192,
        "original_max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "attention_factor": 1.5,
                            "short_factor": [1.0] * 8, "long_factor": [4.0] * 8},
    },
    # The old names Phi3Config maps to longrope ("su" loads in transformers 5 only with the
    # original length inside the dict, which the top-level key then overrides).
    "phi3_su_alias": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "max_position_embeddings": 16384,
        "original_max_position_embeddings": 1024,
        "rope_scaling": {"type": "su", "original_max_position_embeddings": 4096,
                         "short_factor": [1.0, 1.0, 1.1, 1.2, 1.5, 2.0, 2.5, 3.0],
                         "long_factor": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]},
    },
    "phi3_yarn_alias_partial_default_factor": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "max_position_embeddings": 1024,
        "original_max_position_embeddings": 2048, "partial_rotary_factor": 0.3,
        "rope_scaling": {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 2048,
                         "short_factor": [1.0, 1.5], "long_factor": [2.0, 2.5]},
    },  # head_dim 16 * 0.3 -> 4 rotary dims; factor 2 given although max / original = 0.5
    "phi3_default_partial_kv_null": {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "num_key_value_heads": None,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        "partial_rotary_factor": 0.25,
    },  # the factor inside rope_parameters wins over the top-level one
    # YaRN. Qwen2.5's long-context shape: factor 4 over an original 32768 (inside rope_scaling),
    # the default betas, mscale 0.1 ln(4) + 1.
    "qwen2_yarn_legacy": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "num_key_value_heads": 2,
        "max_position_embeddings": 131072, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        "hidden_size": 512, "num_attention_heads": 4,
    },
    # DeepSeek-style mscale / mscale_all_dim, custom betas, truncate false, and a top-level
    # original_max_position_embeddings winning over the inner one.
    "llama_yarn_mscale_no_truncate": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "num_attention_heads": 2, "original_max_position_embeddings": 2048,
        "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                            "beta_fast": 16, "beta_slow": 2, "mscale": 0.707, "mscale_all_dim": 1.0,
                            "truncate": False, "original_max_position_embeddings": 1024},
    },
    # An explicit attention_factor; no original length anywhere (max_position_embeddings).
    "mistral_yarn_attention_factor": {
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "num_key_value_heads": 2,
        "sliding_window": None,
        "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0,
                            "attention_factor": 1.25},
    },
    # Mixtures of experts. Mixtral's class defaults: 8 kv heads, rope_theta 1e6, eps 1e-5, no
    # window, 8 experts, top-2.
    "mixtral_defaults": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_attention_heads": 8,
        "rms_norm_eps": ABSENT,
    },
    "mixtral_window_top1": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_key_value_heads": 2,
        "sliding_window": 1024, "num_local_experts": 4, "num_experts_per_tok": 1,
        "rope_theta": 10000.0,
    },
    # Qwen2-MoE: 16 kv heads by default, qkv_bias true, decoder_sparse_step 2 with layer 3 dense,
    # the shared expert's default size.
    "qwen2_moe_defaults_sparse_step": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "num_hidden_layers": 4,
        "num_attention_heads": 16, "decoder_sparse_step": 2, "mlp_only_layers": [3],
        "num_experts": 6, "moe_intermediate_size": 32,
    },
    # Qwen2-MoE windows: the even layers below max_window_layers; qkv_bias false.
    "qwen2_moe_window_no_bias": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "num_hidden_layers": 4,
        "num_key_value_heads": 2, "use_sliding_window": True, "sliding_window": 512,
        "max_window_layers": 3, "qkv_bias": False, "num_experts": 4, "num_experts_per_tok": 2,
        "shared_expert_intermediate_size": 48, "norm_topk_prob": True,
    },
    # Qwen3-MoE: 4 kv heads and head_dim hidden / heads by default; the window on every layer.
    "qwen3_moe_defaults_window": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 2,
        "num_experts": 16, "num_experts_per_tok": 4, "norm_topk_prob": True,
        "use_sliding_window": True, "sliding_window": 256,
    },
    # The spelling save_pretrained writes (num_local_experts), mlp_only_layers, attention_bias.
    "qwen3_moe_local_experts_bias": {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "num_hidden_layers": 3,
        "num_key_value_heads": 2, "head_dim": 32, "num_local_experts": 6, "num_experts_per_tok": 2,
        "moe_intermediate_size": 40, "mlp_only_layers": [0, 2], "attention_bias": True,
    },
    # Gemma2Config's class defaults: num_key_value_heads 4, head_dim 256, tied embeddings,
    # query_pre_attn_scalar 256, soft-caps 50 / 30, sliding_window 4096 on layers 0, 2, 4, ...,
    # eos 1 / bos 2, gelu_pytorch_tanh.
    "gemma2_defaults": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 3,
        "rms_norm_eps": ABSENT,
    },
    # Gemma-2-9b's shape of config.json (legacy keys; hidden_act next to hidden_activation);
    # bf16(sqrt(96)) = 9.8125.
    "gemma2_9b_like": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 4,
        "hidden_size": 96, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 24, "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0, "sliding_window": 1024, "rope_theta": 10000.0,
        "rope_scaling": None, "cache_implementation": "hybrid", "eos_token_id": [1, 107],
        "bos_token_id": 2, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6,
    },
    "gemma2_no_softcap_layer_types": {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 3,
        "num_key_value_heads": 1, "head_dim": 16, "attn_logit_softcapping": None,
        "final_logit_softcapping": None, "sliding_window": 64, "tie_word_embeddings": False,
        "layer_types": ["full_attention", "sliding_attention", "sliding_attention"],
        "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 20000.0},
    },
    # Gemma3TextConfig's class defaults: RoPE theta 1e6 (full layers) / 1e4 (sliding layers),
    # sliding_window_pattern 6, no soft-capping, q/k norm.
    "gemma3_text_defaults": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "num_hidden_layers": 7,
        "rms_norm_eps": ABSENT,
    },
    # Gemma-3-1b's shape: legacy rope_theta / rope_local_base_freq / rope_scaling null,
    # sliding_window_pattern, MQA; bf16(sqrt(72)) = 8.5.
    "gemma3_1b_like": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "num_hidden_layers": 6,
        "hidden_size": 72, "num_key_value_heads": 1, "head_dim": 32, "query_pre_attn_scalar": 32,
        "attn_logit_softcapping": None, "final_logit_softcapping": None,
        "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": None,
        "sliding_window": 512, "sliding_window_pattern": 6, "eos_token_id": [1, 106],
        "bos_token_id": 2, "torch_dtype": "bfloat16", "hidden_activation": "gelu_pytorch_tanh",
    },
    # Gemma-3-4b's text shape: linear scaling 8 on the full layers only (legacy rope_scaling).
    "gemma3_legacy_linear": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "num_hidden_layers": 4,
        "head_dim": 16, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window_pattern": 2,
        "final_logit_softcapping": 30.0,
    },
    # transformers 5's spelling, with rope_scaling written over the full_attention entry.
    "gemma3_rope_parameters_per_type": {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "num_hidden_layers": 3,
        "head_dim": 16, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                            "sliding_attention": {"rope_type": "linear", "factor": 2.0,
                                                  "rope_theta": 20000.0}},
        "rope_scaling": {"rope_type": "linear", "factor": 4.0},
    },
}

# Dynamic NTK: the sequence lengths at which the rotary module's frequencies are dumped, as
# multiples of max_position_embeddings (M) plus an offset: below, at and just past M, between,
# at factor * M and far past it.
DYNAMIC_LENGTHS = ((1, -1), (1, 0), (1, 1), (1.5, 7), (2, 0), (4, 0), (13, 5))

CASES.update({
    "llama_dynamic": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_key_value_heads": 2,
        "rope_parameters": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0},
    },
    "qwen2_dynamic_legacy": {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 128,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768, "rope_theta": 1000000.0,
        "rope_scaling": {"type": "dynamic", "factor": 4.0},
    },
    "llama_dynamic_fractional": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
        "max_position_embeddings": 2048,
        "rope_scaling": {"rope_type": "dynamic", "factor": 1.7}, "rope_theta": 500000.0,
    },
})


def dynamic_inv_freq(config):
    """{length: inv_freq} as a fresh rotary module sets them on a pass whose largest position is
    length - 1 (dynamic_rope_update, the code path of the model's forward)."""
    out = {}
    m = config.max_position_embeddings
    for mult, offset in DYNAMIC_LENGTHS:
        length = int(m * mult) + offset
        rotary = rotary_module(config)
        x = torch.zeros(1, 1, 1, dtype=torch.float32)
        rotary(x, torch.tensor([[length - 1]]))
        out[str(length)] = [float(v) for v in rotary.inv_freq.to(torch.float32).tolist()]
    return out


def rotary_module(config):
    arch = type(config).__name__.replace("Config", "").replace("Gemma3Text", "Gemma3")
    # The module is the model type (qwen2_moe, not qwen2moe), except Gemma 3's text config.
    name = {"gemma3_text": "gemma3"}.get(config.model_type, config.model_type)
    module = getattr(transformers.models, name)
    modeling = getattr(module, f"modeling_{name}")
    return getattr(modeling, f"{arch}RotaryEmbedding")(config=config)


def layer_windows(config, model):
    """The window each layer's attention applies (0: full causal attention). Qwen2/Qwen3 modules
    hold their own `sliding_window`; MistralAttention passes config.sliding_window on every call."""
    out = []
    for layer in model.model.layers:
        if hasattr(layer.self_attn, "sliding_window"):
            out.append(layer.self_attn.sliding_window or 0)
        elif type(config).__name__ in ("MistralConfig", "Phi3Config", "MixtralConfig"):
            # Both build the mask of every layer from config.sliding_window.
            out.append(config.sliding_window or 0)
        else:
            out.append(0)
    return out


def feed_forward_blocks(model):
    """Each layer's feed-forward module (Mixtral keeps it as `mlp` in memory, `block_sparse_moe`
    in the file)."""
    return [getattr(layer, "mlp", None) or layer.block_sparse_moe for layer in model.model.layers]


def moe_fields(model):
    """The routing and expert sizes of the sparse blocks, and which layers are sparse."""
    blocks = feed_forward_blocks(model)
    sparse = [hasattr(b, "experts") for b in blocks]
    if not any(sparse):
        return {"num_experts": 0, "sparse_layers": sparse}
    block = blocks[sparse.index(True)]
    shared = getattr(block, "shared_expert", None)
    return {
        "num_experts": block.gate.num_experts,
        "experts_per_token": block.gate.top_k,
        # MixtralTopKRouter has no flag: it always renormalises.
        "normalize_topk": bool(getattr(block.gate, "norm_topk_prob", True)),
        "expert_intermediate_size": block.experts.gate_up_proj.shape[1] // 2,
        "shared_expert_intermediate_size": shared.gate_proj.out_features if shared else 0,
        "sparse_layers": sparse,
    }


def main():
    out = {"transformers_version": transformers.__version__, "torch_version": torch.__version__,
           "cases": {}}
    for name, overrides in CASES.items():
        config_json = dict(BASE)
        if overrides.get("model_type") == "phi3":
            # Phi3Config's pad_token_id 32000 is no row of BASE's 128-entry embedding.
            config_json["pad_token_id"] = None
        config_json.update(overrides)
        config_json = {k: v for k, v in config_json.items() if v != ABSENT}
        text = json.dumps(config_json, indent=2)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(text)
            config = AutoConfig.from_pretrained(d)
        rotary = rotary_module(config)
        gemma3 = config.model_type == "gemma3_text"
        # Gemma3: one table per layer type; "inv_freq" is the full-attention layers'.
        inv_freq = (rotary.full_attention_inv_freq if gemma3 else rotary.inv_freq).to(torch.float32)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        layer = model.model.layers[0]
        attn = layer.self_attn
        rope = config.rope_parameters["full_attention"] if gemma3 else config.rope_parameters
        fused = hasattr(attn, "qkv_proj")  # Phi3
        qkv = attn.qkv_proj if fused else attn.q_proj
        dense = [b for b in feed_forward_blocks(model) if not hasattr(b, "experts")]
        gate = None if not dense else dense[0].gate_up_proj if fused else dense[0].gate_proj
        case = {
            "config_json": text,
            "architecture": type(model).__name__,
            "head_dim": attn.head_dim,
            "num_key_value_heads": config.num_key_value_heads,
            "rope_theta": rope["rope_theta"],
            "rope_type": rope["rope_type"],
            # Qwen2MoeConfig stores 0 for no window.
            "sliding_window": getattr(config, "sliding_window", None) or None,
            "layer_window": layer_windows(config, model),
            "tie_word_embeddings": model.lm_head.weight is model.model.embed_tokens.weight,
            "attention_bias": qkv.bias is not None,
            "o_proj_bias": attn.o_proj.bias is not None,
            "mlp_bias": gate is not None and gate.bias is not None,
            "qk_norm": hasattr(attn, "q_norm"),
            "fused_qkv_gate_up": fused,
            "rms_norm_eps": config.rms_norm_eps,
            # cos/sin span 2 * len(inv_freq) dims; apply_rotary_pos_emb passes the rest through.
            "rotary_dim": 2 * len(inv_freq),
            "attention_scaling": float(rotary.full_attention_attention_scaling if gemma3
                                       else rotary.attention_scaling),
            "inv_freq": [float(x) for x in inv_freq.tolist()],
            "moe": moe_fields(model),
        }
        if rope["rope_type"] in ("longrope", "yarn", "llama3"):
            case["original_max_position_embeddings"] = rope["original_max_position_embeddings"]
        if config.model_type in ("gemma2", "gemma3_text"):
            embed = model.model.embed_tokens
            dtype = getattr(config, "dtype", None) or torch.float32
            if isinstance(dtype, str):
                dtype = getattr(torch, dtype)
            case["gemma"] = {
                "eos_token_id": config.eos_token_id,
                "bos_token_id": config.bos_token_id,
                "hidden_activation": config.hidden_activation,
                "attention_scale": attn.scaling,
                "attn_logit_softcapping": attn.attn_logit_softcapping,
                "final_logit_softcapping": config.final_logit_softcapping,
                # What Gemma*TextScaledWordEmbedding multiplies by: the float32 scale cast to the
                # weights' dtype (the checkpoint's).
                "embedding_multiplier": float(torch.tensor(embed.scalar_embed_scale).to(dtype).float()),
                "layer_types": config.layer_types,
            }
            if gemma3:
                sliding = config.rope_parameters["sliding_attention"]
                case["gemma"]["sliding_rope_theta"] = sliding["rope_theta"]
                case["gemma"]["sliding_rope_type"] = sliding["rope_type"]
                case["gemma"]["sliding_inv_freq"] = [
                    float(x) for x in rotary.sliding_attention_inv_freq.to(torch.float32).tolist()]
        if rope["rope_type"] == "dynamic":
            case["rope_factor"] = rope["factor"]
            case["dynamic_inv_freq"] = dynamic_inv_freq(config)
        if rope["rope_type"] == "longrope":
            # What longrope_frequency_update switches to past original_max_position_embeddings.
            original = rope["original_max_position_embeddings"]
            long_inv_freq, _ = ROPE_INIT_FUNCTIONS["longrope"](config, None, seq_len=original + 1)
            case["original_max_position_embeddings"] = original
            case["long_inv_freq"] = [float(x) for x in long_inv_freq.to(torch.float32).tolist()]
        out["cases"][name] = case
    with open(OUT, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(out['cases'])} cases")


if __name__ == "__main__":
    main()
