#!/usr/bin/env python3
"""The fault test of `weft supervise` (issue 18): random SIGKILLs (or SIGSTOPs: a stalled rank) of
a random rank of a 2-rank engine job (TP2 or PP2, oversubscribed) while concurrent streaming and
non-streaming requests run.

Every request must complete, through the official openai client, with exactly the text of an
undisturbed run (greedy and seeded sampled requests; unseeded ones get a seed pinned by the
supervisor, so they must simply complete). Prints the recovery time of each kill (kill -> /ready
200 again) and how many streams were cut mid-way (they must be some, or the test proved nothing).

  supervisor_fault_test.py --weft build/launcher/weft --mpirun mpirun --model configs/default-model
                           --layout tp2 --kills 10
"""
import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import openai

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):",
    "The three primary colors are",
    "In 1492, Columbus",
    "Water boils at",
]
MAX_TOKENS = 40


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_status(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:
        return None


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        if ppid == pid:
            out.append(int(entry))
    return out


def rank_pids(supervisor_pid):
    """The weft processes of the engine job: the children of mpirun, the supervisor's child."""
    ranks = []
    for launcher in children(supervisor_pid):
        for p in children(launcher):
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if any(arg.endswith(b"weft") for arg in cmd) and b"serve" in cmd:
                ranks.append(p)
    return sorted(ranks)


def metric(base, name):
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"/metrics has no {name}")


def restarts_total(base):
    return int(metric(base, "weft:supervisor_engine_restarts_total"))


def round_started(results):
    return min(r["started_at"] for r in results)


def requests_for_round(grpc):
    """(kind, prompt, params, comparable): the mix every round sends."""
    out = []
    if grpc:
        out.append(("grpc", PROMPTS[2], {"max_tokens": MAX_TOKENS, "temperature": 0.0}, True))
        out.append(("grpc-chat", PROMPTS[3], {"max_tokens": MAX_TOKENS, "temperature": 0.8, "seed": 7}, True))
    for i, prompt in enumerate(PROMPTS):
        sampled = i % 2 == 1
        params = {"max_tokens": MAX_TOKENS, "temperature": 0.8 if sampled else 0.0}
        if sampled:
            params["seed"] = 1000 + i
        out.append(("completion-stream", prompt, params, True))
        out.append(("chat-stream", prompt, params, True))
    out.append(("completion", PROMPTS[0], {"max_tokens": MAX_TOKENS, "temperature": 0.0}, True))
    # Unseeded and sampled: the supervisor pins a seed; it must complete, its text is anyone's.
    out.append(("completion-stream", PROMPTS[1], {"max_tokens": MAX_TOKENS, "temperature": 1.0}, False))
    return out


def run_grpc(client_path, port, kind, prompt, params, result, seen):
    cmd = [client_path, "--port", str(port), "--prompt", prompt, "--max-tokens", str(params["max_tokens"]),
           "--temperature", str(params["temperature"])]
    if "seed" in params:
        cmd += ["--seed", str(params["seed"])]
    if kind == "grpc-chat":
        cmd.append("--chat")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    last = None
    for line in proc.stdout:
        if line.strip() == "first":
            seen()
        else:
            last = line
    proc.wait()
    out = json.loads(last)
    if out["status"] != 0:
        raise RuntimeError(f"gRPC call ended with status {out['status']}: {out['message']}")
    return out["text"], out["finish_reason"], out["messages"]


def run_one(client, kind, prompt, params, result, grpc=None):
    """Fills result with text, finish_reason and the number of streamed events."""
    events = 0
    text = ""
    finish = None
    result["first_at"] = None
    result["started_at"] = time.monotonic()

    def seen():
        if result["first_at"] is None:
            result["first_at"] = time.monotonic()

    if kind.startswith("grpc"):
        text, finish, events = run_grpc(grpc[0], grpc[1], kind, prompt, params, result, seen)
    elif kind == "completion":
        r = client.completions.create(model="m", prompt=prompt, **params)
        text, finish = r.choices[0].text, r.choices[0].finish_reason
    elif kind == "completion-stream":
        for chunk in client.completions.create(model="m", prompt=prompt, stream=True, **params):
            for c in chunk.choices:
                text += c.text
                events += 1
                seen()
                finish = c.finish_reason or finish
    else:
        stream = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt}], stream=True, **params)
        for chunk in stream:
            for c in chunk.choices:
                text += c.delta.content or ""
                events += 1
                seen()
                finish = c.finish_reason or finish
    result.update(text=text, finish=finish, events=events, done_at=time.monotonic())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weft", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--model", required=True)
    ap.add_argument("--layout", choices=["tp2", "pp2"], default="tp2")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--grpc-client", help="grpc_generate_client: supervise gRPC too and send some requests over it")
    ap.add_argument("--stops", type=int, default=0,
                    help="of the kills, how many SIGSTOP the rank instead (a stall, not a death)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    port, engine_port = free_port(), free_port()
    layout = ["--tp", "2"] if args.layout == "tp2" else ["--pp", "2"]
    grpc_port, engine_grpc_port = free_port(), free_port()
    supervise_grpc = ["--grpc-port", str(grpc_port), "--engine-grpc-port", str(engine_grpc_port)] if args.grpc_client else []
    serve_grpc = ["--grpc-port", str(engine_grpc_port)] if args.grpc_client else []
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    log = tempfile.NamedTemporaryFile("w+", prefix="supervise-", suffix=".log", delete=False)
    cmd = [args.weft, "supervise", "--port", str(port), "--engine-port", str(engine_port),
           "--max-restarts", str(args.kills + 5), "--restart-backoff-ms", "100", *supervise_grpc, "--",
           args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2",
           args.weft, "serve", "--model", args.model, "--port", str(engine_port), "--threads", "1",
           "--served-model-name", "m", "--max-model-len", "512", "--step-timeout-floor", "5", *layout,
           *serve_grpc]
    sup = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"

    def fail(message):
        print("FAIL:", message)
        log.flush()
        log.seek(0)
        print(log.read()[-6000:])
        sup.kill()
        sys.exit(1)

    def wait_ready(timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if http_status(base + "/ready") == 200:
                return True
            if sup.poll() is not None:
                fail(f"the supervisor exited with {sup.returncode}")
            time.sleep(0.05)
        return False

    try:
        if not wait_ready(120):
            fail("the supervised engine did not become ready")
        client = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0, timeout=300)
        mix = requests_for_round(bool(args.grpc_client))
        grpc = (args.grpc_client, grpc_port)

        def run_round(kill_after=None, sig=signal.SIGKILL):
            results = [dict() for _ in mix]
            threads = [threading.Thread(target=run_one, args=(client, k, p, params, results[i], grpc))
                       for i, (k, p, params, _) in enumerate(mix)]
            for t in threads:
                t.start()
            killed = None
            if kill_after is not None:
                time.sleep(kill_after)
                ranks = rank_pids(sup.pid)
                if len(ranks) != 2:
                    fail(f"expected 2 engine ranks, found {ranks}")
                victim = rng.randrange(2)
                killed = (victim, time.monotonic())
                os.kill(ranks[victim], sig)
            for t in threads:
                t.join(600)
                if t.is_alive():
                    fail("a request did not finish within 600 s")
            return results, killed

        started = time.monotonic()
        reference, _ = run_round()
        round_s = time.monotonic() - started
        for i, r in enumerate(reference):
            if "text" not in r:
                fail(f"reference request {i} did not complete")

        recoveries = []
        cut_streams = 0
        for k in range(args.kills):
            # Kill somewhere inside a round, so that streams are cut mid-way.
            sig = signal.SIGSTOP if k < args.stops else signal.SIGKILL
            results, (victim, killed_at) = run_round(kill_after=rng.uniform(0.1, 0.8) * round_s, sig=sig)
            # A kill after the last request finished is noticed later: wait for the restart.
            end = time.monotonic() + 120
            while restarts_total(base) < k + 1:
                if time.monotonic() > end:
                    fail(f"kill {k + 1}: the supervisor did not restart the engine")
                time.sleep(0.05)
            if not wait_ready(120):
                fail(f"kill {k + 1}: the engine did not come back")
            for i, ((kind, prompt, params, comparable), r, ref) in enumerate(zip(mix, results, reference)):
                if "text" not in r:
                    fail(f"kill {k + 1}: request {i} ({kind}) raised instead of completing")
                if r["finish"] not in ("stop", "length"):
                    fail(f"kill {k + 1}: request {i} ({kind}) finished with {r['finish']!r}")
                if comparable and r["text"] != ref["text"]:
                    fail(f"kill {k + 1} (rank {victim}): request {i} ({kind}, {params}) differs from the "
                         f"undisturbed run:\n  got      {r['text']!r}\n  expected {ref['text']!r}")
                if r["first_at"] is not None and r["first_at"] < killed_at < r["done_at"]:
                    cut_streams += 1
            recoveries.append(metric(base, "weft:supervisor_last_recovery_seconds"))
            print(f"kill {k + 1:2d}: {signal.Signals(sig).name} rank {victim} after {killed_at - round_started(results):.2f} s, "
                  f"recovery {recoveries[-1]:.2f} s (failure seen -> ready), every request done "
                  f"{max(r['done_at'] for r in results) - killed_at:.2f} s after the kill", flush=True)
        if cut_streams == 0:
            fail("no stream was still running at a kill: the test exercised no replay")
        if restarts_total(base) != args.kills:
            fail(f"weft:supervisor_engine_restarts_total is {restarts_total(base)}, expected {args.kills}")
        print(f"{args.layout}: {args.kills} kills, {len(mix)} requests per kill, {cut_streams} streams "
              f"still running at a kill, all identical to the undisturbed run; recovery s: min "
              f"{min(recoveries):.2f} median {sorted(recoveries)[len(recoveries) // 2]:.2f} max "
              f"{max(recoveries):.2f}")

        # SIGTERM: the supervisor stops the engine job and exits 0, leaving no rank behind.
        launcher = children(sup.pid)
        sup.send_signal(signal.SIGTERM)
        if sup.wait(120) != 0:
            fail(f"the supervisor exited with {sup.returncode} after SIGTERM")
        for p in launcher:
            if os.path.exists(f"/proc/{p}") and children(p):
                fail(f"engine processes outlived the supervisor: {children(p)}")
        print("PASS")
    finally:
        if sup.poll() is None:
            sup.kill()


if __name__ == "__main__":
    main()
