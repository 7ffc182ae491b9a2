#!/usr/bin/env python3
"""Generates tests/tokenizer_data/reference.json: Hugging Face token ids and decodes for a corpus.

For every fixture tokenizer in fixtures/<name>/ and every corpus string it records what
`transformers.AutoTokenizer.from_pretrained(dir)` produces (the behaviour weft mirrors):
  ids          encode(text, add_special_tokens=True)
  ids_plain    encode(text, add_special_tokens=False)
  decode       decode(ids, skip_special_tokens=False)
  decode_skip  decode(ids, skip_special_tokens=True)
and, only where it differs, what the raw `tokenizers.Tokenizer.from_file(tokenizer.json)` gives
(raw_ids / raw_ids_plain), so readers can see where transformers rebuilds the pipeline.
It also records decodes of deterministic pseudo-random id sequences (byte tokens, special
tokens, split UTF-8) to exercise lossy UTF-8 handling.

Usage: python3 generate_reference.py   (needs pip tokenizers and transformers; CI does not)
"""
import json
import os
import random

from tokenizers import Tokenizer
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ["qwen3", "llama2", "deepseek_v3"]


def corpus():
    base = [
        "",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\n\n",
        "\n\n\n\n\n\n",
        "\r\n",
        "a\r\nb\r\n\r\nc",
        "Hello world",
        "Hello, world!",
        " Hello world",
        "  Hello  world  ",
        "hello\tworld\t\ttabs",
        "The quick brown fox jumps over the lazy dog.",
        "THE QUICK BROWN FOX",
        "I'm sure you'll see they've done it, we'd say. It's HE'S and I'LL",
        "don't won't can't shouldn't",
        "1",
        "12",
        "123",
        "1234",
        "12345678901234567890",
        "3.14159265358979",
        "Pi is 3.14, e is 2.718, and 1,000,000 is a million.",
        "0x1F 0b1010 1e-9 -42 +7",
        "Phone: +1 (555) 123-4567",
        "2024-01-15T12:34:56Z",
        "日本語のテキストです。",
        "中文测试，你好世界！",
        "汉字和かなとカタカナ混在テキスト",
        "한국어 텍스트입니다",
        "Ελληνικά κείμενα",
        "Русский текст с цифрами 123",
        "مرحبا بالعالم",
        "שלום עולם",
        "हिन्दी में पाठ",
        "ภาษาไทยไม่มีช่องว่าง",
        "Tiếng Việt có dấu",
        "e\u0301 cafe\u0301 re\u0301sume\u0301",
        "\u00c5ngstr\u00f6m A\u030angstro\u0308m",
        "\u1e9b\u0323 \u0071\u0307\u0323",
        "Z\u0351\u0368\u0364\u0300a\u0350\u036c\u0316l\u0300g\u0310o\u0352",
        "😀",
        "😀😃😄😁",
        "👍🏽 👍🏿 👋🏻",
        "👨‍👩‍👧‍👦 family",
        "🏳️‍🌈 flag and 🇯🇵🇺🇸",
        "emoji in text 🎉🎉 party!",
        "❤️ heart with variation selector",
        "def foo(x):\n    return x + 1\n",
        "int main() {\n\tprintf(\"hi\\n\");\n\treturn 0;\n}\n",
        "for (int i = 0; i < n; ++i) { a[i] *= 2; }",
        "    indented four\n        indented eight",
        "<html><body><p class=\"x\">Hi</p></body></html>",
        "SELECT * FROM users WHERE id = 42;",
        "https://example.com/path?query=1&b=two#frag",
        "mailto:someone@example.org",
        "C:\\Users\\name\\file.txt",
        "/usr/local/bin/python3 --version",
        "$ echo $HOME && ls -la | grep foo",
        "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>",
        "<|im_end|>",
        "<|endoftext|>",
        "text<|endoftext|>more",
        "<|im_start|><|im_end|>",
        "<s>",
        "</s>",
        "<s>Hello</s>",
        " <s> spaced </s> ",
        "<unk>",
        "<s><s></s></s>",
        "<｜begin▁of▁sentence｜>",
        "<｜begin▁of▁sentence｜>Hello<｜end▁of▁sentence｜>",
        "<｜User｜>Hi<｜Assistant｜>",
        "<think>\nreasoning\n</think>\n\nanswer",
        "<tool_call>{\"name\": \"f\"}</tool_call>",
        "<|im_start|> leading space inside",
        "▁already▁has▁metaspace",
        "▁",
        "▁▁ ▁",
        "Ġ Ċ ĉ",
        "!!!???...,,,;;;",
        "@#$%^&*()_+-=[]{}|\\:;\"'<>,.?/~`",
        "«quotes» „German“ ‘single’ “double”",
        "— – - ‐ ‑ ‒",
        "… ‥ ·",
        "\u00a0non\u00a0breaking\u00a0spaces\u00a0",
        "\u2003em\u2002en\u2009thin\u200bzero-width",
        "\u3000ideographic space\u3000",
        "\u200d\u200c joiners",
        "\ufeffBOM at start",
        "control \x01\x02\x7f chars",
        "\x00 null byte",
        "\ufffd replacement char",
        "mixed 中文 and English and 日本語 and 123",
        "ŧęşţ ŵįţħ ďįáçŗįţįçş",
        "ﬁ ligature ﬀ ﬃ",
        "Ⅻ ① ⑴ ㈱",
        "x² y³ H₂O",
        "½ ¾ ⅓",
        "∀x∈ℝ: x²≥0 ∑∫∂√∞",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙",
        "𠀀𠀁𠀂 rare CJK ext B",
        "ＦＵＬＬＷＩＤＴＨ ｆｕｌｌｗｉｄｔｈ",
        "ｶﾀｶﾅ halfwidth",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "abababababababababababababababababab",
        "                                        many spaces",
        "trailing spaces        ",
        "\t\t\tmixed \t \t whitespace\n \n",
        " \n \n ",
        "line1\nline2\n\nline4\r\nline5\rline6",
        "a" * 300,
        "word " * 100,
        "supercalifragilisticexpialidocious antidisestablishmentarianism",
        "camelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case",
        "JSON: {\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
        "Markdown **bold** _italic_ `code` [link](http://x.y)",
        "| col1 | col2 |\n|------|------|\n| a    | b    |",
        "$$\\frac{a}{b} + \\sqrt{x^2}$$",
        "'s 's 'S 'T 'RE 'Ve 'm 'LL 'd",
        "''''' \"\"\"\"",
        "-->  <!-- comment -->",
        "#!/bin/bash\nset -euo pipefail\n",
        "naïve coöperate façade",
        "Straße STRASSE ß ẞ",
        "İstanbul ı I i",
        "ǅ ǈ ǋ titlecase",
        "Ω Ω Å K",
        "ⅰⅱⅲ",
        "🧑🏾‍💻 🧑🏻‍🔬 👩🏼‍🚀",
        "🤷‍♂️🤦‍♀️",
        "1️⃣ 2️⃣ #️⃣",
        "a\u0000b",
        "tab\tin\tmiddle",
        "\r",
        "\r\r\n\n\r",
        "  \n  leading spaces then newline",
        "ends with newline\n",
        "ends with two newlines\n\n",
        "x\n\n\ny",
        "10000000000000000000000000000000000000001",
        "1 2 3 4 5 6 7 8 9 10",
        "٠١٢٣٤٥٦٧٨٩ Arabic-Indic digits",
        "०१२३ Devanagari digits",
        "３２１ fullwidth digits",
        "v1.2.3-beta+build.45",
        "$1,234.56 €99,99 ¥1000 £5",
        "100% 50°C 3×4=12 10÷2",
        "A.B.C. e.g. i.e. etc.",
        "O'Neill's rock'n'roll",
        "\\n literal backslash n \\t",
        "unicode escapes \\u00e9 \\x41",
        "%%%%% ##### @@@@@",
        "»»» ««« ><><><",
        "☃ ☂ ☀ ★ ☆ ♠ ♣ ♥ ♦",
        "→ ← ↑ ↓ ⇒ ⇔",
        "█▓▒░ ▀▄ ■□",
        "ⓐⓑⓒ 🄰🄱🄲",
        "\U0001F600\U0001F601 surrogate pair range",
        "\U000E0041 tag char",
        "\U0010FFFD private use plane 16",
        "\ue000 BMP private use",
        "ab\u0308c\u0327d",
        "ᄀ각 Hangul jamo",
        "ཀ་ཁ་ Tibetan",
        "ሰላም Ethiopic",
        "Ꭰ Cherokee",
        "ᚠᚢᚦ runes",
        "ⴰⵣⵓⵍ Tifinagh",
        "Mixed RTL: hello שלום world مرحبا 123",
        "\u202eRTL override\u202c",
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n日本語で答えて<|im_end|>\n",
        "<s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nHi [/INST]",
        "<｜begin▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>\n",
        "<|im_start|>user<|im_start|>nested<|im_end|><|im_end|>",
        "<|im_sta rt|> broken special",
        "<s >not special</ s>",
        "<|endoftext|><|endoftext|><|endoftext|>",
        "prefix<s>suffix",
        "a</s>b<s>c",
        "<｜end▁of▁sentence｜><｜end▁of▁sentence｜>",
        "<|fim_prefix|>def<|fim_suffix|>end<|fim_middle|>",
    ]
    rng = random.Random(1234)
    pieces = [
        "hello", " world", "日本", "😀", "👍🏽", "\n", "  ", "\t", "123", "4567", "é", "e\u0301",
        "<|im_start|>", "<s>", "</s>", "<｜begin▁of▁sentence｜>", "::", "->", "مرحبا", "ไทย",
        "हिन्दी", "'s", "'LL", "{", "}", "\r\n", "   ", "ß", "▁", "Ġ", "ABC", "x", "_",
    ]
    generated = []
    for _ in range(120):
        n = rng.randint(1, 12)
        generated.append("".join(rng.choice(pieces) for _ in range(n)))
    # A few strings of random code points (valid scalar values only).
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x4E00, 0x9FA5),
              (0x3040, 0x30FF), (0x1F300, 0x1F64F), (0x0900, 0x097F), (0x0E00, 0x0E7F)]
    for _ in range(30):
        chars = []
        for _ in range(rng.randint(1, 40)):
            lo, hi = rng.choice(ranges)
            chars.append(chr(rng.randint(lo, hi)))
        generated.append("".join(chars))
    return base + generated


def random_id_sequences(tok, n=40):
    rng = random.Random(99)
    vocab_size = len(tok)
    special_ids = sorted(tok.all_special_ids)
    byte_ids = [tok.convert_tokens_to_ids(f"<0x{b:02X}>") for b in range(256)]
    byte_ids = [i for i in byte_ids if i is not None and i != tok.unk_token_id]
    seqs = []
    for _ in range(n):
        seq = []
        for _ in range(rng.randint(1, 20)):
            r = rng.random()
            if r < 0.15 and special_ids:
                seq.append(rng.choice(special_ids))
            elif r < 0.35 and byte_ids:
                seq.append(rng.choice(byte_ids))
            else:
                seq.append(rng.randrange(vocab_size))
        seqs.append(seq)
    return seqs


def main():
    texts = corpus()
    out = {"generator": "generate_reference.py",
           "note": "AutoTokenizer behaviour; raw_* only where tokenizers.Tokenizer differs",
           "tokenizers": {}}
    for name in NAMES:
        d = os.path.join(HERE, "fixtures", name)
        auto = AutoTokenizer.from_pretrained(d)
        raw = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        cases = []
        for t in texts:
            ids = auto.encode(t, add_special_tokens=True)
            ids_plain = auto.encode(t, add_special_tokens=False)
            case = {
                "text": t,
                "ids": ids,
                "ids_plain": ids_plain,
                "decode": auto.decode(ids, skip_special_tokens=False),
                "decode_skip": auto.decode(ids, skip_special_tokens=True),
            }
            raw_ids = raw.encode(t, add_special_tokens=True).ids
            raw_plain = raw.encode(t, add_special_tokens=False).ids
            if raw_ids != ids:
                case["raw_ids"] = raw_ids
            if raw_plain != ids_plain:
                case["raw_ids_plain"] = raw_plain
            cases.append(case)
        decodes = []
        for seq in random_id_sequences(auto):
            decodes.append({
                "ids": seq,
                "decode": auto.decode(seq, skip_special_tokens=False),
                "decode_skip": auto.decode(seq, skip_special_tokens=True),
            })
        out["tokenizers"][name] = {
            "class": type(auto).__name__,
            "vocab_size_with_added": len(auto),
            "bos_token": auto.bos_token,
            "eos_token": auto.eos_token,
            "bos_id": auto.bos_token_id,
            "eos_id": auto.eos_token_id,
            "cases": cases,
            "decodes": decodes,
        }
    path = os.path.join(HERE, "reference.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
    print(f"wrote {path}: {len(texts)} strings x {len(NAMES)} tokenizers")


if __name__ == "__main__":
    main()
