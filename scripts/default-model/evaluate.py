"""Held-out numbers of the default model pair, for the model cards.

  python3 evaluate.py --target DIR --draft DIR --text heldout.txt
Prints one JSON object: each model's parameter count and held-out perplexity (context 256,
stride 128, the windows of reference_perplexity.py), and the draft/target greedy agreement: over
the held-out text, with both models reading the same true history (teacher forcing, the
perplexity windows), the fraction of positions where the draft's argmax equals the target's.
That fraction is the acceptance rate greedy speculative decoding can expect per drafted token.
"""
import argparse
import json
import math

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from reference_perplexity import windows

CONTEXT, STRIDE = 256, 128


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--text", required=True)
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    models = {name: AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
              for name, path in [("target", args.target), ("draft", args.draft)]}
    with open(args.text, encoding="utf-8") as f:
        ids = tokenizer(f.read(), add_special_tokens=True)["input_ids"]
    nll = {name: 0.0 for name in models}
    agree, scored = 0, 0
    with torch.no_grad():
        for begin, end, first in windows(len(ids), CONTEXT, STRIDE):
            x = torch.tensor([ids[begin:end]])
            rows = slice(first - begin - 1, end - begin - 1)  # the rows that predict tokens first..end-1
            targets = torch.tensor(ids[first:end])
            argmax = {}
            for name, model in models.items():
                logprobs = torch.log_softmax(model(x).logits[0, rows].double(), dim=-1)
                nll[name] -= logprobs.gather(1, targets[:, None]).sum().item()
                argmax[name] = logprobs.argmax(dim=-1)
            agree += (argmax["target"] == argmax["draft"]).sum().item()
            scored += end - first
    result = {name: {"parameters": sum(p.numel() for p in model.parameters()),
                     "heldout_perplexity": math.exp(nll[name] / scored)} for name, model in models.items()}
    result.update({"heldout_tokens": scored, "context": CONTEXT, "stride": STRIDE,
                   "draft_greedy_agreement": agree / scored})
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
