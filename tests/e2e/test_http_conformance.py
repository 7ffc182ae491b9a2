"""HTTP/1.1 conformance of `weft serve` through the real server, with a raw socket client:
HEAD, half-closed clients, chunked framing and trailers, request lines, Expect, error shapes,
and one large body not stalling other connections.

Run by ctest (label e2e) as:
  python3 test_http_conformance.py --weft WEFT_BINARY --make-model MAKE_TEST_MODEL_BINARY
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_fixture  # noqa: E402
from serve_fixture import (API_KEY, Server, assert_openai_error_shape,  # noqa: E402
                           http_request, read_response, recv_all)

ARGS = None


def setUpModule():
    global MODEL_DIR, SERVER
    MODEL_DIR = tempfile.mkdtemp(prefix="weft-e2e-http-")
    subprocess.check_call([ARGS.make_model, MODEL_DIR])
    SERVER = Server(MODEL_DIR, "--api-key", API_KEY)


def tearDownModule():
    SERVER.stop()
    shutil.rmtree(MODEL_DIR, ignore_errors=True)


class HttpConformanceTest(unittest.TestCase):
    """HTTP/1.1 details through the real server, with a raw socket client."""

    def connect(self, timeout=60):
        return socket.create_connection(("127.0.0.1", SERVER.port), timeout=timeout)

    def test_head_has_the_headers_of_get_and_no_body(self):
        for path in ["/health", "/v1/models", "/metrics", "/nowhere"]:
            with self.connect() as sock:
                # Pipelined on one keep-alive connection: a body after the HEAD response would be
                # read as the start of the GET response.
                sock.sendall(http_request("HEAD", path) + http_request("GET", path) + http_request("HEAD", path))
                status, headers, _, rest = read_response(sock, head=True)
                gstatus, gheaders, gbody, rest = read_response(sock, rest)
                self.assertEqual(status, gstatus, path)
                if path not in ("/metrics", "/nowhere"):  # gauges change; the 404 names the method
                    self.assertEqual(int(headers["content-length"]), len(gbody), path)
                self.assertEqual(headers.get("content-type"), gheaders.get("content-type"))
                status, _, _, rest = read_response(sock, rest, head=True)
                self.assertEqual(status, gstatus)
                sock.settimeout(0.5)
                try:
                    rest += sock.recv(65536)
                except socket.timeout:
                    pass
                self.assertEqual(rest, b"", path)

    def test_half_closed_client_gets_its_responses(self):
        body = json.dumps({"prompt": "Once upon", "max_tokens": 3, "ignore_eos": True}).encode()
        with self.connect() as sock:
            sock.sendall(http_request("POST", "/v1/completions", body) + http_request("GET", "/health"))
            sock.shutdown(socket.SHUT_WR)
            data = recv_all(sock)
        status, _, got, rest = read_response(None, data)
        self.assertEqual(status, 200, got)
        self.assertEqual(json.loads(got)["usage"]["completion_tokens"], 3)
        status, headers, got, rest = read_response(None, rest)
        self.assertEqual(status, 200, got)
        self.assertEqual(headers["connection"], "close")
        self.assertEqual(rest, b"")
        # A streamed answer too.
        body = json.dumps({"prompt": "Once upon", "max_tokens": 3, "ignore_eos": True, "stream": True}).encode()
        with self.connect() as sock:
            sock.sendall(http_request("POST", "/v1/completions", body))
            sock.shutdown(socket.SHUT_WR)
            data = recv_all(sock)
        status, _, got, _ = read_response(None, data)
        self.assertEqual(status, 200)
        self.assertTrue(got.endswith(b"data: [DONE]\n\n"), got[-200:])

    def chunked(self, body_bytes):
        with self.connect() as sock:
            sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + API_KEY.encode() +
                         b"\r\nTransfer-Encoding: chunked\r\n\r\n" + body_bytes)
            status, _, got, _ = read_response(sock)
            return status, got

    def test_chunked_trailers_are_bounded(self):
        data = json.dumps({"prompt": "hi"}).encode()
        chunk = b"%x\r\n%s\r\n" % (len(data), data)
        status, got = self.chunked(chunk + b"0\r\nX-Ok: 1\r\n\r\n")
        self.assertEqual(status, 200, got)
        fields = b"".join(b"X-T%d: 1\r\n" % i for i in range(1000))
        status, got = self.chunked(chunk + b"0\r\n" + fields + b"\r\n")
        self.assertEqual(status, 431, got)
        assert_openai_error_shape(self, got)
        status, got = self.chunked(chunk + b"0\r\nX-Big: " + b"a" * (4 << 20) + b"\r\n\r\n")
        self.assertEqual(status, 431, got)

    def test_bare_lf_in_chunked_framing_is_400_at_once(self):
        data = json.dumps({"prompt": "hi"}).encode()
        for framing in [b"%x\n%s\r\n0\r\n\r\n" % (len(data), data), b"%x\r\n%s\r\n0\r\n\n" % (len(data), data),
                        b"%x\r\n%s\r\n0\n\n" % (len(data), data)]:
            status, got = self.chunked(framing)
            self.assertEqual(status, 400, got)  # not a 408 after the request timeout
            assert_openai_error_shape(self, got)

    def test_request_line_with_extra_tokens_is_400(self):
        for line, want in [(b"GET /health HTTP/1.1 extra", 400), (b"GET /health HTTP/1.1x", 400),
                           (b"GET /health HTTP/2.0", 505)]:
            with self.connect() as sock:
                sock.sendall(line + b"\r\nHost: x\r\n\r\n")
                status, _, got, _ = read_response(sock)
                self.assertEqual(status, want, line)
                assert_openai_error_shape(self, got)

    def test_expect_100_continue(self):
        body = json.dumps({"prompt": "hi"}).encode()
        with self.connect() as sock:
            for _ in range(2):  # twice on one connection: each request gets its own 100
                sock.sendall(http_request("POST", "/tokenize", extra=b"Expect: 100-continue\r\n")
                             .replace(b"Content-Length: 0", b"Content-Length: %d" % len(body)))
                status, _, _, rest = read_response(sock)
                self.assertEqual(status, 100)
                self.assertEqual(rest, b"")
                sock.sendall(body)
                status, _, got, rest = read_response(sock, rest)
                self.assertEqual(status, 200, got)
                self.assertIn(b"tokens", got)
            # A body sent at once (no wait for the 100) is fine too; the 100 may or may not come.
            sock.sendall(http_request("POST", "/tokenize", body, extra=b"Expect: 100-continue\r\n"))
            status, _, got, rest = read_response(sock)
            if status == 100:
                status, _, got, rest = read_response(sock, rest)
            self.assertEqual(status, 200, got)
        with self.connect() as sock:
            sock.sendall(http_request("POST", "/tokenize", body, extra=b"Expect: something-else\r\n"))
            status, _, got, _ = read_response(sock)
            self.assertEqual(status, 417, got)
            assert_openai_error_shape(self, got)
        # Refused from its headers: the final status instead of 100.
        with self.connect() as sock:
            sock.sendall(http_request("POST", "/tokenize", extra=b"Expect: 100-continue\r\n")
                         .replace(b"Content-Length: 0", b"Content-Length: %d" % (9 << 20)))
            status, _, got, _ = read_response(sock)
            self.assertEqual(status, 413, got)

    def test_every_error_code_is_a_string_or_null(self):
        cases = [("POST", "/v1/completions", b"{", 400), ("POST", "/v1/completions", b'{"prompt": 1}', 400),
                 ("GET", "/nowhere", b"", 404), ("GET", "/v1/completions", b"", 405),
                 ("POST", "/v1/completions", b'{"model": "x", "prompt": "a"}', 404),
                 ("POST", "/v1/completions", json.dumps({"prompt": "hello " * 400}).encode(), 400)]
        for method, path, body, want in cases:
            status, _, got = SERVER.request(method, path, raw=body or None)
            self.assertEqual(status, want, (path, got))
            assert_openai_error_shape(self, got)
        status, _, got = SERVER.request("GET", "/v1/models", headers={"Authorization": "Bearer no"})
        self.assertEqual(status, 401)
        self.assertEqual(assert_openai_error_shape(self, got)["code"], "invalid_api_key")
        # Errors of the HTTP layer itself.
        for raw, want in [(b"GET /health HTTP/1.1\r\n\r\n", 400),
                          (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (9 << 20), 413),
                          (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
                          (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 200 + b"\r\n", 431),
                          (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
                          (b"GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505)]:
            with self.connect() as sock:
                sock.sendall(raw)
                status, _, got, _ = read_response(sock)
                self.assertEqual(status, want, raw[:60])
                assert_openai_error_shape(self, got)

    def test_small_request_completes_while_a_large_body_is_processed(self):
        """A 7.5 MB prompt is parsed and tokenized off the event loop: a small request sent after
        it, on another connection, is answered first. Only the order is asserted."""
        rng = random.Random(3)
        words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
                 for _ in range(20000)]
        prompt = " ".join(rng.choice(words) for _ in range(1300000))[:7500000]
        large = json.dumps({"prompt": prompt, "max_tokens": 1}).encode()
        small = json.dumps({"prompt": "Hi", "max_tokens": 2, "ignore_eos": True}).encode()
        done = []
        results = {}
        lock = threading.Lock()

        def receive(name, sock):
            results[name] = read_response(sock)
            with lock:
                done.append((name, time.monotonic()))

        with self.connect(timeout=300) as big, self.connect(timeout=300) as little:
            request = http_request("POST", "/v1/completions", large)
            # All but the last byte, given time to be read; then the last byte (the server starts
            # on the large request) and at once the small request on the other connection.
            big.sendall(request[:-1])
            time.sleep(0.3)
            readers = [threading.Thread(target=receive, args=("large", big)),
                       threading.Thread(target=receive, args=("small", little))]
            for t in readers:
                t.start()
            start = time.monotonic()
            big.sendall(request[-1:])
            little.sendall(http_request("POST", "/v1/completions", small))
            for t in readers:
                t.join()
        order = [name for name, _ in sorted(done, key=lambda d: d[1])]
        timings = {name: round(t - start, 3) for name, t in done}
        print("\ncompletion times (s after the large request's last byte): %s" % timings, file=sys.stderr)
        self.assertEqual(results["small"][0], 200, results["small"][2])
        self.assertEqual(results["large"][0], 400, results["large"][2][:300])  # past the context
        self.assertEqual(assert_openai_error_shape(self, results["large"][2])["code"], "context_length_exceeded")
        self.assertEqual(order, ["small", "large"], timings)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--make-model", required=True)
    ARGS, rest = parser.parse_known_args()
    serve_fixture.configure(ARGS.weft)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
