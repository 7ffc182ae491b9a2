#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) from the repository's
fixtures and a few hand-written inputs. Deterministic; rerun after changing it and commit the
result. Regression inputs (crashes found by fuzzing) are committed by hand as corpus/<target>/
regression-*, which this script never removes.

    python3 tests/fuzz/make_seeds.py
"""
import glob
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def clear(target):
    d = os.path.join(CORPUS, target)
    for p in glob.glob(os.path.join(d, "seed-*")):
        os.remove(p)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# --- safetensors -------------------------------------------------------------------------------
def safetensors(header, data=b"", pad=True):
    text = header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))
    text = text.encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def seeds_safetensors():
    t = "safetensors"
    clear(t)
    write(t, "seed-reference", read("tests/unit/model/fixtures/reference.safetensors"))
    f32 = struct.pack("<6f", *range(6))
    write(t, "seed-two", safetensors(
        {"__metadata__": {"format": "pt"},
         "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
         "b": {"dtype": "BF16", "shape": [2], "data_offsets": [24, 28]}}, f32 + b"\0\0\0\0"))
    write(t, "seed-all-dtypes", safetensors(
        {"f16": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]},
         "i8": {"dtype": "I8", "shape": [1, 1, 1, 1], "data_offsets": [2, 3]},
         "u8": {"dtype": "U8", "shape": [], "data_offsets": [3, 4]},
         "i32": {"dtype": "I32", "shape": [1], "data_offsets": [4, 8]},
         "i64": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]},
         "empty": {"dtype": "F32", "shape": [0, 5], "data_offsets": [16, 16]}}, bytes(16)))
    write(t, "seed-empty-header", safetensors("{}"))
    write(t, "seed-overlap", safetensors(
        {"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
         "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, bytes(8)))
    write(t, "seed-gap", safetensors(
        {"a": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}}, bytes(8)))
    write(t, "seed-bad-length", struct.pack("<Q", 1 << 40) + b"{}")


# --- model.safetensors.index.json ---------------------------------------------------------------
def seeds_weight_index():
    t = "weight_index"
    clear(t)
    write(t, "seed-valid", json.dumps({"metadata": {"total_size": 64},
                                       "weight_map": {"x": "a.safetensors", "y": "a.safetensors",
                                                      "z": "b.safetensors"}}, indent=2))
    write(t, "seed-one-shard", '{"weight_map": {"x": "a.safetensors"}}')
    write(t, "seed-missing-shard", '{"weight_map": {"x": "c.safetensors"}}')
    write(t, "seed-wrong-shard", '{"weight_map": {"z": "a.safetensors"}}')
    write(t, "seed-path", '{"weight_map": {"x": "../a.safetensors", "y": "/a.safetensors"}}')
    write(t, "seed-duplicate", '{"weight_map": {"x": "a.safetensors", "x": "b.safetensors"}}')


# --- config.json / generation_config.json --------------------------------------------------------
def seeds_model_config():
    t = "model_config"
    clear(t)
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/golden/models/*/*config.json"))):
        model = os.path.basename(os.path.dirname(path))
        write(t, "seed-%s-%s" % (model, os.path.basename(path).replace(".json", "")),
              open(path, "rb").read())
    write(t, "seed-llama3-rope", json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128,
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
        "rope_theta": 500000.0, "eos_token_id": [1, 2], "bos_token_id": 0,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"}))
    write(t, "seed-rope-parameters", json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "vocab_size": 100, "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
        "num_key_value_heads": 4, "head_dim": 8, "max_position_embeddings": 64,
        "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6},
        "use_sliding_window": True, "sliding_window": 32, "dtype": "float16"}))


# --- sampling params ----------------------------------------------------------------------------
def seeds_sampling_params():
    t = "sampling_params"
    clear(t)
    bodies = [
        {"model": "m", "prompt": "hi", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9},
        {"n": 2, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "presence_penalty": 0.5,
         "frequency_penalty": -0.5, "seed": -1, "stop": ["\n", "END"], "stop_token_ids": [2, 3],
         "logit_bias": {"50256": -100, "7": 2.5}, "max_completion_tokens": 8, "min_tokens": 2,
         "ignore_eos": True, "skip_special_tokens": False, "logprobs": 5},
        {"stop": "x", "temperature": 0, "seed": 18446744073709551615},
        {"temperature": None, "top_p": None, "logit_bias": None},
        {"logprobs": True, "top_k": 1.5},
        [],
    ]
    for i, b in enumerate(bodies):
        write(t, "seed-%d" % i, json.dumps(b))


# --- step plan protobufs ------------------------------------------------------------------------
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 2:
        return key + varint(len(payload)) + payload
    if wire == 5:
        return key + payload
    raise ValueError(wire)


def packed(num, values):
    return field(num, 2, b"".join(varint(v) for v in values))


def chunk(seq, tokens, start, blocks, logits):
    return (field(1, 0, seq) + packed(2, tokens) + field(3, 0, start) + packed(4, blocks)
            + field(5, 0, logits))


def plan(step, chunks):
    return field(1, 0, step) + b"".join(field(2, 2, c) for c in chunks)


def seeds_step_plan():
    t = "step_plan"
    clear(t)
    p = plan(7, [chunk(1, [1, 2, 3, 4], 0, [0], 1), chunk(2, [9], 15, [1, 2], 2),
                 chunk(3, [5, 6], 3, [3], 0)])
    write(t, "seed-plan", p)
    write(t, "seed-control-step", field(1, 0, 1) + field(2, 2, p))
    write(t, "seed-control-shutdown", field(1, 0, 2))
    logits = struct.pack("<6f", 0.5, -1.0, 2.0, 0.0, 1e30, -1e-30)
    sampled = field(1, 0, 1) + field(2, 0, 42) + field(3, 5, struct.pack("<f", -0.25))
    write(t, "seed-result", field(1, 0, 7) + field(2, 0, 2) + field(3, 0, 3)
          + field(4, 2, logits) + field(5, 2, sampled))
    write(t, "seed-result-error", field(1, 0, 8) + field(6, 2, b"rank 1: out of memory"))
    write(t, "seed-plan-negative", plan(1, [chunk(-1, [-5], -1, [-1], 7)]))


# --- tokenizer.json -----------------------------------------------------------------------------
def small_tokenizer(name, keep):
    """The fixture's tokenizer.json with the vocabulary cut to ids < keep and the merges that
    stay inside it: the same pipeline (normalizer, pre-tokenizer, decoder, post-processor,
    added tokens) in a few kilobytes."""
    tj = json.loads(read("tests/tokenizer_data/fixtures/%s/tokenizer.json" % name))
    model = tj["model"]
    vocab = {k: v for k, v in model["vocab"].items() if v < keep}
    merges = []
    for m in model["merges"]:
        a, b = m.split(" ", 1) if isinstance(m, str) else m
        if a in vocab and b in vocab and (a + b) in vocab:
            merges.append(m)
    model["vocab"] = vocab
    model["merges"] = merges
    tj["added_tokens"] = tj["added_tokens"][:6]
    config = json.loads(read("tests/tokenizer_data/fixtures/%s/tokenizer_config.json" % name))
    config.pop("chat_template", None)
    config.pop("added_tokens_decoder", None)
    return (json.dumps(tj, ensure_ascii=False, separators=(",", ":")),
            json.dumps(config, ensure_ascii=False, separators=(",", ":")))


def seeds_tokenizer_load():
    t = "tokenizer_load"
    clear(t)
    for name, keep in (("qwen3", 300), ("llama2", 300), ("deepseek_v3", 300)):
        tok, config = small_tokenizer(name, keep)
        write(t, "seed-%s" % name, tok)
        write(t, "seed-%s-config" % name, tok + "\0" + config)
    write(t, "seed-minimal", json.dumps({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2},
                                                   "merges": ["a b"]}}))
    write(t, "seed-added", json.dumps({
        "added_tokens": [{"id": 3, "content": "<x>", "special": True, "single_word": False,
                          "lstrip": True, "rstrip": False, "normalized": False}],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first"},
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]],
                  "unk_token": None}}) + "\0" + json.dumps({"bos_token": {"content": "<x>"},
                                                           "chat_template": [{"name": "default", "template": "x"}]}))


# --- encode / decode ----------------------------------------------------------------------------
def seeds_tokenizer_encode():
    t = "tokenizer_encode"
    clear(t)
    texts = [
        "Hello, world! How are you doing today?",
        "def f(x):\n    return x ** 2  # comment\n\n\n",
        "\u4e2d\u6587\u6587\u672c\u548c\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 12345678",
        "emoji \U0001F600\U0001F44D\U0001F3FD  tabs\t\tand   spaces",
        "<|im_start|>user\nhi<|im_end|>\n<s>[INST] x [/INST]</s><\uff5cbegin\u2581of\u2581sentence\uff5c>",
        "caf\u00e9 cafe\u0301 \ufb01 \u2126 I'm we've they'LL",
    ]
    for tok in range(3):
        for i, text in enumerate(texts):
            write(t, "seed-enc-%d-%d" % (tok, i), bytes([tok | (4 if i % 2 else 0)]) + text.encode())
        write(t, "seed-bad-utf8-%d" % tok, bytes([tok]) + b"ab\xff\xc3(\xed\xa0\x80")
        ids = [1, 2, 3, 13, 100, 259, 0x2581, 29871, 151643, 151644, 128000, 3 | 0x80000000]
        byte_ids = list(range(3, 3 + 256, 17))  # llama2's <0xHH> byte tokens
        write(t, "seed-dec-%d" % tok, bytes([tok | 8]) + struct.pack("<%dI" % len(ids), *ids))
        write(t, "seed-dec-bytes-%d" % tok, bytes([tok | 8 | 4]) + struct.pack(
            "<%dI" % len(byte_ids), *byte_ids))


# --- chat templates -----------------------------------------------------------------------------
def seeds_chat_template():
    t = "chat_template"
    clear(t)
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/unit/chat_template/data/templates/*.jinja"))):
        write(t, "seed-" + os.path.basename(path), open(path, "rb").read())
    for name in ("qwen3", "deepseek_v3"):
        config = json.loads(read("tests/tokenizer_data/fixtures/%s/tokenizer_config.json" % name))
        write(t, "seed-" + name, config["chat_template"])
    write(t, "seed-macro", "{% macro m(a, b=2) %}{{ a ~ b }}{% if a > 0 %}{{ m(a - 1) }}{% endif %}"
          "{% endmacro %}{{ m(3) }}{% set ns = namespace(x=[]) %}{% for i in range(3) %}"
          "{% set ns.x = ns.x + [i] %}{% endfor %}{{ ns.x | tojson }}{{ 'a,b'.split(',') | join('-') }}"
          "{% filter upper %}x{% endfilter %}{{ messages | selectattr('role', 'equalto', 'user') | list | length }}")


def seeds_chat_messages():
    t = "chat_messages"
    clear(t)
    convs = [
        [{"role": "user", "content": "Hello"}],
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "a"},
         {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
        [{"role": "user", "content": "call"},
         {"role": "assistant", "content": None, "tool_calls": [
             {"type": "function", "function": {"name": "get", "arguments": "{\"a\": 1}"}}]},
         {"role": "tool", "content": "42"}],
        [{"role": "assistant", "content": "<think>x</think>y", "reasoning_content": "x"}],
        [{"role": "user", "content": [{"type": "text", "text": "t"}]}],
        {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function":
                      {"name": "f", "parameters": {}}}], "enable_thinking": False},
    ]
    for tmpl in range(7):
        for i, conv in enumerate(convs):
            write(t, "seed-%d-%d" % (tmpl, i), bytes([tmpl | (0x80 if i % 2 else 0)]) + json.dumps(conv).encode())
        write(t, "seed-raw-%d" % tmpl, bytes([tmpl]) + b"raw {{ content }} {% if %} <|im_end|>")


# --- gguf ------------------------------------------------------------------------------------------
def gguf_string(text):
    b = text.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf(metadata, tensors, data):
    """metadata: [(key, type id, packed value bytes)]; tensors: [(name, ne list, ggml type, offset)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, type_id, value in metadata:
        out += gguf_string(key) + struct.pack("<I", type_id) + value
    for name, ne, ggml_type, offset in tensors:
        out += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ggml_type, offset)
    out += b"\0" * ((32 - len(out) % 32) % 32)
    return out + data


def gguf_strings(items):
    return struct.pack("<IQ", 8, len(items)) + b"".join(gguf_string(t) for t in items)


def seeds_gguf():
    t = "gguf"
    clear(t)
    u32 = lambda v: struct.pack("<I", v)  # noqa: E731
    f32 = lambda v: struct.pack("<f", v)  # noqa: E731
    tokens = ["<|endoftext|>", "a", "b", "ab", "\u0120a"]
    llama = [("general.architecture", 8, gguf_string("llama")), ("llama.block_count", 4, u32(1)),
             ("llama.embedding_length", 4, u32(32)), ("llama.feed_forward_length", 4, u32(64)),
             ("llama.attention.head_count", 4, u32(2)), ("llama.attention.head_count_kv", 4, u32(1)),
             ("llama.attention.layer_norm_rms_epsilon", 6, f32(1e-5)),
             ("llama.context_length", 4, u32(64)),
             ("tokenizer.ggml.model", 8, gguf_string("gpt2")),
             ("tokenizer.ggml.pre", 8, gguf_string("qwen2")),
             ("tokenizer.ggml.tokens", 9, gguf_strings(tokens)),
             ("tokenizer.ggml.merges", 9, gguf_strings(["a b"])),
             ("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, 5) + b"".join(u32(x) for x in [3, 1, 1, 1, 1])),
             ("tokenizer.ggml.eos_token_id", 4, u32(0)),
             ("tokenizer.chat_template", 8, gguf_string("{{ messages[0]['content'] }}"))]
    norm = struct.pack("<32f", *([1.0] * 32))
    write(t, "seed-llama-f32", gguf(llama, [("output_norm.weight", [32], 0, 0),
                                            ("blk.0.attn_q.weight", [32, 32], 1, 128)],
                                    norm + b"\0" * 2048))
    q8_block = struct.pack("<e", 0.5) + bytes(range(32))
    write(t, "seed-q8_0", gguf(llama[:1], [("token_embd.weight", [32, 3], 8, 0)], q8_block * 3))
    q4k_block = bytes(144)
    write(t, "seed-q4_k", gguf(llama[:1], [("blk.0.ffn_up.weight", [256, 2], 12, 0)], q4k_block * 2))
    write(t, "seed-metadata-only", gguf(llama, [], b""))


if __name__ == "__main__":
    seeds_gguf()
    seeds_safetensors()
    seeds_weight_index()
    seeds_model_config()
    seeds_sampling_params()
    seeds_step_plan()
    seeds_tokenizer_load()
    seeds_tokenizer_encode()
    seeds_chat_template()
    seeds_chat_messages()
