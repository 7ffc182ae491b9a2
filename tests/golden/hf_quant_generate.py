#!/usr/bin/env python3
"""Writes tiny Hugging Face quantized checkpoints and their transformers reference outputs.

Each checkpoint is one small random Llama (hidden 128, intermediate 256, 8 query / 2 KV heads of
16, 2 layers, vocab 512; embeddings, norms and lm_head in bfloat16) whose decoder linear weights
are quantized and packed by the `compressed-tensors` package's own compressors (the code
llm-compressor writes checkpoints with and vLLM reads them with). The quantization parameters come
from the package's calculate_qparams over each group's min / max. `lm_head` is in the `ignore`
list, as llm-compressor writes it.

The reference: transformers loads the packed checkpoint itself (its compressed-tensors
integration decompresses with the same package, run_compressed=False), upcast to float32, and
tests/golden/generate.py's compute_references dumps prompt logits and 32 greedy tokens with their
logits (the golden format, reference.safetensors). The script also checks that the decompressed
weights transformers holds equal the package's decompress() of every module, and dumps each
module's dequantized weight for three modules (`dequantized.safetensors`, float32) so the C++ test can hold weft's
own unpacking to them.

Usage:  /work/refvenv/bin/python tests/golden/hf_quant_generate.py [--only NAME ...]
Requires torch, transformers 5, compressed-tensors. CI only reads the outputs.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file
from transformers import (AutoModelForCausalLM, CompressedTensorsConfig, GenerationConfig,
                          LlamaConfig, LlamaForCausalLM)

import compressed_tensors
from compressed_tensors.compressors.naive_quantized.base import (FloatQuantizationCompressor,
                                                                IntQuantizationCompressor)
from compressed_tensors.compressors.pack_quantized.base import PackedQuantizationCompressor
from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig,
                                             QuantizationScheme, apply_quantization_config)
from compressed_tensors.quantization.utils.helpers import calculate_qparams

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODELS = HERE / "models"
import generate as golden  # noqa: E402  (tests/golden/generate.py: prompts, references)

CONFIG = dict(
    vocab_size=golden.VOCAB_SIZE, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
    num_attention_heads=8, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
    rms_norm_eps=1e-6, rope_theta=10000.0, bos_token_id=golden.BOS_ID,
    eos_token_id=golden.EOS_ID, tie_word_embeddings=False)

# name -> (compressed-tensors format, weight QuantizationArgs)
CHECKPOINTS = {
    "ct_int4_g32_asym": ("pack-quantized", dict(num_bits=4, type="int", symmetric=False,
                                                strategy="group", group_size=32)),
    "ct_int4_g64_sym": ("pack-quantized", dict(num_bits=4, type="int", symmetric=True,
                                               strategy="group", group_size=64)),
    "ct_int4_g128_asym": ("pack-quantized", dict(num_bits=4, type="int", symmetric=False,
                                                 strategy="group", group_size=128)),
    "ct_int8_channel": ("int-quantized", dict(num_bits=8, type="int", symmetric=True,
                                              strategy="channel")),
    "ct_fp8_channel": ("float-quantized", dict(num_bits=8, type="float", symmetric=True,
                                               strategy="channel")),
    "ct_fp8_tensor": ("float-quantized", dict(num_bits=8, type="float", symmetric=True,
                                              strategy="tensor")),
}
# Several config groups in one checkpoint (format "mixed-precision", each group its own format),
# as llm-compressor writes mixed recipes. Each module's group is the one compressed-tensors' own
# matching picks (match_targets: exact names, then "re:" patterns, then class names; a pattern
# matches from the start of the name, re.match). The choices below make every rule decide some
# module: layer 1's o_proj by its exact name over both other groups, v_proj (fused with q / k of
# another group) and down_proj (a pattern that is a prefix) by pattern over the class name, and
# layer 0's up_proj ignored by a pattern that is a prefix of its name.
MIXED = {
    "ct_mixed_groups": dict(
        groups={
            "group_0": (["Linear"], "pack-quantized",
                        dict(num_bits=4, type="int", symmetric=True, strategy="group",
                             group_size=64)),
            "group_1": (["re:.*self_attn\\.v_proj$", "re:.*mlp\\.down"], "int-quantized",
                        dict(num_bits=8, type="int", symmetric=True, strategy="channel")),
            "group_2": (["model.layers.1.self_attn.o_proj"], "float-quantized",
                        dict(num_bits=8, type="float", symmetric=True, strategy="channel")),
        },
        ignore=["lm_head", "re:model\\.layers\\.0\\.mlp\\.up"]),
}
# Native FP8 (quant_method fp8): transformers' own FineGrainedFP8 quantizer (Fp8Quantize) writes
# it, transformers' own dequantizer (FineGrainedFP8Config(dequantize=True)) reads it back.
FP8_NATIVE = {"fp8_block128": (128, 128)}
SEED = 500
# The modules whose exact float32 dequantized weights go into dequantized.safetensors, for the C++
# test of weft's unpacking (three shapes: [128, 256], [128, 128], [32, 128]; all would make the
# dump larger than the checkpoint).
DUMPED_MODULES = ("model.layers.0.mlp.down_proj", "model.layers.1.self_attn.o_proj",
                  "model.layers.1.self_attn.k_proj")

# GPTQ and AWQ: name -> settings. Written with gptqmodel's own packers (packing_utils.py, a
# standalone torch module of the gptqmodel sdist: --gptqmodel-src), since neither transformers nor
# gptqmodel load these formats on a CPU without gptqmodel's compiled kernels.
GPTQ_AWQ = {
    # v1 ("gptq") zeros stored minus one, symmetric (zero 8), group 64 -> weft i4g64.
    "gptq_int4_g64_sym": dict(method="gptq", bits=4, group_size=64, sym=True, desc_act=False,
                              checkpoint_format="gptq"),
    # act-order: g_idx permutes the groups -> weft dequantizes to F32.
    "gptq_int4_g32_desc_act": dict(method="gptq", bits=4, group_size=32, sym=False, desc_act=True,
                                   checkpoint_format="gptq"),
    # 8 bits, one group per row, gptqmodel's v2 zeros -> F32.
    "gptq_int8_per_row_v2": dict(method="gptq", bits=8, group_size=-1, sym=False, desc_act=False,
                             checkpoint_format="gptq_v2"),
    # AWQ gemm, group 32 -> weft q4_1.
    "awq_int4_g32": dict(method="awq", bits=4, group_size=32),
}


def linear_modules(model):
    return [(name, m) for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and name != "lm_head"]


def qparams(weight, args):
    """Scale and zero point of `weight` [out, in] under args, from the package's own formula."""
    w = weight.float()
    if args.strategy == "group":
        g = w.reshape(w.shape[0], -1, args.group_size)
        mins, maxs = g.amin(dim=-1), g.amax(dim=-1)
    elif args.strategy == "tensor":
        mins, maxs = w.amin().reshape(1), w.amax().reshape(1)
    else:  # channel
        mins, maxs = w.amin(dim=-1, keepdim=True), w.amax(dim=-1, keepdim=True)
    scale, zero = calculate_qparams(mins, maxs, args)
    return scale.to(weight.dtype), zero


def new_model(name, dtype):
    """The output directory (emptied) and the seeded random Llama in `dtype`."""
    out = MODELS / name
    if out.exists():
        shutil.rmtree(out)
    torch.manual_seed(SEED)
    config = LlamaConfig(**CONFIG)
    config.architectures = ["LlamaForCausalLM"]
    model = LlamaForCausalLM(config).eval()
    golden.init_weights(model, SEED)
    return out, config, model.to(dtype)


def save_checkpoint(out, model, quantization_config, torch_dtype, state, dequantized):
    """config.json (with quantization_config), model.safetensors, generation_config.json and the
    DUMPED_MODULES' exact dequantized weights."""
    out.mkdir(parents=True)
    model.config.save_pretrained(out)
    cfg = json.loads((out / "config.json").read_text())
    cfg["quantization_config"] = quantization_config
    cfg["torch_dtype"] = torch_dtype
    (out / "config.json").write_text(json.dumps(cfg, indent=2, default=str) + "\n")
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    GenerationConfig(bos_token_id=golden.BOS_ID, eos_token_id=golden.EOS_ID,
                     do_sample=False).save_pretrained(out)
    save_file({k: v for k, v in dequantized.items() if k[:-len(".weight")] in DUMPED_MODULES},
              str(out / "dequantized.safetensors"),
              metadata={"generator": "tests/golden/hf_quant_generate.py"})


def use_exact_weights(name, ref, dequantized, stored_dtype):
    """transformers' own dequantized weights (`ref`, loaded from the checkpoint) must be the
    exact ones rounded to `stored_dtype` (it dequantizes in the scales' dtype); the reference
    then runs on the exact float32 values."""
    held = dict(ref.named_parameters())
    with torch.no_grad():
        for key, value in dequantized.items():
            assert torch.equal(held[key].to(stored_dtype), value.to(stored_dtype)), \
                f"{name}: transformers' {key} differs from the library's dequantization"
            held[key].copy_(value)


def save_reference(out, ref, prompts, info):
    """reference.safetensors (golden format) and reference.json; returns the margin stats."""
    tensors, stats = golden.compute_references(ref, prompts)
    save_file(tensors, str(out / "reference.safetensors"),
              metadata={"generator": "tests/golden/hf_quant_generate.py"})
    info = dict(info, seed=SEED, **stats, tensors=sorted(tensors),
                transformers_version=transformers.__version__, torch_version=torch.__version__)
    (out / "reference.json").write_text(json.dumps(info, indent=2) + "\n")
    print(f"{info['model']}: min greedy margin {stats['min_greedy_margin']:.4f}")
    return stats


COMPRESSORS = {"pack-quantized": PackedQuantizationCompressor,
               "int-quantized": IntQuantizationCompressor,
               "float-quantized": FloatQuantizationCompressor}


def compress_module(module, linear, scheme, fmt, state, dequantized):
    """Replaces `module`'s weight in `state` by the package's compression of it under `scheme` in
    format `fmt`, and records its exact float32 dequantization in `dequantized`."""
    scale, zero = qparams(linear.weight.data, scheme.weights)
    local = {"weight": linear.weight.data, "weight_scale": scale, "weight_zero_point": zero}
    compressor = COMPRESSORS[fmt]
    packed = compressor.compress(local, scheme)
    del state[module + ".weight"]
    for key, value in packed.items():
        state[f"{module}.{key}"] = value.contiguous()
    # The package's own decompress, with the scale in float32 so that (q - zero) * scale is
    # exact (in the checkpoint's bfloat16 the product would be rounded to 8 bits).
    exact = dict(packed)
    exact["weight_scale"] = packed["weight_scale"].float()
    back = compressor.decompress(exact, scheme)["weight"]
    assert back.dtype == torch.float32
    dequantized[module + ".weight"] = back.contiguous()


def llama_over(config, model, dequantized):
    """transformers' Llama in float32, eager attention, with `model`'s weights and the exact
    dequantized linear weights in place of the packed ones."""
    ref = LlamaForCausalLM(config).eval()
    ref.config._attn_implementation = "eager"
    with torch.no_grad():
        dense = {k: v.float() for k, v in model.state_dict().items()}
        dense.update(dequantized)
        ref.load_state_dict(dense)
    return ref.float()


def write_checkpoint(name, fmt, args_dict, prompts):
    out, config, model = new_model(name, torch.bfloat16)
    args = QuantizationArgs(**args_dict)
    scheme = QuantizationScheme(targets=["Linear"], weights=args)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    dequantized = {}
    for module, linear in linear_modules(model):
        compress_module(module, linear, scheme, fmt, state, dequantized)
    qc = QuantizationConfig(config_groups={"group_0": scheme}, format=fmt,
                            quant_method="compressed-tensors", ignore=["lm_head"],
                            quantization_status="compressed")
    save_checkpoint(out, model, qc.to_dict(), "bfloat16", state, dequantized)
    # transformers reads the packed checkpoint itself and decompresses it.
    ref = AutoModelForCausalLM.from_pretrained(
        out, quantization_config=CompressedTensorsConfig(run_compressed=False),
        dtype=torch.float32, attn_implementation="eager").eval().float()
    use_exact_weights(name, ref, dequantized, torch.bfloat16)
    original = {k: v.float() for k, v in model.state_dict().items()}
    weight_err = max((original[k] - v).abs().max().item() for k, v in dequantized.items())
    save_reference(out, ref, prompts, dict(
        model=name, format=fmt, weights=args_dict,
        reference="transformers from_pretrained (CompressedTensorsConfig(run_compressed="
                  "False)) in float32, eager attention, its linear weights replaced by "
                  "the exact float32 (q - zero) * scale of compressed-tensors' decompress "
                  "(transformers' own are those rounded to bfloat16; checked)",
        max_abs_quantization_error_of_weights=weight_err,
        compressed_tensors_version=compressed_tensors.__version__))


def write_mixed_checkpoint(name, spec, prompts):
    from compressed_tensors.utils.match import is_match, match_targets
    out, config, model = new_model(name, torch.bfloat16)
    schemes, target_to_group = {}, {}
    for group, (targets, fmt, args_dict) in spec["groups"].items():
        schemes[group] = QuantizationScheme(targets=targets, weights=QuantizationArgs(**args_dict),
                                            format=fmt)
        for target in targets:
            target_to_group[target] = group
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    dequantized, assignment = {}, {}
    for module, linear in linear_modules(model):
        if is_match(module, linear, spec["ignore"]):
            assignment[module] = "dense"
            continue
        matched = match_targets(module, linear, target_to_group)
        group = target_to_group[matched[0]]
        scheme = schemes[group]
        assignment[module] = group
        compress_module(module, linear, scheme, scheme.format, state, dequantized)
    assert set(assignment.values()) == {"dense", *spec["groups"]}, assignment
    qc = QuantizationConfig(config_groups=schemes, format="mixed-precision",
                            quant_method="compressed-tensors", ignore=spec["ignore"],
                            quantization_status="compressed")
    # The package's own assignment of schemes to modules (apply_quantization_config, which
    # llm-compressor runs before it compresses) must agree with the one above.
    probe = LlamaForCausalLM(config).eval()
    apply_quantization_config(probe, qc)
    for module, linear in linear_modules(probe):
        held = getattr(linear, "quantization_scheme", None)
        expected = assignment[module]
        assert (held is None) == (expected == "dense"), module
        assert held is None or held.targets == schemes[expected].targets, module
    save_checkpoint(out, model, qc.to_dict(), "bfloat16", state, dequantized)
    # transformers 5.25 reads every dense module of a mixed checkpoint with one group's scheme
    # (integrations/compressed_tensors.py get_dense_scheme), so it cannot load this one: the
    # reference is transformers' Llama in float32 over compressed-tensors' own decompression of
    # each module with its group's compressor (as write_gptq_awq does for its packers).
    ref = llama_over(config, model, dequantized)
    save_reference(out, ref, prompts, dict(
        model=name, format="mixed-precision",
        groups={g: dict(targets=t, format=f, weights=a) for g, (t, f, a) in spec["groups"].items()},
        ignore=spec["ignore"], module_groups=assignment,
        reference="transformers LlamaForCausalLM in float32, eager attention, over the exact "
                  "float32 weights of compressed-tensors' decompress, each module with the "
                  "compressor of the group compressed-tensors' match_targets assigns it "
                  "(checked against apply_quantization_config)",
        compressed_tensors_version=compressed_tensors.__version__))


def load_packing_utils(src):
    """gptqmodel/quantization/awq/utils/packing_utils.py of the gptqmodel sdist (torch only)."""
    import importlib.util
    path = Path(src) / "gptqmodel/quantization/awq/utils/packing_utils.py"
    spec = importlib.util.spec_from_file_location("gptqmodel_packing_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quantize_groups(w, bits, group_of, groups, sym):
    """Min/max quantization of w [out, in] (float32) per (row, group): codes, zeros, f16 scales."""
    maxq = (1 << bits) - 1
    out = w.shape[0]
    scales = torch.zeros(groups, out)
    zeros = torch.zeros(groups, out, dtype=torch.int64)
    codes = torch.zeros(w.shape, dtype=torch.int64)
    for g in range(groups):
        cols = (group_of == g).nonzero().flatten()
        block = w[:, cols]
        lo = torch.minimum(block.amin(dim=1), torch.zeros(out))
        hi = torch.maximum(block.amax(dim=1), torch.zeros(out))
        if sym:
            scale = (2 * torch.maximum(lo.abs(), hi) / maxq).clamp(min=1e-5)
            zero = torch.full((out,), (maxq + 1) // 2, dtype=torch.int64)
        else:
            scale = ((hi - lo) / maxq).clamp(min=1e-5)
        scale = scale.half().float()  # stored in f16; quantize with the stored value
        if not sym:
            zero = torch.clamp(torch.round(-lo / scale), 0, maxq).to(torch.int64)
        q = torch.clamp(torch.round(block / scale[:, None]) + zero[:, None], 0, maxq)
        codes[:, cols] = q.to(torch.int64)
        scales[g], zeros[g] = scale, zero
    return codes, zeros, scales


def pack_gptq_awq(name, settings, model, packing):
    """{tensor: value} of the packed checkpoint and {module.weight: exact float32 dequantized}."""
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    dequantized = {}
    g = torch.Generator().manual_seed(SEED)
    bits, group_size = settings["bits"], settings["group_size"]
    for module, linear in linear_modules(model):
        w = linear.weight.data.float()
        out, inp = w.shape
        gs = inp if group_size == -1 else group_size
        groups = inp // gs
        if settings.get("desc_act"):
            # act-order: columns are quantized in a permuted order, the groups cut along it.
            perm = torch.randperm(inp, generator=g)
            group_of = torch.empty(inp, dtype=torch.int64)
            group_of[perm] = torch.arange(inp) // gs
        else:
            group_of = torch.arange(inp) // gs
        sym = settings.get("sym", False)
        codes, zeros, scales = quantize_groups(w, bits, group_of, groups, sym)
        exact = scales[group_of].T * (codes - zeros[group_of].T).float()  # [out, in]
        dequantized[module + ".weight"] = exact.contiguous()
        del state[module + ".weight"]
        if settings["method"] == "awq":
            # AutoAWQ layout: qweight [in, out/8], qzeros [groups, out/8], the 0 2 4 6 1 3 5 7
            # interleave; gptqmodel's own packer and dequantizer.
            qweight, qzeros = packing.pack_awq(codes.T.contiguous().to(torch.int32),
                                               zeros.to(torch.int32), bits)
            back = packing.dequantize_gemm(qweight, qzeros, scales.half(), bits, gs)
            assert torch.equal(back.T, exact.half()), f"{name}: {module} does not round-trip"
        else:
            stored_zeros = zeros - (1 if settings["checkpoint_format"] == "gptq" else 0)
            # GPTQ layout: qweight [in / (32/bits), out] packed along the input, qzeros
            # [groups, out / (32/bits)] along the output (gptqmodel's pack_exllama).
            qweight, qzeros = packing.pack_exllama(codes.T.contiguous().to(torch.int32),
                                                   stored_zeros.to(torch.int32), bits)
            state[module + ".g_idx"] = group_of.to(torch.int32)
            assert torch.equal(unpack_gptq(qweight, qzeros, scales, group_of, bits,
                                           settings["checkpoint_format"]), exact), \
                f"{name}: {module} does not round-trip"
        state[module + ".qweight"] = qweight.contiguous()
        state[module + ".qzeros"] = qzeros.contiguous()
        state[module + ".scales"] = scales.half().contiguous()
    return state, dequantized


def unpack_gptq(qweight, qzeros, scales, group_of, bits, checkpoint_format):
    """GPTQ's dequantization as gptqmodel's dequantize_weight computes it (v1: + 1 per field)."""
    per_word, maxq = 32 // bits, (1 << bits) - 1
    shifts = torch.arange(0, 32, bits)
    if checkpoint_format == "gptq":
        offset = sum(1 << int(s) for s in shifts)
        qzeros = (qzeros.to(torch.int64) + offset) & 0xFFFFFFFF
    zeros = (qzeros.to(torch.int64)[:, :, None] >> shifts[None, None, :]) & maxq
    zeros = zeros.reshape(qzeros.shape[0], -1)
    codes = (qweight.to(torch.int64)[:, None, :] >> shifts[None, :, None]) & maxq
    codes = codes.reshape(-1, qweight.shape[1])  # [in, out]
    return (scales[group_of] * (codes - zeros[group_of]).float()).T


def write_gptq_awq(name, settings, prompts, packing):
    out, config, model = new_model(name, torch.float16)
    state, dequantized = pack_gptq_awq(name, settings, model, packing)
    if settings["method"] == "awq":
        qc = dict(quant_method="awq", bits=4, group_size=settings["group_size"], zero_point=True,
                  version="gemm", modules_to_not_convert=None)
    else:
        qc = dict(quant_method="gptq", bits=settings["bits"], group_size=settings["group_size"],
                  desc_act=settings["desc_act"], sym=settings["sym"], damp_percent=0.01,
                  static_groups=False, true_sequential=True,
                  checkpoint_format=settings["checkpoint_format"])
    save_checkpoint(out, model, qc, "float16", state, dequantized)
    # Reference: transformers' Llama in float32 with the exact dequantized linear weights.
    ref = llama_over(config, model, dequantized)
    save_reference(out, ref, prompts, dict(
        model=name, settings=settings,
        packer="gptqmodel 7.7.0 packing_utils (pack_exllama / pack_awq)",
        reference="transformers LlamaForCausalLM in float32, eager attention, over the "
                  "exact float32 dequantized weights scale * (q - zero)"))


def write_fp8_native(name, block, prompts):
    from types import SimpleNamespace
    from transformers import FineGrainedFP8Config
    from transformers.integrations.finegrained_fp8 import Fp8Quantize
    out, config, model = new_model(name, torch.bfloat16)
    quantizer = Fp8Quantize(SimpleNamespace(quantization_config=SimpleNamespace(
        weight_block_size=block, scale_fmt=None)))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    dequantized = {}
    for module, linear in linear_modules(model):
        packed = quantizer._quantize_one(module + ".weight", linear.weight.data)
        if len(packed) == 1:
            continue  # a shape the blocks do not tile stays dense (transformers' rule)
        w8, inv = packed[module + ".weight"], packed[module + ".weight_scale_inv"]
        state[module + ".weight"] = w8.contiguous()
        state[module + ".weight_scale_inv"] = inv.contiguous()
        rows, cols = w8.shape
        s = inv.repeat_interleave(block[0], 0)[:rows].repeat_interleave(block[1], 1)[:, :cols]
        dequantized[module + ".weight"] = (w8.float() * s).contiguous()
    qc = dict(quant_method="fp8", fmt="e4m3", activation_scheme="dynamic",
              weight_block_size=list(block), modules_to_not_convert=["lm_head"])
    save_checkpoint(out, model, qc, "bfloat16", state, dequantized)
    ref = AutoModelForCausalLM.from_pretrained(
        out, quantization_config=FineGrainedFP8Config(dequantize=True, weight_block_size=block),
        dtype=torch.float32, attn_implementation="eager").eval().float()
    # transformers' dequantization: fp8 * scale in float32, then the model's bfloat16.
    use_exact_weights(name, ref, dequantized, torch.bfloat16)
    save_reference(out, ref, prompts, dict(
        model=name, weight_block_size=list(block),
        quantized_modules=sorted(k[:-len(".weight")] for k in dequantized),
        reference="transformers from_pretrained (FineGrainedFP8Config(dequantize=True)) "
                  "in float32, eager attention, linear weights replaced by the exact "
                  "float32 fp8 * weight_scale_inv (checked against transformers' own)"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--gptqmodel-src", default="/tmp/gptqdl/gptqmodel-7.7.0",
                        help="unpacked gptqmodel sdist (pip download gptqmodel==7.7.0 --no-deps)")
    a = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    prompts = golden.make_prompts()
    for name, (fmt, args_dict) in CHECKPOINTS.items():
        if a.only and name not in a.only:
            continue
        write_checkpoint(name, fmt, args_dict, prompts)
    for name, spec in MIXED.items():
        if a.only and name not in a.only:
            continue
        write_mixed_checkpoint(name, spec, prompts)
    for name, block in FP8_NATIVE.items():
        if a.only and name not in a.only:
            continue
        write_fp8_native(name, block, prompts)
    packing = None
    for name, settings in GPTQ_AWQ.items():
        if a.only and name not in a.only:
            continue
        packing = packing or load_packing_utils(a.gptqmodel_src)
        write_gptq_awq(name, settings, prompts, packing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
