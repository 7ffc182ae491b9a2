"""Banned-phrase stress check through `weft serve` (a program for the record, and a small ctest):

1. a plain server generates sampled text from Bible-like prompts, and the phrase list is built
   from what it really produced: the word n-grams (1..3 words) it used most, skipping the most
   common words (a list of "the", "and", "of" would only measure content_filter);
2. a second server runs with --banned-phrases LIST, and G sampled generations (distinct seeds,
   n = 1, temperature 1.0) go through it, every other one streamed (the SSE deltas concatenated),
   every tenth both ways (the stream must equal the non-streamed text);
3. every text is checked, independently of weft's matcher, to contain no phrase (NFKC + casefold,
   substring), and the counts of /metrics are printed;
4. throughput: the same G requests (same seeds) against the plain server and the screened one,
   completion tokens per second of wall time at the given concurrency.

  python3 banned_phrases_stress.py --weft WEFT --model DIR [--generations 10000] [--phrases 1000]
Exit status 1 when a phrase got through (or a stream disagreed), 0 otherwise.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import re
import sys
import tempfile
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
(openai,) = serve_fixture.require("openai")
from serve_fixture import API_KEY, MODEL, Server  # noqa: E402

PROMPTS = ["And God said unto Moses,", "And it came to pass", "In the beginning", "And the king said,",
           "Blessed is the man", "Then Jesus answered and said", "The LORD is my shepherd", "And Moses said"]


def folded(text):
    return unicodedata.normalize("NFKC", text).casefold()


def client(server):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % server.port, api_key=API_KEY, max_retries=2,
                         timeout=600)


def generate(c, i, max_tokens, stream):
    kw = dict(model=MODEL, prompt=PROMPTS[i % len(PROMPTS)], max_tokens=max_tokens, temperature=1.0, seed=i)
    if not stream:
        r = c.completions.create(**kw)
        return r.choices[0].text, r.choices[0].finish_reason, r.usage.completion_tokens
    text, finish, tokens = "", None, 0
    for chunk in c.completions.create(stream=True, stream_options={"include_usage": True}, **kw):
        for ch in chunk.choices:
            text += ch.text
            finish = ch.finish_reason or finish
        if chunk.usage:
            tokens = chunk.usage.completion_tokens
    return text, finish, tokens


def run_all(server, count, max_tokens, concurrency, modes):
    """modes(i) -> list of stream flags to run for generation i. Returns (results, seconds)."""
    c = client(server)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        futures = {(i, s): pool.submit(generate, c, i, max_tokens, s) for i in range(count) for s in modes(i)}
        results = {key: f.result() for key, f in futures.items()}
    return results, time.monotonic() - started


def harvest(texts, count, skip):
    grams = collections.Counter()
    for text in texts:
        words = re.findall(r"[A-Za-z]+", text)
        for n in (1, 2, 3):
            for k in range(len(words) - n + 1):
                grams[" ".join(words[k:k + n])] += 1
    ranked = [g for g, _ in grams.most_common()]
    singles = [g for g in ranked if " " not in g][:skip]  # the commonest words are not banned alone
    chosen = [g for g in ranked if g not in singles and not any(s == g for s in singles)]
    return chosen[:count]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--generations", type=int, default=10000)
    parser.add_argument("--phrases", type=int, default=1000)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--skip-common", type=int, default=40)
    parser.add_argument("--threads", default="2")
    args = parser.parse_args()
    serve_fixture.configure(args.weft)
    common = ("--api-key", API_KEY, "--max-num-seqs", str(args.concurrency), "--threads", args.threads)

    modes = lambda i: [False, True] if i % 10 == 0 else [i % 2 == 1]  # noqa: E731

    def tokens_per_s(results, seconds):
        return round(sum(n for _, _, n in results.values()) / seconds, 1)

    plain = Server(args.model, *common)
    try:
        sample, _ = run_all(plain, min(args.generations, 1000), args.max_tokens, args.concurrency, lambda i: [False])
        phrases = harvest([t for t, _, _ in sample.values()], args.phrases, args.skip_common)
        plain_results, plain_s = run_all(plain, args.generations, args.max_tokens, args.concurrency, modes)
    finally:
        plain.stop()
    folded_phrases = [folded(p) for p in phrases]
    in_plain = sum(any(p in folded(t) for p in folded_phrases) for t, _, _ in plain_results.values())

    def screened_run(phrase_list):
        list_file = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
        list_file.write("\n".join(phrase_list) + "\n")
        list_file.close()
        server = Server(args.model, *common, "--banned-phrases", list_file.name)
        try:
            results, seconds = run_all(server, args.generations, args.max_tokens, args.concurrency, modes)
            return results, seconds, server.metrics()
        finally:
            server.stop()
            os.unlink(list_file.name)

    results, screened_s, metrics = screened_run(phrases)
    # Near misses: the same phrases with "qz" appended share every prefix with real text (the
    # matcher works and holds text back as hard) but never match: the screening cost alone.
    near, near_s, near_metrics = screened_run([p + "qz" for p in phrases])

    leaks = [(key, t) for key, (t, _, _) in results.items() if any(p in folded(t) for p in folded_phrases)]
    mismatched = [i for i in range(0, args.generations, 10) if results[(i, False)][0] != results[(i, True)][0]]
    near_mismatched = [i for i in range(0, args.generations, 10) if near[(i, False)][0] != near[(i, True)][0]]
    # With no match the screened text must be exactly the plain server's (same seeds).
    near_differs = sum(near[key][0] != plain_results[key][0] for key in plain_results)
    report = {
        "generations": args.generations,
        "texts_checked": len(results),
        "streamed_texts": sum(1 for (_, s) in results if s),
        "phrases": len(phrases),
        "phrase_examples": phrases[:8] + phrases[-4:],
        "plain_outputs_containing_a_phrase": in_plain,
        "screened_outputs_containing_a_phrase": len(leaks),
        "stream_vs_whole_mismatches": len(mismatched) + len(near_mismatched),
        "finish_reasons": dict(collections.Counter(f for _, f, _ in results.values())),
        "banned_phrase_matches": metrics.get("weft:banned_phrase_matches_total"),
        "rolled_back_tokens": metrics.get("weft:banned_phrase_rolled_back_tokens_total"),
        "content_filtered": metrics.get("weft:banned_phrase_content_filter_total"),
        "near_miss_matches": near_metrics.get("weft:banned_phrase_matches_total"),
        "near_miss_texts_differing_from_plain": near_differs,
        "plain_tokens_per_s": tokens_per_s(plain_results, plain_s),
        "near_miss_list_tokens_per_s": tokens_per_s(near, near_s),
        "harvested_list_tokens_per_s": tokens_per_s(results, screened_s),
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
    }
    print(json.dumps(report, indent=1))
    for key, t in leaks[:5]:
        print("LEAK", key, repr(t), file=sys.stderr)
    failed = leaks or mismatched or near_mismatched or near_differs or in_plain == 0 or not report["banned_phrase_matches"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
