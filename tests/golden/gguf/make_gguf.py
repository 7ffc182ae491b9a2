#!/usr/bin/env python3
"""Writes the GGUF test models and their transformers reference dumps (run once; outputs committed).

1. A small random Llama (2 layers, hidden 128, 4 heads / 2 kv heads) with configs/default-model's
   byte-level BPE tokenizer and chat template, saved by transformers.
2. llama.cpp's own converter (convert_hf_to_gguf.py from the llama.cpp tree bench/peers fetches)
   writes it as GGUF F16 (rope-permuted q/k rows, tokenizer metadata, chat template). Its
   pre-tokenizer check only knows published vocabularies, so it is told this one is "gpt-2"
   (what the tokenizer.json says: GPT-2's ByteLevel split); nothing else is changed.
3. gguf-py (llama.cpp's own Python package) re-quantizes that file's 2-D weights to each block type
   weft reads (token_embd to Q8_0, like published files), writing one more file per type.
4. transformers opens every file (`from_pretrained(dir, gguf_file=...)`, dequantized to F32) and
   records, per prompt: the token ids, the greedy continuation and the top-5 logprobs of each step.

--spm writes the sentencepiece case instead (tiny_llama_spm.f16.gguf, spm_reference.json): a BPE
sentencepiece model with byte fallback, trained by sentencepiece itself on this repository's docs,
becomes the tokenizer.model of a small random Llama; llama.cpp's converter writes it the way it
writes Llama 2 / Mistral / TinyLlama files (tokenizer.ggml.model "llama": tokens, scores, token
types, no merges); transformers' ids for a corpus of awkward strings and its logits are the
reference.

  /work/refvenv/bin/python tests/golden/gguf/make_gguf.py [--llama-cpp DIR] [--spm]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
DEFAULT_LLAMA_CPP = Path.home() / ".cache/weft-peers/src/llama_cpp_python-0.3.36/vendor/llama.cpp"
PROMPTS = ["The capital of France is", "Hello world, 12345 tokens!", "<|user|>\nhi<|end|>\n"]
STEPS = 8
# file stem -> gguf-py quantization type of the 2-D weights (None: as converted, F16)
# (the other block types are checked by the kernel tests against gguf-py's dequantization).
VARIANTS = {"f16": None, "q8_0": "Q8_0", "q4_0": "Q4_0", "q4_1": "Q4_1"}
# --mixed: one type per tensor kind, as llama.cpp's Q4_K_M files mix them (its q/k fall back to
# Q5_0 where rows do not tile K-quant super-blocks, v and down take more bits): the parts of the
# fused q/k/v and gate/up projections differ in type.
MIXED = {"attn_q": "Q5_0", "attn_k": "Q5_0", "attn_v": "Q8_0", "attn_output": "Q4_1",
         "ffn_gate": "Q4_0", "ffn_up": "Q5_1", "ffn_down": "Q8_0"}


def random_llama(config):
    """A LlamaForCausalLM with weights larger than the init's 0.02, so that logits spread out."""
    import torch
    from transformers import LlamaForCausalLM
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.08)
        for layer in model.model.layers:
            layer.input_layernorm.weight.uniform_(0.8, 1.2)
            layer.post_attention_layernorm.weight.uniform_(0.8, 1.2)
        model.model.norm.weight.uniform_(0.8, 1.2)
    return model


def make_hf_model(out: Path):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=32, max_position_embeddings=512, rms_norm_eps=1e-5,
                         rope_theta=10000.0, tie_word_embeddings=True, bos_token_id=0,
                         eos_token_id=0, pad_token_id=0)
    random_llama(config).save_pretrained(out, safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(REPO / "configs/default-model" / name, out / name)


SPM_VOCAB = 1000
# Strings that stress a sentencepiece tokenizer: leading/trailing/multiple spaces, newlines and
# tabs, characters outside the vocabulary (byte fallback), special tokens in the text, digits.
SPM_TEXTS = ["Hello world", " Hello world", "  two leading spaces", "trailing space ", "a  b   c",
             "line one\nline two\n\nafter a blank", "tab\tseparated\tvalues", "", " ", "\n",
             "caf\u00e9 na\u00efve r\u00e9sum\u00e9", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
             "emoji \U0001F600 and \U0001F680!", "<s>literal special</s> tokens", "12345 67890 3.14159",
             "weft serves large language models across many GPUs.",
             "The tensor parallel group splits each layer; the pipeline splits the layers.",
             "\u2581already a metaspace", "mixed\u00a0nbsp and \u200bzero width"]


def make_spm_hf_model(out: Path):
    """A small random Llama whose tokenizer.model is a sentencepiece BPE trained here."""
    import sentencepiece as spm
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    out.mkdir(parents=True)
    corpus = out / "corpus.txt"
    lines = []
    for doc in ["README.md", "docs/architecture.md"]:
        lines += (REPO / doc).read_text(encoding="utf-8").splitlines()
    lines += ["caf\u00e9 r\u00e9sum\u00e9 na\u00efve \u00e9t\u00e9"] * 20
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(out / "tokenizer"), model_type="bpe",
        vocab_size=SPM_VOCAB, byte_fallback=True, character_coverage=1.0, num_threads=1,
        split_digits=True, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", bos_id=1, eos_id=2, unk_id=0, pad_id=-1)
    corpus.unlink()
    (out / "tokenizer.vocab").unlink()
    torch.manual_seed(1)
    config = LlamaConfig(vocab_size=SPM_VOCAB, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-5,
                         rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1,
                         eos_token_id=2)
    random_llama(config).save_pretrained(out, safe_serialization=True)
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
         "unk_token": "<unk>", "add_bos_token": True, "add_eos_token": False}))


def spm_tokenization_reference(gguf_path: Path) -> list:
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    cases = []
    for text in SPM_TEXTS:
        for add_special in (True, False):
            ids = tok.encode(text, add_special_tokens=add_special)
            cases.append({"text": text, "add_special_tokens": add_special, "ids": ids,
                          "decoded": tok.decode(ids, skip_special_tokens=False)})
    return cases


def convert(llama_cpp: Path, hf_dir: Path, out: Path):
    wrapper = (
        "import sys; sys.path.insert(0, {gguf!r}); sys.path.insert(0, {root!r});\n"
        "import conversion.base as base\n"
        "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
        "import convert_hf_to_gguf; sys.argv = ['convert', {src!r}, '--outtype', 'f16', "
        "'--outfile', {out!r}]; convert_hf_to_gguf.main()\n").format(
            gguf=str(llama_cpp / "gguf-py"), root=str(llama_cpp), src=str(hf_dir), out=str(out))
    subprocess.run([sys.executable, "-c", wrapper], check=True, cwd=llama_cpp)


def requantize(llama_cpp: Path, source: Path, out: Path, qtype):
    """qtype: one gguf-py type name for every 2-D weight, or a function of the tensor name."""
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    import numpy as np
    import gguf
    reader = gguf.GGUFReader(source)
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(out, arch)
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == "general.architecture":
            continue
        value_type = field.types[0]
        if value_type == gguf.GGUFValueType.ARRAY:
            writer.add_array(field.name, field.contents())
        else:
            writer.add_key_value(field.name, field.contents(), value_type)
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = [int(d) for d in reversed(t.shape)]  # outermost first
        values = values.reshape(shape)
        if values.ndim == 2:
            name = qtype(t.name) if callable(qtype) else qtype
            target = gguf.GGMLQuantizationType.Q8_0 if t.name == "token_embd.weight" else \
                gguf.GGMLQuantizationType[name]
            data = gguf.quants.quantize(values, target)
            writer.add_tensor(t.name, data, raw_shape=data.shape, raw_dtype=target)
        else:
            writer.add_tensor(t.name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


SMOLLM2_PROMPTS = ["The capital of France is",
                   "<|im_start|>user\nWhat is 2+2? Answer in one word.<|im_end|>\n<|im_start|>assistant\n",
                   "def fibonacci(n):\n    "]


def reference(gguf_path: Path, prompts=PROMPTS, steps_per_prompt=STEPS) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                 dtype=torch.float32)
    model.eval()
    cases = []
    for prompt in prompts:
        ids = tok.encode(prompt)
        seq = list(ids)
        steps = []
        with torch.no_grad():
            for _ in range(steps_per_prompt):
                logits = model(torch.tensor([seq])).logits[0, -1].double()
                logprobs = torch.log_softmax(logits, -1)
                top = torch.topk(logprobs, 5)
                token = int(top.indices[0])
                steps.append({"token": token,
                              "top5": [[int(i), float(v)] for v, i in zip(top.values, top.indices)]})
                seq.append(token)
        cases.append({"prompt": prompt, "ids": ids, "steps": steps})
    return {"file": gguf_path.name, "cases": cases}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", type=Path, default=DEFAULT_LLAMA_CPP)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--spm", action="store_true", help="write the sentencepiece case only")
    parser.add_argument("--mixed", action="store_true",
                        help="only add tiny_llama.mixed.gguf (MIXED, from the committed f16 file) and its "
                             "reference to reference.json")
    parser.add_argument("--smollm2", type=Path,
                        help="only write smollm2_reference.json for this file "
                             "(scripts/fetch-smollm2-gguf.sh prints its path)")
    args = parser.parse_args()
    if args.spm:
        with tempfile.TemporaryDirectory() as tmp:
            hf_dir = Path(tmp) / "hf"
            make_spm_hf_model(hf_dir)
            gguf_path = args.out / "tiny_llama_spm.f16.gguf"
            convert(args.llama_cpp, hf_dir, gguf_path)
        ref = reference(gguf_path, ["The capital of France is", " weft serves models", "caf\u00e9 \U0001F600"])
        ref["tokenize"] = spm_tokenization_reference(gguf_path)
        (args.out / "spm_reference.json").write_text(json.dumps({"f16": ref}, indent=1) + "\n")
        print(gguf_path, gguf_path.stat().st_size, "bytes")
        return
    if args.mixed:
        path = args.out / "tiny_llama.mixed.gguf"
        requantize(args.llama_cpp, args.out / "tiny_llama.f16.gguf", path,
                   lambda name: next((t for kind, t in MIXED.items() if f".{kind}." in name), "Q8_0"))
        refs = json.loads((args.out / "reference.json").read_text())
        refs["mixed"] = reference(path)
        (args.out / "reference.json").write_text(json.dumps(refs, indent=1) + "\n")
        print("mixed", path.stat().st_size, "bytes", refs["mixed"]["cases"][0]["steps"][0]["top5"][:2])
        return
    if args.smollm2:
        ref = reference(args.smollm2, SMOLLM2_PROMPTS, 16)
        (args.out / "smollm2_reference.json").write_text(json.dumps({"q4_1": ref}, indent=1) + "\n")
        return
    with tempfile.TemporaryDirectory() as tmp:
        hf_dir = Path(tmp) / "hf"
        make_hf_model(hf_dir)
        f16 = args.out / "tiny_llama.f16.gguf"
        convert(args.llama_cpp, hf_dir, f16)
        for stem, qtype in VARIANTS.items():
            if qtype:
                requantize(args.llama_cpp, f16, args.out / f"tiny_llama.{stem}.gguf", qtype)
    refs = {}
    for stem in VARIANTS:
        path = args.out / f"tiny_llama.{stem}.gguf"
        refs[stem] = reference(path)
        print(stem, path.stat().st_size, "bytes", refs[stem]["cases"][0]["steps"][0]["top5"][:2])
    (args.out / "reference.json").write_text(json.dumps(refs, indent=1) + "\n")


if __name__ == "__main__":
    main()
