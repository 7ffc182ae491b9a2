"""The baseline for bench/gpu_bench: the same model directory through PyTorch + transformers
`generate` on the same GPU, with the same shapes (128-token prompts, greedy decode).

  python3 bench/gpu_baseline.py MODEL_DIR        (the directory gpu_bench generated)

Prints one line per number, then a JSON summary with the keys gpu_bench uses:
  decode_b1_tok_s, decode_b64_tok_s, decode_b256_tok_s   decode tokens/s, from the difference of
      two generate() runs (N and 8 new tokens) so the prompt's prefill is not counted
  prefill_tok_s   8 prompts of 1024 tokens through one forward pass
Exit 3 when no GPU is visible.
"""
import json
import sys
import time

import torch
from transformers import AutoModelForCausalLM


def timed(fn, reps=1):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps


def decode_tok_s(model, batch, new_tokens, vocab):
    gen = torch.Generator().manual_seed(batch)
    ids = torch.randint(0, vocab, (batch, 128), generator=gen).cuda()

    def run(n):
        return lambda: model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                      pad_token_id=0)

    run(8)()  # warm-up
    short = timed(run(8))
    long = timed(run(new_tokens))
    return batch * (new_tokens - 8) / (long - short)


def main():
    if not torch.cuda.is_available():
        print("gpu_baseline: no GPU visible")
        sys.exit(3)
    model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.bfloat16).cuda().eval()
    vocab = model.config.vocab_size
    print("transformers %s, torch %s, %s" % (__import__("transformers").__version__,
                                            torch.__version__, torch.cuda.get_device_name(0)))
    result = {}
    with torch.inference_mode():
        for batch, new_tokens in ((1, 136), (64, 72), (256, 40)):
            result["decode_b%d_tok_s" % batch] = decode_tok_s(model, batch, new_tokens, vocab)
            print("decode_b%d_tok_s: %.1f" % (batch, result["decode_b%d_tok_s" % batch]))
        ids = torch.randint(0, vocab, (8, 1024)).cuda()
        model(ids)
        secs = timed(lambda: model(ids, logits_to_keep=1), reps=3)
        result["prefill_tok_s"] = 8 * 1024 / secs
        print("prefill_tok_s: %.0f" % result["prefill_tok_s"])
    print(json.dumps({k: round(v, 1) for k, v in result.items()}))


if __name__ == "__main__":
    main()
