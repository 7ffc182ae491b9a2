"""Banned-phrase stress check through `weft serve` (a program for the record, and a small ctest):

1. a plain server generates 1000 sampled texts from Bible-like prompts, and the phrase list is
   built from what it really produced: its most frequent 2- and 3-word runs and long words
   (the commonest word pairs skipped: a list of "of the", "unto the" would only measure
   content_filter);
2. a server with --banned-phrases LIST runs G sampled generations (distinct seeds, n = 1,
   temperature 1.0), every other one streamed (the SSE deltas concatenated), every tenth both ways
   (the stream must equal the non-streamed text); every text is checked, independently of weft's
   matcher, to contain no phrase (NFKC + casefold, substring); /metrics counts are reported;
3. throughput, in interleaved rounds of the same T requests: no list, a near-miss list (the
   phrases + "qz": the same prefixes, never a match; its texts must equal the plain ones) and the
   list; completion tokens per second of wall time at the given concurrency.

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
    """The `count` most frequent phrases of the texts: 2- and 3-word runs, and single words of at
    least 6 letters, after the `skip` most frequent 2-word runs ("of the", "unto the", ...: banning
    those would mostly measure content_filter)."""
    grams = collections.Counter()
    for text in texts:
        words = re.findall(r"[A-Za-z]+", text)
        for n in (1, 2, 3):
            for k in range(len(words) - n + 1):
                if n > 1 or len(words[k]) >= 6:
                    grams[" ".join(words[k:k + n])] += 1
    ranked = [g for g, _ in grams.most_common()]
    common = set([g for g in ranked if g.count(" ") == 1][:skip])
    return [g for g in ranked if g not in common][:count]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--generations", type=int, default=10000)
    parser.add_argument("--phrases", type=int, default=1000)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--skip-common", type=int, default=50)
    parser.add_argument("--timing-generations", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", default="2")
    args = parser.parse_args()
    serve_fixture.configure(args.weft)
    common = ("--api-key", API_KEY, "--max-num-seqs", str(args.concurrency), "--threads", args.threads)

    plain = Server(args.model, *common)
    try:
        sample, _ = run_all(plain, 1000, args.max_tokens, args.concurrency, lambda i: [False])
    finally:
        plain.stop()
    phrases = harvest([t for t, _, _ in sample.values()], args.phrases, args.skip_common)
    folded_phrases = [folded(p) for p in phrases]

    def serve(phrase_list, count, modes_of):
        extra = ()
        if phrase_list is not None:
            list_file = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
            list_file.write("\n".join(phrase_list) + "\n")
            list_file.close()
            extra = ("--banned-phrases", list_file.name)
        server = Server(args.model, *common, *extra)
        try:
            results, seconds = run_all(server, count, args.max_tokens, args.concurrency, modes_of)
            return results, seconds, server.metrics()
        finally:
            server.stop()
            if extra:
                os.unlink(extra[1])

    # The check: G generations, every other one streamed, every tenth both ways.
    results, _, metrics = serve(phrases, args.generations, lambda i: [False, True] if i % 10 == 0 else [i % 2 == 1])
    leaks = [(key, t) for key, (t, _, _) in results.items() if any(p in folded(t) for p in folded_phrases)]
    mismatched = [i for i in range(0, args.generations, 10) if results[(i, False)][0] != results[(i, True)][0]]

    # Throughput, interleaved rounds of the same T non-streamed requests (same seeds): no list;
    # near misses (the phrases with "qz" appended share every prefix with real text, so the matcher
    # works and holds text back as hard, but nothing matches: the screening cost alone); the list.
    near_list = [p + "qz" for p in phrases]
    rates = collections.defaultdict(list)
    near_differs = in_plain = 0
    for _ in range(args.rounds):
        runs = {}
        for name, phrase_list in (("plain", None), ("near_miss_list", near_list), ("harvested_list", phrases)):
            r, seconds, _ = serve(phrase_list, args.timing_generations, lambda i: [False])
            runs[name] = r
            rates[name].append(round(sum(n for _, _, n in r.values()) / seconds, 1))
        near_differs += sum(runs["near_miss_list"][k][0] != runs["plain"][k][0] for k in runs["plain"])
        in_plain = sum(any(p in folded(t) for p in folded_phrases) for t, _, _ in runs["plain"].values())

    report = {
        "generations": args.generations,
        "texts_checked": len(results),
        "streamed_texts": sum(1 for (_, s) in results if s),
        "phrases": len(phrases),
        "phrase_examples": phrases[:8] + phrases[-4:],
        "screened_outputs_containing_a_phrase": len(leaks),
        "stream_vs_whole_mismatches": len(mismatched),
        "finish_reasons": dict(collections.Counter(f for _, f, _ in results.values())),
        "banned_phrase_matches": metrics.get("weft:banned_phrase_matches_total"),
        "rolled_back_tokens": metrics.get("weft:banned_phrase_rolled_back_tokens_total"),
        "content_filtered": metrics.get("weft:banned_phrase_content_filter_total"),
        "timing_generations": args.timing_generations,
        "plain_outputs_containing_a_phrase": in_plain,
        "near_miss_texts_differing_from_plain": near_differs,
        "tokens_per_s": dict(rates),
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
    }
    print(json.dumps(report, indent=1))
    for key, t in leaks[:5]:
        print("LEAK", key, repr(t), file=sys.stderr)
    failed = leaks or mismatched or near_differs or in_plain == 0 or not report["banned_phrase_matches"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
