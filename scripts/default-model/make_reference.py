"""Writes the golden references of the default model, computed by Hugging Face transformers.

  python3 make_reference.py [--model configs/default-model] [--text heldout.txt] [--out reference.json]
Defaults are the repository's files (tests/golden/default_model/). The reference holds the
held-out perplexity (reference_perplexity.py's windows: context 256, stride 128) and the greedy
continuations of a few prompts (float32 on the CPU, 32 new tokens, no special tokens added).
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROMPTS = ["And God said", "In the beginning", "The LORD is my shepherd"]
CONTEXT, STRIDE, NEW_TOKENS = 256, 128, 32


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=os.path.join(ROOT, "configs", "default-model"))
    parser.add_argument("--text", default=os.path.join(ROOT, "tests", "golden", "default_model", "heldout.txt"))
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "default_model", "reference.json"))
    args = parser.parse_args()
    perplexity = json.loads(subprocess.run(
        [sys.executable, os.path.join(HERE, "reference_perplexity.py"), "--model", args.model, "--text", args.text,
         "--context", str(CONTEXT), "--stride", str(STRIDE)], check=True, capture_output=True, text=True).stdout)

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    model.eval()
    greedy = []
    for prompt in PROMPTS:
        ids = tokenizer(prompt, add_special_tokens=True)["input_ids"]
        with torch.no_grad():
            out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                 do_sample=False, eos_token_id=None, pad_token_id=tokenizer.eos_token_id)
        new = out[0, len(ids):].tolist()
        greedy.append({"prompt": prompt, "prompt_ids": ids, "output_ids": new,
                       "text": tokenizer.decode(new, skip_special_tokens=True)})
    with open(args.out, "w") as f:
        json.dump({"perplexity": perplexity, "max_tokens": NEW_TOKENS, "greedy": greedy}, f, indent=1,
                  ensure_ascii=False)
        f.write("\n")
    print(json.dumps(perplexity))


if __name__ == "__main__":
    main()
