#!/usr/bin/env python3
"""Dumps the attention weights transformers computes for one greedy generation of a golden model,
the reference of weft inspect's attention path (tests/golden/attention/attention_check.py).

Usage:  /work/refvenv/bin/python3 tests/golden/attention/generate_attention.py [--model NAME]

Loads tests/golden/models/<NAME> with attn_implementation="eager" (transformers' own softmax of
Q.K^T), draws a prompt of PROMPT_LEN token ids (seeded; the first seed whose greedy steps all have a
top-1 minus top-2 logit gap of at least MIN_MARGIN, so an engine agreeing to ~1e-4 picks the same
tokens), generates NEW_TOKENS greedy tokens without stopping at EOS, and runs the whole sequence
once with output_attentions=True. Causal attention makes row p of that pass the row that chose
token p + 1 during generation. Writes <NAME>_attention.json beside this script: prompt ids, the
generated ids, and for every layer and query head the rows that chose each generated token
(weights over positions [0, p]). CI only reads the committed JSON.
"""

import argparse
import json
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM

PROMPT_LEN = 9
NEW_TOKENS = 6
MIN_MARGIN = 0.05
HERE = Path(__file__).resolve().parent


def greedy(model, ids, steps):
    """Greedy tokens and the smallest top-1 minus top-2 logit gap over the steps."""
    ids = list(ids)
    margin = float("inf")
    for _ in range(steps):
        logits = model(torch.tensor([ids])).logits[0, -1]
        top = torch.topk(logits, 2)
        margin = min(margin, float(top.values[0] - top.values[1]))
        ids.append(int(top.indices[0]))
    return ids, margin


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="llama_gqa")
    args = parser.parse_args()
    model_dir = HERE.parent / "models" / args.model
    model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32)
    model.eval()
    vocab = model.config.vocab_size
    with torch.no_grad():
        for seed in range(100):
            gen = torch.Generator().manual_seed(seed)
            prompt = [1] + torch.randint(3, vocab, (PROMPT_LEN - 1,), generator=gen).tolist()
            ids, margin = greedy(model, prompt, NEW_TOKENS)
            if margin >= MIN_MARGIN:
                break
        else:
            raise SystemExit("no seed gave greedy margins >= %g" % MIN_MARGIN)
        out = model(torch.tensor([ids[:-1]]), output_attentions=True)
    layers = []
    for layer, attn in enumerate(out.attentions):  # [1, heads, q, k]
        heads = []
        for head in range(attn.shape[1]):
            rows = []
            for step in range(NEW_TOKENS):
                p = PROMPT_LEN - 1 + step
                rows.append({"step": step, "position": p, "weights": attn[0, head, p, : p + 1].tolist()})
            heads.append({"head": head, "rows": rows})
        layers.append({"layer": layer, "heads": heads})
    result = {
        "model": args.model,
        "attn_implementation": "eager",
        "seed": seed,
        "min_greedy_margin": margin,
        "prompt_ids": prompt,
        "output_ids": ids[PROMPT_LEN:],
        "layers": layers,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    path = HERE / (args.model + "_attention.json")
    path.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", path, "seed", seed, "margin", margin)


if __name__ == "__main__":
    main()
