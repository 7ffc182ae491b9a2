#!/usr/bin/env python3
"""Generates weft's golden models and their Hugging Face reference outputs.

Builds tiny random-weight decoder models (Llama, Mistral, Qwen2, Qwen3, Phi3, Gemma2, Gemma3 and variants), saves each
with `save_pretrained(safe_serialization=True)` under tests/golden/models/<name>/, and dumps the
logits and greedy tokens that Hugging Face `transformers` computes for a fixed batch of prompts.

Usage:  python3 tests/golden/generate.py [--out DIR] [--only NAME ...]

Requires torch, transformers (5.x) and safetensors. CI does not run this script: it only reads the
committed outputs. Everything is seeded; rerunning reproduces the same weights and (up to the last
bits of CPU float reductions) the same references. The README beside this file describes the
outputs and tensor names.
"""

import argparse
import copy
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file
from transformers import (
    DynamicCache,
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2MoeConfig,
    Qwen2MoeForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
)

VOCAB_SIZE = 512
PROMPT_SEED = 1234
PROMPT_LENGTHS = (3, 11, 26, 47)
NEW_TOKENS = 32
BOS_ID = 1
EOS_ID = 2
# A seed is accepted once every greedy step's top-1 minus top-2 logit gap exceeds this, so an
# engine that agrees with transformers to ~1e-4 picks the same tokens.
MIN_GREEDY_MARGIN = 0.02
# Mixtures of experts: a seed is accepted once, in every router call of the reference runs, the
# k-th largest routing probability exceeds the (k+1)-th by this much, so an engine whose router
# logits agree to ~1e-5 picks the same experts.
MIN_ROUTER_MARGIN = 1e-4
MAX_SEED_TRIES = 50
# gemma2_softcap's caps: the attention scores have median |s| ~3 and 90th percentile ~8 before
# capping, the prompt logits reach ~35 (both well into tanh's nonlinear range).
GEMMA2_ATTN_SOFTCAP = 5.0
GEMMA2_FINAL_SOFTCAP = 20.0
GEMMA_MODEL_TYPES = ("gemma2", "gemma3_text")

COMMON = dict(
    vocab_size=VOCAB_SIZE,
    hidden_size=64,
    intermediate_size=160,
    num_hidden_layers=2,
    max_position_embeddings=512,
    rms_norm_eps=1e-6,
    bos_token_id=BOS_ID,
    eos_token_id=EOS_ID,
)


@dataclass
class Spec:
    name: str
    model_cls: type
    config_cls: type
    config: dict
    base_seed: int
    covers: str
    dtype: torch.dtype = torch.float32
    extra: dict = field(default_factory=dict)
    # LongRoPE (Phi3 with original_max_position_embeddings below prompt + generation): the greedy
    # dumps are generate()'s, whose Phi3 override drops the cache and recomputes the whole
    # sequence with the long factors the step it first passes original_max_position_embeddings
    # tokens; the generator checks that a plain KV-cached decode loop (cached_decode) agrees up
    # to that step. The value is original_max_position_embeddings: one uncached forward
    # reproduces the decode only up to that many tokens.
    longrope_original: int | None = None
    # Dynamic NTK RoPE: the rotary modules keep the longest pass they saw (dynamic_rope_update),
    # so every reference pass starts from a freshly reset module (reset_dynamic_rope), as on a
    # freshly loaded model. The value is max_position_embeddings: the uncached consistency check
    # covers the prompts and tokens within it (past it the cached keys of earlier positions keep
    # the frequencies of their own pass, which one uncached pass cannot reproduce).
    dynamic_max_positions: int | None = None


SPECS = [
    Spec("llama_gqa", LlamaForCausalLM, LlamaConfig,
         dict(num_attention_heads=8, num_key_value_heads=2, rope_theta=10000.0,
              tie_word_embeddings=False),
         base_seed=100,
         covers="Llama, GQA 8 query heads / 2 kv heads, head_dim 8, default RoPE, untied lm_head"),
    Spec("llama3_tied", LlamaForCausalLM, LlamaConfig,
         dict(num_attention_heads=4, num_key_value_heads=1, rope_theta=500000.0,
              rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                high_freq_factor=4.0, original_max_position_embeddings=64),
              tie_word_embeddings=True),
         base_seed=200,
         covers="Llama, MQA (1 kv head), llama3 RoPE scaling (all three frequency bands hit at "
                "head_dim 16), tied embeddings (no lm_head.weight in the file)"),
    Spec("mistral", MistralForCausalLM, MistralConfig,
         dict(num_attention_heads=8, num_key_value_heads=4, rope_theta=10000.0,
              sliding_window=None, tie_word_embeddings=False),
         base_seed=300,
         covers="Mistral, GQA 8/4, sliding_window null"),
    Spec("qwen2_bias", Qwen2ForCausalLM, Qwen2Config,
         dict(num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0,
              tie_word_embeddings=False, use_sliding_window=False),
         base_seed=400,
         covers="Qwen2, nonzero q/k/v biases, GQA 4/2"),
    Spec("qwen3_qknorm", Qwen3ForCausalLM, Qwen3Config,
         dict(num_attention_heads=4, num_key_value_heads=2, head_dim=32, rope_theta=10000.0,
              tie_word_embeddings=False, use_sliding_window=False),
         base_seed=500,
         covers="Qwen3, per-head q_norm/k_norm with random weights, explicit head_dim 32 != "
                "hidden/heads (q_proj 64->128, o_proj 128->64)"),
    Spec("llama_linear_rope", LlamaForCausalLM, LlamaConfig,
         dict(num_attention_heads=8, num_key_value_heads=2, rope_theta=10000.0,
              rope_scaling=dict(rope_type="linear", factor=2.0), tie_word_embeddings=False),
         base_seed=600,
         covers="Llama, linear RoPE scaling factor 2"),
    Spec("llama_4layers", LlamaForCausalLM, LlamaConfig,
         dict(num_hidden_layers=4, intermediate_size=150, num_attention_heads=4,
              num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=False),
         base_seed=800,
         covers="Llama with 4 layers for 4 pipeline stages; intermediate 150 (not divisible by "
                "TP 4: padded shards); 2 kv heads (replicated at TP 4)"),
    Spec("mistral_window", MistralForCausalLM, MistralConfig,
         dict(num_attention_heads=8, num_key_value_heads=4, rope_theta=10000.0,
              sliding_window=12, tie_word_embeddings=False),
         base_seed=900,
         covers="Mistral, sliding_window 12 on every layer: shorter than 3 of the 4 prompts and "
                "than every generation (prompt + 32 tokens)"),
    Spec("qwen2_window", Qwen2ForCausalLM, Qwen2Config,
         dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
              rope_theta=10000.0, tie_word_embeddings=False, use_sliding_window=True,
              sliding_window=10, max_window_layers=1),
         base_seed=1000,
         covers="Qwen2, use_sliding_window with max_window_layers 1 of 3 layers: layer 0 full "
                "attention, layers 1-2 a window of 10 (layer_types in config.json)"),
    Spec("phi3_longrope", Phi3ForCausalLM, Phi3Config,
         dict(num_attention_heads=4, num_key_value_heads=2, intermediate_size=161,
              rope_theta=10000.0, partial_rotary_factor=0.75, original_max_position_embeddings=48,
              rope_scaling=dict(rope_type="longrope",
                                short_factor=[1.0, 1.15, 1.4, 1.9, 2.6, 3.5],
                                long_factor=[1.1, 1.8, 3.2, 6.0, 11.0, 19.0]),
              pad_token_id=None, tie_word_embeddings=True),
         base_seed=1100, longrope_original=48,
         covers="Phi3 (fused qkv_proj and gate_up_proj), GQA 4/2, partial_rotary_factor 0.75 "
                "(12 of 16 head dims rotated), longrope (6 short / 6 long factors, "
                "original_max_position_embeddings 48 of 512: attention factor 1.269; every "
                "prompt fits in 48, generations of prompts 2 and 3 run past it and switch to the "
                "long factors at position 48), intermediate 161 (padded TP 2 shards inside the "
                "fused gate_up_proj), tied embeddings"),
    Spec("phi3_window", Phi3ForCausalLM, Phi3Config,
         dict(num_attention_heads=4, num_key_value_heads=1, rope_theta=10000.0,
              partial_rotary_factor=0.5, sliding_window=12, pad_token_id=None,
              tie_word_embeddings=False),
         base_seed=1200,
         covers="Phi3, default RoPE with partial_rotary_factor 0.5 (8 of 16 head dims), MQA "
                "(1 kv head: replicated at TP 2 inside the fused qkv_proj), sliding_window 12 on "
                "every layer, untied lm_head"),
    Spec("llama_dynamic_ntk", LlamaForCausalLM, LlamaConfig,
         dict(num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0,
              max_position_embeddings=20, rope_scaling=dict(rope_type="dynamic", factor=4.0),
              tie_word_embeddings=False),
         base_seed=1700, dynamic_max_positions=20,
         covers="Llama, dynamic NTK RoPE (factor 4) over max_position_embeddings 20: prompts 0-1 "
                "fit and their generations pass 20 (each new token's pass grows the base), "
                "prompts 2-3 (26, 47 tokens) are longer (the whole prompt uses the base of its "
                "length); GQA 4/2, head_dim 16"),
    Spec("llama_h128", LlamaForCausalLM, LlamaConfig,
         dict(hidden_size=128, intermediate_size=256, num_attention_heads=4,
              num_key_value_heads=2, rope_theta=10000.0, tie_word_embeddings=False),
         base_seed=1800,
         covers="Llama, hidden 128 (head_dim 32), intermediate 256: every projection's input is a "
                "multiple of 64 at TP 1 and 2 (o_proj 128 / 64, down_proj 256 / 128), so blocks "
                "of 64 (--quantize fp8) fit every shard"),
    Spec("mixtral_moe", MixtralForCausalLM, MixtralConfig,
         dict(num_attention_heads=8, num_key_value_heads=4, rope_theta=1000000.0,
              intermediate_size=96, num_local_experts=4, num_experts_per_tok=2,
              sliding_window=None, tie_word_embeddings=False),
         base_seed=1300,
         covers="Mixtral: every layer a mixture of 4 SwiGLU experts (intermediate 96), top-2 with "
                "the chosen probabilities renormalised; block_sparse_moe.experts.N.w1/w3/w2 "
                "tensors; GQA 8/4, rope_theta 1e6"),
    Spec("qwen3_moe", Qwen3MoeForCausalLM, Qwen3MoeConfig,
         dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
              rope_theta=10000.0, num_experts=8, num_experts_per_tok=3, moe_intermediate_size=48,
              norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[1],
              tie_word_embeddings=False, use_sliding_window=False),
         base_seed=1400,
         covers="Qwen3-MoE: 8 experts (moe_intermediate_size 48), top-3 without renormalisation "
                "(norm_topk_prob false), layer 1 dense (mlp_only_layers [1], intermediate 160), "
                "q/k norm, head_dim 32"),
    Spec("qwen2_moe", Qwen2MoeForCausalLM, Qwen2MoeConfig,
         dict(num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0, num_experts=6,
              num_experts_per_tok=2, moe_intermediate_size=40,
              shared_expert_intermediate_size=80, norm_topk_prob=True, decoder_sparse_step=1,
              tie_word_embeddings=False, use_sliding_window=False),
         base_seed=1500,
         covers="Qwen2-MoE: 6 experts (intermediate 40), top-2 renormalised (norm_topk_prob), a "
                "shared expert (intermediate 80) scaled by sigmoid(shared_expert_gate . x), q/k/v "
                "biases (qkv_bias)"),
    Spec("qwen2_yarn", Qwen2ForCausalLM, Qwen2Config,
         dict(num_attention_heads=4, num_key_value_heads=2, rope_theta=10000.0,
              rope_scaling=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=64),
              tie_word_embeddings=True, use_sliding_window=False),
         base_seed=1600,
         covers="Qwen2 with YaRN RoPE (factor 4 over an original 64 positions, default betas: at "
                "head_dim 16 pairs 0-2 kept, 3+ interpolated, a ramp between; cos/sin scaled by "
                "0.1 ln 4 + 1), tied embeddings"),
    Spec("gemma2_softcap", Gemma2ForCausalLM, Gemma2Config,
         dict(num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
              query_pre_attn_scalar=24, attn_logit_softcapping=GEMMA2_ATTN_SOFTCAP,
              final_logit_softcapping=GEMMA2_FINAL_SOFTCAP, sliding_window=8,
              rope_theta=10000.0, tie_word_embeddings=False),
         base_seed=1300,
         covers="Gemma2: 1 + w RMSNorms (weights around 0) incl. pre/post_feedforward_layernorm, "
                "GeGLU (gelu_pytorch_tanh), embeddings scaled by sqrt(64), head_dim 32 != "
                "hidden/heads, query_pre_attn_scalar 24 != head_dim, attention soft-capping "
                f"{GEMMA2_ATTN_SOFTCAP} and final logit soft-capping {GEMMA2_FINAL_SOFTCAP} (both "
                "in tanh's nonlinear range), default layer types (layers 0 and 2 sliding window 8, "
                "layer 1 full), untied lm_head (random tied embeddings make a model that repeats "
                "its input token)"),
    Spec("gemma3_text", Gemma3ForCausalLM, Gemma3TextConfig,
         dict(num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
              query_pre_attn_scalar=48, sliding_window=10, sliding_window_pattern=3,
              rope_parameters=dict(
                  full_attention=dict(rope_type="linear", factor=4.0, rope_theta=1000000.0),
                  sliding_attention=dict(rope_type="default", rope_theta=10000.0)),
              tie_word_embeddings=False),
         base_seed=1400,
         covers="Gemma3 (text): q_norm/k_norm (1 + w, weights around 0), 1 + w layer norms, "
                "GeGLU, scaled embeddings, query_pre_attn_scalar 48, no soft-capping, "
                "sliding_window_pattern 3 (layers 0, 1, 3 sliding window 10, layer 2 full), "
                "RoPE per layer type: full layers theta 1e6 with linear scaling 4, sliding layers "
                "theta 1e4, untied lm_head"),
    Spec("llama_bf16", LlamaForCausalLM, LlamaConfig,
         dict(num_attention_heads=8, num_key_value_heads=2, rope_theta=10000.0,
              tie_word_embeddings=False),
         base_seed=700, dtype=torch.bfloat16,
         covers="llama_gqa's architecture with bfloat16 weights; references in f32 from the "
                "upcast bf16 weights (tight) and in bf16 compute (loose)"),
]


def make_prompts():
    g = torch.Generator().manual_seed(PROMPT_SEED)
    return [torch.randint(1, VOCAB_SIZE, (n,), generator=g, dtype=torch.int64)
            for n in PROMPT_LENGTHS]


def build_config(spec):
    kwargs = dict(COMMON)
    kwargs.update(spec.config)
    config = spec.config_cls(**kwargs)
    config._attn_implementation = "eager"
    config.architectures = [spec.model_cls.__name__]
    return config


def init_weights(model, seed):
    """Overwrites every parameter with seeded values scaled so logits spread over several units.

    transformers' own init (std 0.02, zero biases, unit norms) gives near-flat logits on a model
    this small, and leaves biases and norm weights trivial, so a wrong bias or norm in the engine
    would go unnoticed.
    """
    g = torch.Generator().manual_seed(seed)
    # Gemma's RMSNorm scales by 1 + weight: weights around 0 give the same scales as 1 +- spread.
    norm_center = 0.0 if model.config.model_type in GEMMA_MODEL_TYPES else 1.0
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight"):
                # input/post_attention/final norms (Gemma: pre/post_feedforward_layernorm too) and
                # Qwen3's / Gemma3's q_norm/k_norm.
                spread = 0.3 if ("q_norm" in name or "k_norm" in name) else 0.1
                value = norm_center + spread * torch.randn(p.shape, generator=g)
            elif name.endswith(".bias"):
                value = 0.3 * torch.randn(p.shape, generator=g)
            elif "embed_tokens" in name or name.startswith("lm_head"):
                value = torch.randn(p.shape, generator=g)
            else:
                # Projections: std 0.25 = 2 / sqrt(hidden) keeps the residual stream from collapsing
                # while each layer still contributes visibly.
                value = 0.25 * torch.randn(p.shape, generator=g)
            p.copy_(value.to(p.dtype))


def legacy_config_keys(path, spec):
    """Adds the v4-style keys most Hub checkpoints carry next to transformers 5's own keys.

    transformers 5 writes `dtype` and `rope_parameters`; most published configs instead have
    `torch_dtype`, `rope_theta` and `rope_scaling`. Both spellings hold the same values, so a
    parser that reads either form sees the same model. `check_reload` confirms
    transformers reads the edited file back unchanged.
    """
    cfg = json.loads(path.read_text())
    rope = cfg.get("rope_parameters") or {}
    cfg["torch_dtype"] = cfg.get("dtype", "float32")
    if "full_attention" in rope:
        # Gemma3: released configs carry rope_theta + rope_scaling for the full-attention layers
        # and rope_local_base_freq for the sliding ones.
        full, sliding = rope["full_attention"], rope["sliding_attention"]
        assert sliding.get("rope_type", "default") == "default", "no legacy key for that"
        cfg["rope_theta"] = full["rope_theta"]
        cfg["rope_local_base_freq"] = sliding["rope_theta"]
        scaling = {k: v for k, v in full.items() if k != "rope_theta"}
        cfg["rope_scaling"] = None if scaling.get("rope_type", "default") == "default" else scaling
        path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
        return
    cfg["rope_theta"] = rope.get("rope_theta", spec.config["rope_theta"])
    scaling = {k: v for k, v in rope.items() if k != "rope_theta"}
    if "partial_rotary_factor" in scaling:
        # Phi-3.5 / Phi-4-mini configs carry it at the top level, next to rope_scaling.
        cfg["partial_rotary_factor"] = scaling.pop("partial_rotary_factor")
    cfg["rope_scaling"] = None if scaling.get("rope_type", "default") == "default" else scaling
    if cfg["rope_scaling"] is not None:
        # v4 configs spell it `type` in older releases and `rope_type` in newer ones.
        cfg["rope_scaling"]["type"] = cfg["rope_scaling"]["rope_type"]
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def load(model_dir, spec, dtype):
    return spec.model_cls.from_pretrained(model_dir, dtype=dtype,
                                          attn_implementation="eager").eval()


def top2_margin(logits):
    """Top-1 minus top-2 value along the last axis."""
    top = torch.topk(logits.float(), 2, dim=-1).values
    return top[..., 0] - top[..., 1]


def greedy(model, prompt):
    """Plain argmax decoding of NEW_TOKENS tokens, with no end-of-sequence handling at all.

    `generate` merges the model's generation_config (eos 2) into the one passed in, and then
    min_new_tokens would mask eos to -inf, making the chosen tokens differ from the raw argmax.
    Clearing eos on a copy of the model's generation config leaves no logits processor at all.
    """
    gen_config = copy.deepcopy(model.generation_config)
    gen_config.eos_token_id = None
    gen_config.update(do_sample=False, max_new_tokens=NEW_TOKENS, pad_token_id=0,
                      return_dict_in_generate=True, output_logits=True, output_scores=True)
    saved = model.generation_config
    model.generation_config = gen_config
    try:
        out = model.generate(prompt[None, :],
                             attention_mask=torch.ones(1, len(prompt), dtype=torch.int64))
    finally:
        model.generation_config = saved
    ids = out.sequences[0, len(prompt):]
    logits = torch.stack([l[0] for l in out.logits]).float()
    scores = torch.stack([s[0] for s in out.scores]).float()
    assert ids.shape == (NEW_TOKENS,), ids.shape
    assert torch.equal(logits, scores), "greedy run applied a logits processor"
    assert torch.equal(logits.argmax(-1), ids), "greedy ids are not the argmax of their logits"
    return ids, logits


def cached_decode(model, prompt):
    """Greedy (argmax) decoding of NEW_TOKENS tokens by a plain KV-cached forward loop: the prompt
    in one pass, then one token per pass, the cache never reset. transformers' own modeling code
    picks the RoPE set of each pass (dynamic_rope_update), so a LongRoPE token at position p uses
    the long factors iff p + 1 > original_max_position_embeddings, and cached keys keep the set
    they were computed with."""
    ids, rows = [], []
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        out = model(prompt[None, :], cache=cache, use_cache=True)
        for step in range(NEW_TOKENS):
            row = out.logits[0, -1].float()
            rows.append(row)
            ids.append(row.argmax())
            if step + 1 < NEW_TOKENS:
                out = model(ids[-1].view(1, 1), cache=cache, use_cache=True)
    return torch.stack(ids), torch.stack(rows)


class RouterMargins:
    """Records, over every call of a mixture's routers, the smallest gap between the k-th and
    (k+1)-th routing probability of any token (the distance to a different choice of experts)."""

    def __init__(self, model):
        self.min_gap = float("inf")
        self.handles = [m.register_forward_hook(self.hook) for m in model.modules()
                        if type(m).__name__.endswith("TopKRouter")]

    def hook(self, module, inputs, output):
        probs = torch.softmax(output[0].float(), dim=-1)
        k = module.top_k
        if probs.shape[-1] > k:
            top = torch.topk(probs, k + 1, dim=-1).values
            self.min_gap = min(self.min_gap, (top[..., k - 1] - top[..., k]).min().item())

    def close(self):
        for h in self.handles:
            h.remove()
        return self.min_gap if self.handles else None


def reset_dynamic_rope(model):
    """Puts every dynamic NTK rotary module back to its state after loading (the frequencies of
    max_position_embeddings, no longer pass seen)."""
    for m in model.modules():
        if hasattr(m, "original_inv_freq") and hasattr(m, "max_seq_len_cached"):
            m.register_buffer("inv_freq", m.original_inv_freq.clone(), persistent=False)
            m.max_seq_len_cached = m.original_max_seq_len


def forward_logits(model, ids):
    with torch.no_grad():
        return model(ids[None, :]).logits[0].float()


def compute_references(model, prompts, check_consistency=True, longrope_original=None,
                       dynamic_max_positions=None):
    """Returns {tensor name: tensor} plus margin statistics for one model."""
    tensors = {}
    prompt_margins, greedy_margins, distinct, cache_diffs = [], [], set(), []
    cached_differs_from = []
    for i, prompt in enumerate(prompts):
        reset_dynamic_rope(model)
        logits = forward_logits(model, prompt)
        reset_dynamic_rope(model)
        ids, glogits = greedy(model, prompt)
        if dynamic_max_positions is not None:
            # generate() is the plain cached decode: the prompt in one pass, then one token per
            # pass, each growing the base once past max_position_embeddings.
            reset_dynamic_rope(model)
            loop_ids, loop_logits = cached_decode(model, prompt)
            assert torch.equal(loop_ids, ids), "cached decode and generate() differ"
            assert (loop_logits - glogits).abs().max().item() < 1e-4
        if longrope_original is not None:
            # generate() recomputes the sequence the step it first reaches original + 1 tokens;
            # before that step the plain cached decode is the same computation.
            loop_ids, loop_logits = cached_decode(model, prompt)
            switch = longrope_original - len(prompt) + 1  # the step at position `original`
            assert switch >= 1, "prompts must fit in original_max_position_embeddings"
            same = min(switch, NEW_TOKENS)
            assert torch.equal(loop_ids[:same], ids[:same]), "cached decode and generate() differ"
            assert (loop_logits[:same] - glogits[:same]).abs().max().item() < 1e-4
            differs = [t for t in range(NEW_TOKENS) if ids[t] != loop_ids[t]]
            cached_differs_from.append(differs[0] if differs else None)
        check_limit = longrope_original or dynamic_max_positions
        if check_consistency and (dynamic_max_positions is None
                                  or len(prompt) <= dynamic_max_positions):
            # The cached decode must agree with one uncached forward over prompt + generated
            # tokens (LongRoPE and dynamic NTK: over the first tokens whose frequencies one pass
            # reproduces); otherwise the reference itself would be suspect.
            full_ids = torch.cat([prompt, ids[:-1]])
            if check_limit is not None:
                full_ids = full_ids[:check_limit]
            reset_dynamic_rope(model)
            full = forward_logits(model, full_ids)
            steps = len(full_ids) - len(prompt) + 1
            diff = max((full[:len(prompt)] - logits).abs().max().item(),
                       (full[len(prompt) - 1:] - glogits[:steps]).abs().max().item())
            assert diff < 1e-3, f"cached and uncached logits differ by {diff}"
            cache_diffs.append(diff)
        tensors[f"prompt_{i}.ids"] = prompt.to(torch.int32)
        tensors[f"prompt_{i}.logits"] = logits.contiguous()
        tensors[f"prompt_{i}.greedy_ids"] = ids.to(torch.int32)
        tensors[f"prompt_{i}.greedy_logits"] = glogits.contiguous()
        prompt_margins.append(top2_margin(logits).min().item())
        greedy_margins.append(top2_margin(glogits).min().item())
        distinct.update(ids.tolist())
    if longrope_original is not None:
        # A prompt longer than original_max_position_embeddings: transformers runs it, and every
        # token after it, with the long factors (no recompute: the sequence never crosses).
        long_prompt = torch.cat([prompts[3], prompts[1]])
        assert len(long_prompt) > longrope_original
        ids, glogits = greedy(model, long_prompt)
        loop_ids, loop_logits = cached_decode(model, long_prompt)
        assert torch.equal(loop_ids, ids), "cached decode and generate() differ on the long prompt"
        assert (loop_logits - glogits).abs().max().item() < 1e-4
        tensors["long_prompt.ids"] = long_prompt.to(torch.int32)
        tensors["long_prompt.logits"] = forward_logits(model, long_prompt).contiguous()
        tensors["long_prompt.greedy_ids"] = ids.to(torch.int32)
        tensors["long_prompt.greedy_logits"] = glogits.contiguous()
    all_logits = torch.cat([tensors[f"prompt_{i}.logits"] for i in range(len(prompts))])
    stats = dict(
        # Scale of the numbers, to judge tolerances and margins against.
        prompt_logits_std=all_logits.std().item(),
        prompt_logits_abs_max=all_logits.abs().max().item(),
        min_greedy_margin=min(greedy_margins),
        min_prompt_margin=min(prompt_margins),
        per_prompt_min_greedy_margin=greedy_margins,
        per_prompt_min_prompt_margin=prompt_margins,
        distinct_greedy_tokens=len(distinct),
        eos_in_greedy_ids=EOS_ID in distinct,
        # How far transformers' own KV-cached decode drifts from one uncached forward over the
        # same tokens: a floor for any engine-vs-reference tolerance.
        max_abs_diff_cached_vs_uncached=max(cache_diffs) if cache_diffs else None,
        distinct_greedy_tokens_per_prompt=[
            len(set(tensors[f"prompt_{i}.greedy_ids"].tolist())) for i in range(len(prompts))],
    )
    if longrope_original is not None:
        # Per prompt, the first greedy step whose token a cached decode without generate()'s
        # recompute chooses differently (null: none).
        stats["cached_decode_differs_from_step"] = cached_differs_from
    return tensors, stats


def save_model(spec, seed, model_dir):
    torch.manual_seed(seed)
    config = build_config(spec)
    model = spec.model_cls(config).eval()
    init_weights(model, seed)
    if spec.dtype != torch.float32:
        model = model.to(spec.dtype)
    if model_dir.exists():
        shutil.rmtree(model_dir)
    model.save_pretrained(model_dir, safe_serialization=True)
    legacy_config_keys(model_dir / "config.json", spec)
    gen = GenerationConfig(bos_token_id=BOS_ID, eos_token_id=EOS_ID, do_sample=False)
    gen.save_pretrained(model_dir)
    return model


def check_reload(spec, model, model_dir, prompts):
    """The files on disk, read back by transformers, must give exactly the in-memory model."""
    reloaded = load(model_dir, spec, spec.dtype)
    for name, p in model.state_dict().items():
        assert torch.equal(p, reloaded.state_dict()[name]), f"{spec.name}: {name} changed on reload"
    if spec.dtype == torch.float32:
        # Not for bf16: `model.to(bfloat16)` also rounds the in-memory RoPE inv_freq buffer, which
        # from_pretrained keeps in f32, so the two legitimately differ.
        a = forward_logits(model, prompts[-1])
        b = forward_logits(reloaded, prompts[-1])
        assert torch.equal(a, b), f"{spec.name}: reloaded config computes different logits"
    rope = reloaded.config.rope_parameters
    if "full_attention" in rope:  # Gemma3: per layer type
        for layer_type, params in spec.config["rope_parameters"].items():
            for key, value in params.items():
                assert rope[layer_type][key] == value, (spec.name, layer_type, rope)
        return
    expected = (spec.config.get("rope_scaling") or {}).get("rope_type", "default")
    assert rope["rope_type"] == expected, (spec.name, rope)
    assert rope["rope_theta"] == spec.config["rope_theta"], (spec.name, rope)


def run_model(spec, prompts, out_dir):
    model_dir = out_dir / spec.name
    for attempt in range(MAX_SEED_TRIES):
        seed = spec.base_seed + attempt
        model = save_model(spec, seed, model_dir)
        check_reload(spec, model, model_dir, prompts)
        # f32 computation from the stored weights (upcast when they are bf16).
        ref_model = load(model_dir, spec, torch.float32)
        routers = RouterMargins(ref_model)
        tensors, stats = compute_references(ref_model, prompts,
                                            longrope_original=spec.longrope_original,
                                            dynamic_max_positions=spec.dynamic_max_positions)
        router_gap = routers.close()
        if router_gap is not None:
            stats["min_router_margin"] = router_gap
        if stats["min_greedy_margin"] >= MIN_GREEDY_MARGIN and (
                router_gap is None or router_gap >= MIN_ROUTER_MARGIN):
            break
        print(f"  {spec.name}: seed {seed} min greedy margin "
              f"{stats['min_greedy_margin']:.4g} (need {MIN_GREEDY_MARGIN}), min router margin "
              f"{router_gap} (need {MIN_ROUTER_MARGIN}), trying the next seed")
    else:
        raise RuntimeError(f"{spec.name}: no seed in {MAX_SEED_TRIES} tries reached the margin")

    if spec.dtype == torch.bfloat16:
        bf16_model = load(model_dir, spec, torch.bfloat16)
        diffs = []
        for i, prompt in enumerate(prompts):
            bf = forward_logits(bf16_model, prompt)
            tensors[f"prompt_{i}.logits_bf16_compute"] = bf.contiguous()
            diffs.append((bf - tensors[f"prompt_{i}.logits"]).abs().max().item())
        stats["max_abs_diff_bf16_compute_vs_f32"] = max(diffs)

    save_file(tensors, str(model_dir / "reference.safetensors"),
              metadata={"generator": "tests/golden/generate.py"})
    info = dict(
        model=spec.name,
        architecture=spec.model_cls.__name__,
        dtype=str(spec.dtype).removeprefix("torch."),
        reference_compute_dtype="float32",
        covers=spec.covers,
        seed=seed,
        prompt_seed=PROMPT_SEED,
        prompt_lengths=list(PROMPT_LENGTHS),
        new_tokens=NEW_TOKENS,
        attn_implementation="eager",
        **({} if spec.longrope_original is None
           else dict(greedy_reference="generate() (recomputes the sequence with the long factors "
                                      "when it passes original_max_position_embeddings)",
                     uncached_check_tokens=spec.longrope_original)),
        **({} if spec.dynamic_max_positions is None
           else dict(greedy_reference="generate() from a freshly reset rotary module per pass",
                     uncached_check_tokens=spec.dynamic_max_positions,
                     uncached_check_prompts="those of at most uncached_check_tokens tokens")),
        min_greedy_margin_threshold=MIN_GREEDY_MARGIN,
        **({} if "min_router_margin" not in stats
           else dict(min_router_margin_threshold=MIN_ROUTER_MARGIN)),
        **stats,
        tensors=sorted(tensors),
        transformers_version=transformers.__version__,
        torch_version=torch.__version__,
    )
    (model_dir / "reference.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "models")
    parser.add_argument("--only", nargs="*", help="model names to regenerate (default: all)")
    args = parser.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    args.out.mkdir(parents=True, exist_ok=True)
    prompts = make_prompts()

    rows = []
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        info = run_model(spec, prompts, args.out)
        rows.append(info)
        print(f"{info['model']:18s} seed {info['seed']:4d}  min greedy margin "
              f"{info['min_greedy_margin']:.4f}  min prompt margin {info['min_prompt_margin']:.4f}"
              f"  distinct greedy tokens {info['distinct_greedy_tokens']}"
              f" {info['distinct_greedy_tokens_per_prompt']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
