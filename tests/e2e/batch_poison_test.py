#!/usr/bin/env python3
"""A poison line cannot stop weft batch forever (issue 18). The "poison" is simulated from
outside, with no hook in weft: every run is killed with SIGKILL the moment the line marked POISON
enters the engine (its entry appears in <output>.inflight), as if that request crashed the engine.
Expected: the first kill makes every line then in flight a suspect; the next runs take suspects
one at a time; after InflightLog::kPoisonStrikes (2) deaths during its solo run the line gets an
"engine_failure" error record and is skipped, and the job completes: every other line exactly
once, equal to an undisturbed run, and no .inflight file left behind.
Usage: batch_poison_test.py WEFT MODEL_DIR. Bounded: every process and loop has a limit."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batch_inputs import load_records, write_input  # noqa: E402

WEFT, MODEL = sys.argv[1], sys.argv[2]
RUN_TIMEOUT = 120
POISON = "poison"


def cmd(inp, out, err):
    return [WEFT, "batch", "--model", MODEL, "--input", inp, "--output", out, "--errors", err,
            "--threads", "1", "--max-in-flight", "4", "--block-size", "4", "--kv-cache-blocks", "256",
            "--progress-interval", "1000"]


def poison_started(inflight):
    try:
        with open(inflight) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    last = None
    for raw in lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a line being written
        if entry.get("custom_id") == POISON:
            last = entry
    return last


def run_killing_the_poison(args, inflight, seen_strikes):
    """Runs once; SIGKILLs it as soon as the poison line is (re)started by this run. Returns the
    exit status and whether it was killed. A start by this run, not an entry the previous run
    left (the file is rewritten at start-up): the first run's first entry, then solo starts whose
    strike count is the number of solo deaths so far."""
    first_run = not os.path.exists(inflight)
    solo_deaths = sum(1 for alone, _ in seen_strikes if alone)
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + RUN_TIMEOUT
    killed = False
    while p.poll() is None and time.monotonic() < deadline:
        entry = poison_started(inflight)
        # A fresh start of the line: alone after the first death, with a strike count.
        if entry is not None and (first_run or (entry.get("alone") and entry.get("strikes") == solo_deaths)):
            p.kill()
            killed = True
            seen_strikes.append((entry.get("alone"), entry.get("strikes")))
            break
        time.sleep(0.001)
    _, err = p.communicate(timeout=RUN_TIMEOUT)
    return p.returncode, killed, err.decode()


def main():
    tmp = tempfile.mkdtemp(prefix="weft-poison-")
    inp = os.path.join(tmp, "in.jsonl")
    ids = write_input(inp, 24, seed=5, bad_lines=False)
    with open(inp) as f:
        lines = f.read().splitlines()
    poison = {"custom_id": POISON, "method": "POST", "url": "/v1/completions",
              "body": {"prompt": [5, 6, 7, 8], "max_tokens": 480, "temperature": 0, "ignore_eos": True}}
    lines.insert(9, json.dumps(poison))
    with open(inp, "w") as f:
        f.write("\n".join(lines) + "\n")

    # Undisturbed reference (without the poison line).
    ref_in = os.path.join(tmp, "ref.jsonl")
    with open(ref_in, "w") as f:
        f.write("\n".join(l for i, l in enumerate(lines) if i != 9) + "\n")
    ref_out, ref_err = os.path.join(tmp, "ref.out"), os.path.join(tmp, "ref.err")
    subprocess.run(cmd(ref_in, ref_out, ref_err), check=True, capture_output=True, timeout=RUN_TIMEOUT)
    reference, _ = load_records(ref_out)

    out, err = os.path.join(tmp, "out.jsonl"), os.path.join(tmp, "err.jsonl")
    inflight = out + ".inflight"
    strikes = []
    kills = 0
    for attempt in range(6):
        status, killed, stderr = run_killing_the_poison(cmd(inp, out, err), inflight, strikes)
        if not killed:
            assert status == 0, f"run {attempt}: exit {status}: {stderr[-2000:]}"
            break
        kills += 1
    else:
        raise AssertionError(f"the job never completed; poison starts seen: {strikes}")
    print(f"killed {kills} times; the poison line's starts (alone, strikes): {strikes}")
    assert kills == 3, f"expected 3 deaths (once in a batch, twice alone), got {kills}: {strikes}"
    assert strikes == [(False, 0), (True, 0), (True, 1)], strikes

    records, counts = load_records(out)
    dup = {k: c for k, c in counts.items() if c != 1}
    assert not dup, f"records written more than once: {dup}"
    assert set(records) == ids, f"missing: {sorted(ids - set(records))[:5]}"
    for key in ids:
        assert records[key] == reference[key], f"{key} differs from the undisturbed run"
    errors = [json.loads(l) for l in open(err)]
    assert len(errors) == 1 and errors[0]["custom_id"] == POISON, errors
    assert errors[0]["error"]["code"] == "engine_failure", errors[0]
    assert not os.path.exists(inflight), "the .inflight file outlived a completed job"

    # A rerun has nothing left to do and writes nothing.
    subprocess.run(cmd(inp, out, err), check=True, capture_output=True, timeout=RUN_TIMEOUT)
    _, counts = load_records(out)
    assert all(c == 1 for c in counts.values())
    # A suspect that the job refuses (a bad line) holds nothing up: the rest still completes.
    bad_in = os.path.join(tmp, "bad.jsonl")
    good = [l for i, l in enumerate(lines) if i != 9][:6]
    bad = json.dumps({"custom_id": "bad", "url": "/v1/completions", "body": {"prompt": [1, 2], "top_p": 7}})
    with open(bad_in, "w") as f:
        f.write("\n".join([good[0], bad] + good[1:]) + "\n")
    bad_out, bad_err = os.path.join(tmp, "bad.out"), os.path.join(tmp, "bad.err")
    with open(bad_out + ".inflight", "w") as f:  # as if a run had died with line 2 in flight
        f.write(json.dumps({"line": 2, "custom_id": "bad", "alone": False, "strikes": 0}) + "\n")
    p = subprocess.run(cmd(bad_in, bad_out, bad_err), capture_output=True, timeout=RUN_TIMEOUT)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    records, _ = load_records(bad_out)
    assert len(records) == 6, f"a refused suspect stopped the job: {sorted(records)}"
    assert [json.loads(l)["custom_id"] for l in open(bad_err)] == ["bad"]
    print("PASS")


if __name__ == "__main__":
    main()
