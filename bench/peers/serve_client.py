"""Drives one OpenAI-compatible server with the official `openai` client and prints one JSON line.

`concurrency` streams each send `requests_per_stream` streaming chat completions back to back
(max_tokens output tokens, temperature T, ignore_eos so every request produces max_tokens, which
llama-server, vLLM and weft all accept). Reports output tokens/s over the whole run (first
request sent to last stream closed), time to first token p50/p99 and the tokens each request got
(usage.completion_tokens from stream_options.include_usage, else the content chunks counted).
Run inside the harness's venv; peers.py calls it.
"""
import argparse
import asyncio
import json
import sys
import time

import openai

TOPICS = ["the sea", "a lighthouse", "autumn", "a small robot", "bread", "the moon", "a library",
          "trains", "a garden", "winter mornings", "a lost key", "mountains", "coffee", "rivers",
          "a city at night", "an old map"]


def prompt(i):
    return f"Write a short story about {TOPICS[i % len(TOPICS)]} (story number {i})."


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


async def one(client, model, i, args):
    t0 = time.perf_counter()
    ttft = None
    chunks = 0
    usage_tokens = None
    stream = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt(i)}], max_tokens=args.max_tokens,
        temperature=args.temperature, stream=True, stream_options={"include_usage": True},
        extra_body={"ignore_eos": True})
    async for chunk in stream:
        if chunk.usage is not None and chunk.usage.completion_tokens:
            usage_tokens = chunk.usage.completion_tokens
        for c in chunk.choices or []:
            if c.delta is not None and c.delta.content:
                if ttft is None:
                    ttft = time.perf_counter() - t0
                chunks += 1
    return {"ttft": ttft if ttft is not None else float("nan"),
            "tokens": usage_tokens if usage_tokens is not None else chunks,
            "latency": time.perf_counter() - t0}


def new_client(args):
    # Connection errors (e.g. a keep-alive connection the server has closed) are retried by the
    # client; they happen before any token, so a retry does not change what is measured.
    return openai.AsyncOpenAI(base_url=args.base_url, api_key="none", timeout=args.timeout, max_retries=2)


async def run(args):
    # The warm-up gets its own client, so no idle pooled connection of it is reused later.
    async with new_client(args) as warm:
        model = (await warm.models.list()).data[0].id
        if args.warmup:
            await asyncio.gather(*(one(warm, model, 1000 + i, argparse.Namespace(
                max_tokens=8, temperature=args.temperature)) for i in range(args.warmup)))
    client = new_client(args)
    results, errors = [], []

    async def stream(s):
        for r in range(args.requests_per_stream):
            try:
                results.append(await one(client, model, s * args.requests_per_stream + r, args))
            except openai.OpenAIError as e:
                errors.append(f"{type(e).__name__}: {e}")

    t0 = time.perf_counter()
    await asyncio.gather(*(stream(s) for s in range(args.concurrency)))
    wall = time.perf_counter() - t0
    await client.close()
    if not results:
        sys.exit(f"serve_client: every request failed, e.g. {errors[0]}")
    ttfts = [r["ttft"] for r in results]
    tokens = [r["tokens"] for r in results]
    out = {"concurrency": args.concurrency, "requests": len(results), "wall_s": wall,
           "output_tokens": sum(tokens), "output_tok_s": sum(tokens) / wall,
           "ttft_p50_ms": 1000 * percentile(ttfts, 0.5), "ttft_p99_ms": 1000 * percentile(ttfts, 0.99),
           "tokens_min": min(tokens), "tokens_max": max(tokens), "failed": len(errors),
           "first_error": errors[0] if errors else None, "model": model}
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--concurrency", type=int, required=True)
    ap.add_argument("--requests-per-stream", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--warmup", type=int, default=4, help="short requests sent first, not measured")
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    try:
        asyncio.run(run(args))
    except openai.OpenAIError as e:
        sys.exit(f"serve_client: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
