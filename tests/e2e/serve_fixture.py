"""What the weft serve end-to-end tests share: a `weft serve` child process on a free loopback
port, raw-socket HTTP helpers, and the OpenAI error-shape check. `configure(weft)` must be called
before a Server is started (the test scripts do it from their --weft flag)."""
import argparse
import http.client
import importlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading

API_KEY = "e2e-secret"
MODEL = "tiny-qwen"
MAX_MODEL_LEN = 256
WEFT = None


def configure(weft):
    global WEFT
    WEFT = weft


class Server:
    """A `weft serve` child process on a free loopback port."""

    def __init__(self, model_dir, *extra, launcher=()):
        """`launcher`: a command the server runs under (say mpirun ... -np 2), or none."""
        cmd = [*launcher, WEFT, "serve", "--model", model_dir, "--host", "127.0.0.1", "--port", "0",
               "--served-model-name", MODEL, "--max-model-len", str(MAX_MODEL_LEN),
               "--kv-cache-blocks", "256", "--threads", "1", *extra]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        self.port = None
        self.grpc_port = None
        ready = threading.Event()

        def read():
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(120)
        if self.port is None:
            raise RuntimeError("server did not start:\n" + "".join(self.log))

    def request(self, method, path, body=None, headers=None, raw=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Authorization": "Bearer " + API_KEY}
        if body is not None:
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        text = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, dict(resp.getheaders()), text

    def metrics(self):
        _, _, text = self.request("GET", "/metrics")
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def raw_stream(port, body, path="/v1/completions"):
    """Opens a streaming request on a raw socket; returns the socket after the headers."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + API_KEY.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    return s


def read_response(sock, buf=b"", head=False):
    """Reads one HTTP/1.1 response from `sock` (after the bytes already in `buf`). Returns
    (status, headers with lower-case names, body, the bytes read past it). `head`: no body follows
    (the response to HEAD). Interim 1xx responses are returned like any other."""
    def fill():
        more = sock.recv(65536)
        if not more:
            raise EOFError("connection closed; got %r" % buf[-300:])
        return more
    while b"\r\n\r\n" not in buf:
        buf += fill()
    head_bytes, _, buf = buf.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if head or status < 200:
        return status, headers, b"", buf
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            while b"\r\n" not in buf:
                buf += fill()
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line, 16)
            while len(buf) < size + 2:
                buf += fill()
            body, buf = body + buf[:size], buf[size + 2:]
            if size == 0:
                return status, headers, body, buf
    length = int(headers.get("content-length", "0"))
    while len(buf) < length:
        buf += fill()
    return status, headers, buf[:length], buf[length:]


def recv_all(sock):
    """Everything until the server closes the connection."""
    data = b""
    while True:
        more = sock.recv(65536)
        if not more:
            return data
        data += more


def http_request(method, path, body=b"", extra=b""):
    return (method.encode() + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
            API_KEY.encode() + b"\r\nContent-Type: application/json\r\n" + extra +
            (b"Content-Length: %d\r\n" % len(body) if body or method == "POST" else b"") + b"\r\n" + body)


def assert_openai_error_shape(test, body):
    """OpenAI's error object: message, type, param, code; code a string or null, never a number."""
    err = json.loads(body)["error"]
    test.assertEqual(set(err), {"message", "type", "param", "code"}, body)
    test.assertTrue(err["code"] is None or isinstance(err["code"], str), body)
    test.assertTrue(err["param"] is None or isinstance(err["param"], str), body)
    return err


def require(*modules):
    """Imports `modules`, installing tests/e2e/requirements.txt with pip first when one is missing."""
    try:
        return [importlib.import_module(m) for m in modules]
    except ImportError:
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-r",
                               os.path.join(here, "requirements.txt")])
        importlib.invalidate_caches()
        return [importlib.import_module(m) for m in modules]


def parse_args(*flags, optional=()):
    """The test script's required flags (--weft and `flags`) and `optional` ones (None when
    absent); configures the fixture with --weft. Returns (args, the argv left for unittest.main)."""
    parser = argparse.ArgumentParser()
    for flag in ("--weft",) + flags:
        parser.add_argument(flag, required=True)
    for flag in optional:
        parser.add_argument(flag)
    args, rest = parser.parse_known_args()
    configure(args.weft)
    return args, [sys.argv[0]] + rest
