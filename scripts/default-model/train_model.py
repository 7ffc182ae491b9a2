"""Trains one Llama-architecture model of the default pair on the prepared text.

  python3 train_model.py --size target|draft --data DATA_DIR --tokenizer TOK_DIR --out OUT_DIR
         [--minutes M] [--seed 1234]
DATA_DIR holds train.txt and heldout.txt (prepare_text.py); TOK_DIR holds tokenizer.json and
tokenizer_config.json (train_tokenizer.py). Training stops after the step budget or the time
budget, whichever comes first, and the learning-rate schedule (warm-up, then cosine decay to a
tenth) follows whichever of the two is further along, so a slow machine still ends with a decayed
learning rate. With a fixed seed the run is reproducible where the step budget binds. OUT_DIR
becomes an ordinary Hugging Face model directory in BF16 with the tokenizer files beside it.
"""
import argparse
import json
import math
import os
import shutil
import time

import torch
from tokenizers import Tokenizer
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

# Shapes chosen for ~6M (target) and ~1.3M (draft) parameters with a 4096-token vocabulary, tied
# embeddings, grouped-query attention (2 query heads per KV head) and head_dim 32; the head
# counts divide by 2 so both run with tensor parallelism 2.
SIZES = {
    "target": dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4,
                   intermediate_size=768, steps=900, batch=24, lr=2e-3),
    "draft": dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=384, steps=1200, batch=24, lr=3e-3),
}
SEQ_LEN = 256


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=sorted(SIZES), required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--minutes", type=float, default=40.0)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)

    size = dict(SIZES[args.size])
    steps, batch, lr = size.pop("steps"), size.pop("batch"), size.pop("lr")
    tokenizer = Tokenizer.from_file(os.path.join(args.tokenizer, "tokenizer.json"))
    eos = tokenizer.token_to_id("<|endoftext|>")
    with open(os.path.join(args.data, "train.txt")) as f:
        ids = torch.tensor(tokenizer.encode(f.read()).ids, dtype=torch.long)

    config = LlamaConfig(vocab_size=tokenizer.get_vocab_size(), head_dim=32, max_position_embeddings=1024,
                         rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
                         bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, **size)
    model = LlamaForCausalLM(config)
    params = sum(p.numel() for p in model.parameters())
    print("%s: %d parameters, %d training tokens" % (args.size, params, len(ids)), flush=True)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    warmup = 100

    def lr_at(step, elapsed):
        if step < warmup:
            return lr * (step + 1) / warmup
        progress = max((step - warmup) / (steps - warmup), elapsed / (args.minutes * 60))
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))

    generator = torch.Generator().manual_seed(args.seed)
    start = time.time()
    model.train()
    step = 0
    for step in range(steps):
        elapsed = time.time() - start
        if elapsed > args.minutes * 60:
            print("time budget reached at step %d" % step, flush=True)
            break
        rate = lr_at(step, elapsed)
        for group in optimizer.param_groups:
            group["lr"] = rate
        offsets = torch.randint(0, len(ids) - SEQ_LEN - 1, (batch,), generator=generator)
        x = torch.stack([ids[o:o + SEQ_LEN] for o in offsets])
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 50 == 0:
            print("step %d loss %.4f lr %.2e %.0fs" % (step, loss.item(), rate, time.time() - start), flush=True)
    elapsed = time.time() - start

    os.makedirs(args.out, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(args.out, safe_serialization=True)
    GenerationConfig(bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, do_sample=True, temperature=0.8,
                     top_p=0.95).save_pretrained(args.out)
    for name in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(os.path.join(args.tokenizer, name), os.path.join(args.out, name))
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"parameters": params, "steps": step + 1, "batch": batch, "seq_len": SEQ_LEN, "lr": lr,
                   "seed": args.seed, "seconds": round(elapsed), "threads": torch.get_num_threads()}, f, indent=2)
    print("trained %d steps in %.0f s" % (step + 1, elapsed), flush=True)


if __name__ == "__main__":
    main()
