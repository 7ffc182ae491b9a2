#!/usr/bin/env python3
"""weft batch survives kill -9 at any point: for several seeds, start a job, SIGKILL it when
the output file reaches a seeded number of records (or at a seeded moment during start-up),
restart it, repeat, then let it finish; the output must hold every custom_id exactly once and
equal an uninterrupted run (greedy, timestamps aside), and the errors file every bad line once.
Also SIGTERM (abandon in flight) and SIGUSR1 (drain) end the job with status 0, and a rerun
completes it. Usage: batch_resume_test.py WEFT MODEL_DIR. Bounded: every process has a timeout."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batch_inputs import compare, write_input  # noqa: E402

WEFT, MODEL = sys.argv[1], sys.argv[2]
NUM_LINES = 300
RUN_TIMEOUT = 120


def cmd(inp, out, err, in_flight):
    return [WEFT, "batch", "--model", MODEL, "--input", inp, "--output", out, "--errors", err,
            "--threads", "1", "--max-in-flight", str(in_flight), "--block-size", "4",
            "--kv-cache-blocks", "160", "--progress-interval", "1000"]


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def run_to_end(args):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_TIMEOUT)
    assert p.returncode == 0, f"exit {p.returncode}: {p.stderr.decode()[-2000:]}"
    return p.stderr.decode()


def start_and_signal(args, out, when_records, sig, delay=None):
    """Starts a run and sends `sig` once `out` holds when_records records (or after `delay` s).
    Returns (exit status, stderr, whether the signal was sent before it ended)."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + RUN_TIMEOUT
    t0 = time.monotonic()
    sent = False
    while p.poll() is None and time.monotonic() < deadline:
        ready = (time.monotonic() - t0 >= delay) if delay is not None else count_lines(out) >= when_records
        if ready:
            p.send_signal(sig)
            sent = True
            break
        time.sleep(0.002)
    try:
        _, err = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("weft batch did not end after the signal")
    return p.returncode, err.decode(), sent


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.jsonl")
        write_input(inp, NUM_LINES, seed=11)
        ref_out, ref_err = os.path.join(tmp, "ref.jsonl"), os.path.join(tmp, "ref_err.jsonl")
        run_to_end(cmd(inp, ref_out, ref_err, 8))
        print(f"reference: {count_lines(ref_out)} records, {count_lines(ref_err)} errors")

        for seed in range(1, 6):
            rng = random.Random(seed)
            out, err = os.path.join(tmp, f"out{seed}.jsonl"), os.path.join(tmp, f"err{seed}.jsonl")
            in_flight = rng.choice([1, 4, 16, 64])
            kills = sorted(rng.sample(range(1, NUM_LINES), 3))
            plan = [("delay", rng.uniform(0.0, 0.05))] + [("records", k) for k in kills]
            sent_count = 0
            for kind, value in plan:
                code, stderr, sent = start_and_signal(
                    cmd(inp, out, err, in_flight), out,
                    value if kind == "records" else None, signal.SIGKILL,
                    value if kind == "delay" else None)
                sent_count += sent
                if sent:
                    assert code == -signal.SIGKILL, f"exit {code}: {stderr[-500:]}"
            run_to_end(cmd(inp, out, err, in_flight))
            problems = compare(ref_out, out) + compare(ref_err, err)
            print(f"seed {seed}: in flight {in_flight}, {sent_count} kill -9 at {plan}: "
                  f"{'OK' if not problems else problems[:5]}")
            if problems:
                failures.append(f"seed {seed}: {problems[:5]}")

        for sig in (signal.SIGTERM, signal.SIGUSR1):
            out, err = os.path.join(tmp, f"{sig.name}.jsonl"), os.path.join(tmp, f"{sig.name}_err.jsonl")
            code, stderr, sent = start_and_signal(cmd(inp, out, err, 32), out, NUM_LINES // 3, sig)
            if not sent:
                failures.append(f"{sig.name}: the run ended before the signal")
                continue
            if code != 0 or "interrupted" not in stderr:
                failures.append(f"{sig.name}: exit {code}, stderr {stderr[-300:]!r}")
            partial = count_lines(out)
            run_to_end(cmd(inp, out, err, 32))
            problems = compare(ref_out, out) + compare(ref_err, err)
            print(f"{sig.name}: exit {code} with {partial} records, resumed: "
                  f"{'OK' if not problems else problems[:5]}")
            if problems:
                failures.append(f"{sig.name}: {problems[:5]}")
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
