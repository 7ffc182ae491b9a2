#!/usr/bin/env python3
"""Hugging Face tokenizers on the same text as bench/tokenizer_bench.cpp, single-threaded.

Usage:
  build/bench/tokenizer_bench --write-text /tmp/tok_bench.txt     # prints weft's numbers
  RAYON_NUM_THREADS=1 python3 bench/tokenizer_bench.py /tmp/tok_bench.txt

Encodes each document with Tokenizer.encode in a loop (never encode_batch), using the backend
tokenizer AutoTokenizer builds (the pipeline weft mirrors), add_special_tokens=False; best of
several passes.
"""
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import AutoTokenizer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "tokenizer_data", "fixtures")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(sys.argv[1], "rb") as f:
        docs = [d.decode("utf-8") for d in f.read().split(b"\f\n") if d]
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    print(f"text: {len(docs)} documents, {nbytes / 1e6:.2f} MB")
    print(f"{'tokenizer':<12} {'tokens':>12} {'best_s':>12} {'MB/s':>10}")
    for name in ["qwen3", "llama2", "deepseek_v3"]:
        tok = AutoTokenizer.from_pretrained(os.path.join(FIXTURES, name)).backend_tokenizer
        best = float("inf")
        tokens = 0
        for _ in range(passes):
            tokens = 0
            t0 = time.perf_counter()
            for d in docs:
                tokens += len(tok.encode(d, add_special_tokens=False).ids)
            best = min(best, time.perf_counter() - t0)
        print(f"{name:<12} {tokens:>12} {best:>12.3f} {nbytes / 1e6 / best:>10.2f}")


if __name__ == "__main__":
    main()
