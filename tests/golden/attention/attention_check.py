#!/usr/bin/env python3
"""weft inspect's attention weights against transformers' (eager attention, output_attentions=True).

Usage:  attention_check.py WEFT [--mpirun MPIEXEC]

Runs `weft inspect` on the golden model with the committed dump's prompt (greedy, EOS ignored, every
layer and head recorded) and checks: the generated ids equal transformers' greedy ids; every
recorded row, for every layer and query head, equals transformers' weights within 1e-4; nothing is
missing or extra. With --mpirun, the same under `mpirun -np 2 ... --tp 2`, where each rank records
its own query heads and rank 0 gathers them, and under --pp 2, where each stage records its layers.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOLERANCE = 1e-4


def run_inspect(weft, reference, mpirun, workdir, layout=()):
    model = HERE.parent / "models" / reference["model"]
    report = Path(workdir) / (("_".join(layout) or "one") + ".html")
    cmd = [weft, "inspect", "--model", str(model), "--prompt-ids", ",".join(map(str, reference["prompt_ids"])),
           "--max-tokens", str(len(reference["output_ids"])), "--ignore-eos", "--generation-config", "none",
           "--attention-layers", "all", "--attention-heads", "all", "--threads", "1", "--report", str(report)]
    env = dict(os.environ)
    if mpirun:
        cmd = [mpirun, "--oversubscribe", "-np", "2"] + cmd + list(layout)
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        sys.exit("weft inspect failed (%d): %s\n%s" % (done.returncode, " ".join(cmd), done.stderr))
    return json.loads(report.with_suffix(".json").read_text())


def compare(report, reference, label):
    failures = []
    if report["output_ids"] != reference["output_ids"]:
        failures.append("%s: output ids %s, transformers %s" % (label, report["output_ids"], reference["output_ids"]))
        return failures
    got = {(m["layer"], m["head"]): {r["step"]: r for r in m["rows"]} for m in report["attention"]["maps"]}
    want_maps = 0
    worst = 0.0
    for layer in reference["layers"]:
        for head in layer["heads"]:
            key = (layer["layer"], head["head"])
            want_maps += 1
            if key not in got:
                failures.append("%s: layer %d head %d missing" % (label, key[0], key[1]))
                continue
            for row in head["rows"]:
                mine = got[key].get(row["step"])
                if mine is None or mine["position"] != row["position"] or len(mine["weights"]) != len(row["weights"]):
                    failures.append("%s: layer %d head %d step %d missing or misplaced" % (label, *key, row["step"]))
                    continue
                diff = max(abs(a - b) for a, b in zip(mine["weights"], row["weights"]))
                worst = max(worst, diff)
                if diff > TOLERANCE:
                    failures.append("%s: layer %d head %d step %d differs by %g" % (label, *key, row["step"], diff))
            if len(got[key]) != len(head["rows"]):
                failures.append("%s: layer %d head %d has %d rows, want %d" % (label, *key, len(got[key]),
                                                                              len(head["rows"])))
    if len(got) != want_maps:
        failures.append("%s: %d maps, want %d" % (label, len(got), want_maps))
    print("%s: %d maps, largest difference %.3g" % (label, len(got), worst))
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("weft")
    parser.add_argument("--mpirun")
    parser.add_argument("--reference", default=str(HERE / "llama_gqa_attention.json"))
    args = parser.parse_args()
    reference = json.loads(Path(args.reference).read_text())
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        failures += compare(run_inspect(args.weft, reference, None, workdir), reference, "one process")
        if args.mpirun:
            failures += compare(run_inspect(args.weft, reference, args.mpirun, workdir, ("--tp", "2")), reference, "TP2")
            failures += compare(run_inspect(args.weft, reference, args.mpirun, workdir, ("--pp", "2")), reference, "PP2")
    for f in failures:
        print("FAIL", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
