"""The default model through every path weft has: generate (one rank, --tp 2, --pp 2 under
mpirun), batch and serve, each without --model, each giving transformers' greedy text
(reference.json, made by scripts/default-model/make_reference.py).

  python3 paths_check.py WEFT_BINARY MPIEXEC
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def check(label, got, want):
    if got != want:
        sys.exit("%s: got %r, transformers gave %r" % (label, got, want))
    print("%s: ok" % label)


def generate(cmd, prompt, max_tokens):
    """The greedy output ids of `weft generate` run by `cmd` (a binary, or mpirun + binary + flags)."""
    out = subprocess.run(cmd + ["--prompt", prompt, "--max-tokens", str(max_tokens), "--ignore-eos", "--temperature", "0",
                                              "--json", "--threads", "1"], check=True, capture_output=True,
                         text=True, env=MPI_ENV, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])["output_ids"]


def batch(weft, greedy, max_tokens):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "in.jsonl"), "w") as f:
            for i, g in enumerate(greedy):
                body = {"prompt": g["prompt"], "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
                f.write(json.dumps({"custom_id": "p%d" % i, "method": "POST", "url": "/v1/completions",
                                    "body": body}) + "\n")
        subprocess.run([weft, "batch", "--input", os.path.join(tmp, "in.jsonl"), "--output",
                        os.path.join(tmp, "out.jsonl"), "--threads", "1"], check=True, capture_output=True,
                       timeout=300)
        texts = {}
        with open(os.path.join(tmp, "out.jsonl")) as f:
            for line in f:
                record = json.loads(line)
                texts[record["custom_id"]] = record["response"]["body"]["choices"][0]["text"]
        return [texts["p%d" % i] for i in range(len(greedy))]


def serve(weft, greedy, max_tokens):
    proc = subprocess.Popen([weft, "serve", "--host", "127.0.0.1", "--port", "0", "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port, log = [], []
    ready = threading.Event()

    def read():
        for line in proc.stderr:
            log.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                port.append(int(m.group(1)))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(120)
        if not port:
            sys.exit("weft serve did not start:\n" + "".join(log))
        texts = []
        for g in greedy:
            body = json.dumps({"model": "default-model", "prompt": g["prompt"], "max_tokens": max_tokens,
                               "temperature": 0, "ignore_eos": True}).encode()
            req = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port[0], data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as r:
                texts.append(json.loads(r.read())["choices"][0]["text"])
        return texts
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def main():
    weft, mpiexec = sys.argv[1], sys.argv[2]
    with open(os.path.join(HERE, "reference.json")) as f:
        reference = json.load(f)
    greedy, max_tokens = reference["greedy"], reference["max_tokens"]
    for g in greedy:
        check("generate %r" % g["prompt"], generate([weft, "generate"], g["prompt"], max_tokens), g["output_ids"])
    mpi = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2", weft, "generate"]
    for layout in (["--tp", "2"], ["--pp", "2"]):
        check("generate %s" % " ".join(layout), generate(mpi + layout, greedy[0]["prompt"], max_tokens),
              greedy[0]["output_ids"])
    check("batch", batch(weft, greedy, max_tokens), [g["text"] for g in greedy])
    check("serve", serve(weft, greedy, max_tokens), [g["text"] for g in greedy])


if __name__ == "__main__":
    main()
