"""Perplexity of a text by Hugging Face transformers, with weft's sliding windows.

  python3 reference_perplexity.py --model DIR --text FILE [--context N] [--stride S]
Prints one JSON object (perplexity, nll_per_token, tokens, windows, context, stride). The windows
and the per-token weighting are those of launcher/perplexity_window.h; the model runs in float32
on the CPU, as weft accumulates in float32.
"""
import argparse
import json
import math

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def windows(num_tokens, context, stride):
    previous_end = 0
    for begin in range(0, num_tokens, stride):
        end = min(begin + context, num_tokens)
        first_scored = max(previous_end, begin + 1)
        if first_scored < end:
            yield begin, end, first_scored
        previous_end = end
        if end == num_tokens:
            break


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--stride", type=int, default=0)
    args = parser.parse_args()
    stride = args.stride or max(1, args.context // 2)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model.eval()
    with open(args.text, encoding="utf-8") as f:
        ids = tokenizer(f.read(), add_special_tokens=True)["input_ids"]
    nll, scored, count = 0.0, 0, 0
    with torch.no_grad():
        for begin, end, first_scored in windows(len(ids), args.context, stride):
            logits = model(torch.tensor([ids[begin:end]])).logits[0].double()
            logprobs = torch.log_softmax(logits, dim=-1)
            for t in range(first_scored, end):  # row t - begin - 1 predicts token t
                nll -= logprobs[t - begin - 1, ids[t]].item()
            scored += end - first_scored
            count += 1
    print(json.dumps({"perplexity": math.exp(nll / scored), "nll_per_token": nll / scored, "tokens": scored,
                      "windows": count, "context": args.context, "stride": stride}))


if __name__ == "__main__":
    main()
