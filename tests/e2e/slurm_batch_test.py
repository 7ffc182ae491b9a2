#!/usr/bin/env python3
"""weft batch under a real local Slurm (cluster/slurm/start-local-slurm.sh, started and stopped
here): sbatch cluster/slurm/weft-batch.sbatch with RANKS tasks and check the output equals a run
without Slurm; then sbatch again, `scontrol requeue` the job mid-run, and check the requeued job
resumes and ends with every custom_id exactly once and the same records. With RANKS > 1, also
cluster/slurm/weft-serve.sbatch: the job serves (TP RANKS) the greedy text one process serves,
and scancel drains it (the script reports weft's exit status 0).
Usage: slurm_batch_test.py WEFT MODEL_DIR RANKS. Exit 77 (skipped) when Slurm cannot start here.
Every wait is bounded."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import json
import random
import socket
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from batch_inputs import compare, write_input  # noqa: E402

WEFT, MODEL, RANKS = sys.argv[1], sys.argv[2], int(sys.argv[3])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SLURM_DIR = os.path.join(ROOT, "cluster", "slurm")
SKIP = 77


def skip(message):
    print(f"SKIPPED: {message}")
    sys.exit(SKIP)


def weft_args(inp, out, err, ranks=None):
    """weft batch flags; `ranks` > 1 adds --tp (the Slurm job's tasks form one TP group)."""
    ranks = RANKS if ranks is None else ranks
    args = ["--model", MODEL, "--input", inp, "--output", out, "--errors", err, "--threads", "1",
            "--max-in-flight", "1", "--progress-interval", "0.5"]
    if ranks > 1:
        args += ["--tp", str(ranks)]
    return args


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def job_field(env, job, field):
    p = subprocess.run(["scontrol", "show", "job", str(job)], env=env, capture_output=True,
                       text=True, timeout=30)
    m = re.search(rf"\b{field}=(\S+)", p.stdout)
    return m.group(1) if m else None


def wait_for(what, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def sbatch(env, workdir, args):
    p = subprocess.run(["sbatch", "--parsable", "-n", str(RANKS), f"--chdir={workdir}",
                        os.path.join(SLURM_DIR, "weft-batch.sbatch")] + args,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"sbatch failed: {p.stderr}"
    return int(p.stdout.strip().split(";")[0])


def wait_completed(env, job, timeout):
    def done():
        state = job_field(env, job, "JobState")
        assert state not in ("FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"), \
            f"job {job} ended {state}"
        return state == "COMPLETED"
    wait_for(f"job {job} to complete", done, timeout)


def free_port_pair():
    """A port p with p and p + 1 free now (slurmctld and slurmd), below the kernel's ephemeral
    range so that no other test's client socket is given one meanwhile. (The ports once came from
    the pid, in the ephemeral range: slurmctld found its port taken, died, and the start hung.)"""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(10000, max(ephemeral_low - 2, 10002), 2)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("", port))
                b.bind(("", port + 1))
            return port
        except OSError:
            continue
    skip(f"no free port pair found below {ephemeral_low} in 200 tries")


def start_local_slurm(env, state):
    """Starts the local Slurm on free ports; a start that fails (another process can still take a
    port between the check and the bind) is retried on new ports, twice. Skips when none starts."""
    script = os.path.join(SLURM_DIR, "start-local-slurm.sh")
    for attempt in range(3):
        env["WEFT_SLURM_PORT"] = str(free_port_pair())
        start = subprocess.run([script, state], env=env, capture_output=True, text=True,
                               timeout=120)
        if start.returncode == 0:
            return
        subprocess.run([os.path.join(SLURM_DIR, "stop-local-slurm.sh"), state],
                       capture_output=True, timeout=60)
        print(f"start {attempt + 1} on port {env['WEFT_SLURM_PORT']} failed: "
              f"{start.stderr[-1500:]}")
        shutil.rmtree(state, ignore_errors=True)
    skip("the local Slurm did not start (three tries; see above)")


def main():
    for tool in ("munged", "slurmctld", "slurmd", "sbatch", "scontrol"):
        if shutil.which(tool) is None:
            skip(f"{tool} is not installed (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        skip("the local Slurm runs with SlurmUser=root: run as root")
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, "slurm")
        env = dict(os.environ, WEFT_BIN=WEFT)
        start_local_slurm(env, state)
        env["SLURM_CONF"] = os.path.join(state, "slurm.conf")
        try:
            return run_tests(env, tmp)
        finally:
            subprocess.run([os.path.join(SLURM_DIR, "stop-local-slurm.sh"), state], env=env,
                           capture_output=True, timeout=60)


def run_tests(env, tmp):
    inp = os.path.join(tmp, "in.jsonl")
    write_input(inp, 600, seed=5)
    ref_out, ref_err = os.path.join(tmp, "ref.jsonl"), os.path.join(tmp, "ref_err.jsonl")
    # The reference is one process: the job under Slurm must give the same records on RANKS ranks.
    subprocess.run([WEFT, "batch"] + weft_args(inp, ref_out, ref_err, ranks=1), check=True,
                   capture_output=True, timeout=300)
    failures = []

    out, err = os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "a_err.jsonl")
    job = sbatch(env, tmp, weft_args(inp, out, err))
    wait_completed(env, job, 300)
    problems = compare(ref_out, out) + compare(ref_err, err)
    print(f"job {job} ({RANKS} rank(s)): {count_lines(out)} records: "
          f"{'OK' if not problems else problems[:5]}")
    failures += [f"plain job: {p}" for p in problems[:5]]

    out, err = os.path.join(tmp, "b.jsonl"), os.path.join(tmp, "b_err.jsonl")
    job = sbatch(env, tmp, weft_args(inp, out, err))
    wait_for(f"job {job} to write 60 records", lambda: count_lines(out) >= 60, 300)
    at_requeue = count_lines(out)
    subprocess.run(["scontrol", "requeue", str(job)], env=env, check=True, timeout=60)
    wait_for(f"job {job} to be requeued",
             lambda: int(job_field(env, job, "Restarts") or 0) >= 1, 60)
    wait_completed(env, job, 300)
    with open(os.path.join(tmp, f"weft-batch-{job}.log")) as f:
        log = f.read()
    problems = compare(ref_out, out) + compare(ref_err, err)
    if at_requeue >= count_lines(ref_out):
        problems.append("the job had finished before the requeue (not a mid-run requeue)")
    if "run 2" not in log or "already done earlier" not in log:
        problems.append(f"the log shows no resumed run: {log[-1500:]}")
    resumed = re.findall(r"(\d+) already done earlier", log)
    print(f"job {job}: requeued at {at_requeue} records; runs: {log.count('weft-batch: job')}, "
          f"resumed run skipped {resumed[-1] if resumed else '?'} done lines: "
          f"{'OK' if not problems else problems[:5]}")
    failures += [f"requeued job: {p}" for p in problems[:5]]
    if RANKS > 1:
        failures += serve_job(env, tmp)
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        return 1
    return 0


def complete(port):
    body = json.dumps({"model": "default-model", "prompt": "In the beginning", "max_tokens": 12,
                       "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["choices"][0]["text"]


def ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_job(env, tmp):
    """weft-serve.sbatch with RANKS tasks answers as one process does; scancel drains it."""
    default_model = os.path.join(ROOT, "configs", "default-model")
    port = free_port()
    single = subprocess.Popen([WEFT, "serve", "--model", default_model, "--port", str(port),
                               "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("the one-process server", lambda: ready(port), 120)
        expected = complete(port)
    finally:
        single.terminate()
        single.wait(60)
    port = free_port()
    # Submitted from the repository root (the script finds cluster/bind-gpu.sh there), run in tmp.
    p = subprocess.run(["sbatch", "--parsable", "-n", str(RANKS), f"--chdir={tmp}",
                        os.path.join(SLURM_DIR, "weft-serve.sbatch"), "--model", default_model,
                        "--tp", str(RANKS), "--port", str(port), "--threads", "1"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"sbatch weft-serve.sbatch failed: {p.stderr}"
    job = int(p.stdout.strip().split(";")[0])
    log_path = os.path.join(tmp, f"weft-serve-{job}.log")
    wait_for(f"serve job {job} to be ready", lambda: ready(port), 180)
    got = complete(port)
    subprocess.run(["scancel", str(job)], env=env, check=True, timeout=60)
    wait_for(f"serve job {job} to end",
             lambda: job_field(env, job, "JobState") not in ("RUNNING", "PENDING", "COMPLETING"), 120)
    with open(log_path) as f:
        log = f.read()
    problems = []
    if got != expected:
        problems.append(f"serve job: {got!r}, one process: {expected!r}")
    if "weft-serve: exited with status 0" not in log:
        problems.append(f"serve job: no clean drain after scancel: {log[-1500:]}")
    print(f"serve job {job} ({RANKS} ranks): {'OK' if not problems else problems}")
    return problems


if __name__ == "__main__":
    sys.exit(main())
