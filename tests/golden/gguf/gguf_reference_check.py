#!/usr/bin/env python3
"""weft on GGUF files against transformers reading the same files (reference.json, make_gguf.py).

For each variant and prompt: the prompt's token ids (weft's tokenizer built from the GGUF
metadata) must equal transformers' ids; the greedy continuation must equal transformers' (until a
step whose top two logprobs lie within 1e-3 of each other, where float rounding may pick either);
each step's top-5 logprobs must match within the tolerance. Also: the chat template comes from the
file's metadata.

  gguf_reference_check.py WEFT --variant f16 [--variant q8_0 ...] [--mpirun MPIEXEC --tp 2]
  gguf_reference_check.py WEFT --reference smollm2_reference.json --variant q4_1 --file FILE
  gguf_reference_check.py WEFT --reference spm_reference.json --variant f16

A reference with a "tokenize" list (the sentencepiece file) is also checked string by string:
`weft tokenize` must give transformers' ids and `weft detokenize` its decoded text.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIE_MARGIN = 1e-3


def run_generate(args, gguf: Path, prompt: str, steps: int) -> dict:
    cmd = [args.weft, "generate", "--model", str(gguf), "--prompt", prompt,
           "--max-tokens", str(steps), "--temperature", "0", "--ignore-eos", "--json"]
    if args.mpirun:
        cmd = [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(args.tp)] + cmd + \
              ["--tp", str(args.tp)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {out.returncode}:\n{out.stderr}")
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def check_case(args, variant: str, gguf: Path, case: dict) -> list:
    errors = []
    got = run_generate(args, gguf, case["prompt"], len(case["steps"]))
    if got["prompt_ids"] != case["ids"]:
        return [f"{variant} {case['prompt']!r}: prompt ids {got['prompt_ids']} != {case['ids']}"]
    worst = 0.0
    for i, (ref, step) in enumerate(zip(case["steps"], got["steps"])):
        ref_top = {t: lp for t, lp in ref["top5"]}
        for token, logprob in step["top_logprobs"]:
            if token in ref_top:
                worst = max(worst, abs(ref_top[token] - logprob))
        # Every reference top-5 token but a near-tie at the boundary must be in weft's top 5.
        got_tokens = {t for t, _ in step["top_logprobs"]}
        fifth = ref["top5"][-1][1]
        for token, logprob in ref["top5"]:
            if token not in got_tokens and logprob - fifth > TIE_MARGIN:
                errors.append(f"{variant} {case['prompt']!r} step {i}: token {token} "
                              f"({logprob:.4f}) missing from weft's top 5")
        if step["token"] != ref["token"]:
            margin = ref["top5"][0][1] - ref["top5"][1][1]
            if margin > TIE_MARGIN:
                errors.append(f"{variant} {case['prompt']!r} step {i}: token {step['token']} != "
                              f"{ref['token']} (reference margin {margin:.2e})")
            break  # the continuations differ from here on; nothing more to compare
    if worst > args.tolerance:
        errors.append(f"{variant} {case['prompt']!r}: logprob error {worst:.2e} > {args.tolerance}")
    print(f"{variant} {case['prompt']!r}: max |logprob error| {worst:.2e}")
    return errors


def run_lines(args, command: str, gguf: Path, lines: list) -> list:
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    out = subprocess.run([args.weft, command, "--model", str(gguf)], input=stdin,
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: weft {command} exited {out.returncode}:\n{out.stderr}")
    return [json.loads(line) for line in out.stdout.splitlines()]


def check_tokenization(args, variant: str, gguf: Path, cases: list) -> list:
    errors = []
    got_ids = run_lines(args, "tokenize", gguf, [
        {"text": c["text"], "add_special_tokens": c["add_special_tokens"]} for c in cases])
    got_text = run_lines(args, "detokenize", gguf, [
        {"ids": c["ids"], "skip_special_tokens": False} for c in cases])
    for case, ids, text in zip(cases, got_ids, got_text):
        if ids.get("ids") != case["ids"]:
            errors.append(f"{variant} tokenize {case['text']!r} (add_special_tokens "
                          f"{case['add_special_tokens']}): {ids} != {case['ids']}")
        if text.get("text") != case["decoded"]:
            errors.append(f"{variant} detokenize {case['ids']}: {text} != {case['decoded']!r}")
    print(f"{variant}: {len(cases)} tokenizer cases, {len(errors)} differences")
    return errors


def check_chat_template(args, gguf: Path) -> list:
    request = json.dumps({"messages": [{"role": "user", "content": "hi"}],
                          "add_generation_prompt": True})
    out = subprocess.run([args.weft, "chat-template", "--model", str(gguf)], input=request,
                         capture_output=True, text=True, timeout=60)
    expected = "<|user|>\nhi<|end|>\n<|assistant|>\n"  # configs/default-model's template
    if out.returncode != 0 or out.stdout != expected:
        return [f"chat-template from {gguf.name}: rc {out.returncode}, {out.stdout!r} "
                f"(expected {expected!r}) {out.stderr}"]
    return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weft")
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--tolerance", type=float, default=2e-3)
    parser.add_argument("--reference", default="reference.json",
                        help="dump beside this script (smollm2_reference.json: the real file)")
    parser.add_argument("--file", type=Path, help="the GGUF file, when it is not beside the dump")
    parser.add_argument("--mpirun")
    parser.add_argument("--tp", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    reference = json.loads((HERE / args.reference).read_text())
    errors = []
    for variant in args.variant:
        gguf = args.file or HERE / reference[variant]["file"]
        if not gguf.exists():
            raise SystemExit(f"FAIL: {gguf} does not exist (scripts/fetch-smollm2-gguf.sh fetches "
                             "the real file)")
        for case in reference[variant]["cases"]:
            errors += check_case(args, variant, gguf, case)
        if "tokenize" in reference[variant] and not args.mpirun:
            errors += check_tokenization(args, variant, gguf, reference[variant]["tokenize"])
    if not args.mpirun and args.reference == "reference.json":
        errors += check_chat_template(args, HERE / reference[args.variant[0]]["file"])
    for e in errors:
        print("FAIL:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
