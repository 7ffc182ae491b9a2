"""End-to-end tests of `weft serve` with the official `openai` client and raw HTTP.

Run by ctest (label e2e) as:
  python3 test_openai_server.py --weft WEFT_BINARY --make-model MAKE_TEST_MODEL_BINARY
It generates a tiny random model with a real tokenizer, starts servers on free loopback ports and
stops them. Installs tests/e2e/requirements.txt with pip when `openai` is missing.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import openai
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-r",
                           os.path.join(HERE, "requirements.txt")])
    import openai

sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
from serve_fixture import (API_KEY, MAX_MODEL_LEN, MODEL, Server, assert_openai_error_shape,  # noqa: E402
                           raw_stream)

ARGS = None
def setUpModule():
    global MODEL_DIR, SERVER, CLIENT
    MODEL_DIR = tempfile.mkdtemp(prefix="weft-e2e-")
    subprocess.check_call([ARGS.make_model, MODEL_DIR])
    SERVER = Server(MODEL_DIR, "--api-key", API_KEY)
    CLIENT = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY, max_retries=0)


def tearDownModule():
    SERVER.stop()
    shutil.rmtree(MODEL_DIR, ignore_errors=True)


class OpenAiClientTest(unittest.TestCase):
    def test_models(self):
        ids = [m.id for m in CLIENT.models.list().data]
        self.assertEqual(ids, [MODEL])

    def test_completion_usage_and_logprobs(self):
        r = CLIENT.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=12,
                                      temperature=0, logprobs=3, extra_body={"ignore_eos": True})
        self.assertEqual(r.object, "text_completion")
        c = r.choices[0]
        self.assertEqual(c.finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 12)
        _, _, tok = SERVER.request("POST", "/tokenize", {"prompt": "The capital of France is"})
        self.assertEqual(r.usage.prompt_tokens, json.loads(tok)["count"])
        self.assertEqual(len(c.logprobs.tokens), 12)
        self.assertEqual(len(c.logprobs.token_logprobs), 12)
        # Offsets count code points: each token starts where the previous token's string ended.
        offsets = c.logprobs.text_offset
        self.assertEqual(offsets[0], 0)
        for i in range(1, len(offsets)):
            self.assertEqual(offsets[i], offsets[i - 1] + len(c.logprobs.tokens[i - 1]))
        for lp, top in zip(c.logprobs.token_logprobs, c.logprobs.top_logprobs):
            self.assertLessEqual(lp, 0.0)
            self.assertLessEqual(len(top), 3)
            # Greedy: the sampled token is the most likely one, so nothing beats its logprob.
            self.assertLessEqual(max(top.values()), lp + 1e-5)

    def test_chat_and_chat_logprobs(self):
        r = CLIENT.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi there"}],
                                           max_tokens=6, temperature=0, logprobs=True, top_logprobs=2,
                                           extra_body={"ignore_eos": True})
        self.assertEqual(r.object, "chat.completion")
        m = r.choices[0].message
        self.assertEqual(m.role, "assistant")
        self.assertEqual(len(r.choices[0].logprobs.content), 6)
        for entry in r.choices[0].logprobs.content:
            self.assertEqual(len(entry.top_logprobs), 2)
            self.assertEqual(bytes(entry.bytes).decode("utf-8", "replace"), entry.token)
        # The chat prompt is the template rendered then tokenized (as /tokenize does for messages).
        _, _, tok = SERVER.request("POST", "/tokenize", {"messages": [{"role": "user", "content": "Hi there"}]})
        self.assertEqual(r.usage.prompt_tokens, json.loads(tok)["count"])

    def test_streaming_equals_non_streaming(self):
        kw = dict(model=MODEL, prompt="Once upon a time", max_tokens=20, temperature=0,
                  extra_body={"ignore_eos": True})
        whole = CLIENT.completions.create(**kw).choices[0].text
        chunks = list(CLIENT.completions.create(stream=True, stream_options={"include_usage": True}, **kw))
        self.assertGreater(len(chunks), 2)
        self.assertEqual(len({c.id for c in chunks}), 1)
        self.assertEqual(len({c.created for c in chunks}), 1)
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        self.assertEqual(text, whole)
        finished = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        self.assertEqual(finished, ["length"])
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 20)

    def test_chat_streaming(self):
        kw = dict(model=MODEL, messages=[{"role": "user", "content": "Tell me a story"}], max_tokens=15,
                  temperature=0, extra_body={"ignore_eos": True})
        whole = CLIENT.chat.completions.create(**kw).choices[0].message.content
        chunks = list(CLIENT.chat.completions.create(stream=True, **kw))
        self.assertTrue(all(c.object == "chat.completion.chunk" for c in chunks))
        self.assertEqual(len({c.id for c in chunks}), 1)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in chunks), whole)

    def test_n_and_seed_reproducibility(self):
        kw = dict(model=MODEL, prompt="Hello", max_tokens=10, temperature=1.0, n=3, seed=1234,
                  extra_body={"ignore_eos": True})
        a = CLIENT.completions.create(**kw)
        b = CLIENT.completions.create(**kw)
        self.assertEqual(sorted(c.index for c in a.choices), [0, 1, 2])
        self.assertEqual([c.text for c in a.choices], [c.text for c in b.choices])
        self.assertEqual(a.usage.completion_tokens, 30)
        # Streaming with n: every index finishes once.
        chunks = list(CLIENT.completions.create(stream=True, **kw))
        done = sorted(c.choices[0].index for c in chunks if c.choices and c.choices[0].finish_reason)
        self.assertEqual(done, [0, 1, 2])
        streamed = ["".join(c.choices[0].text for c in chunks if c.choices and c.choices[0].index == i)
                    for i in range(3)]
        self.assertEqual(streamed, [c.text for c in a.choices])

    def test_stop_string(self):
        kw = dict(model=MODEL, prompt="Once upon", max_tokens=40, temperature=0, extra_body={"ignore_eos": True})
        text = CLIENT.completions.create(**kw).choices[0].text
        ascii_pairs = [i for i in range(len(text) // 3, len(text) - 2) if text[i:i + 2].isascii()]
        self.assertTrue(ascii_pairs, text)
        stop = text[ascii_pairs[0]:ascii_pairs[0] + 2]
        r = CLIENT.completions.create(stop=[stop], **kw)
        self.assertEqual(r.choices[0].text, text[:text.find(stop)])
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_chunked_request_body(self):
        """A body sent with Transfer-Encoding: chunked (as some proxies forward it) is answered as the
        same body with Content-Length; other transfer codings get 501."""
        body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 6, "temperature": 0}
        data = json.dumps(body).encode()
        conn = http.client.HTTPConnection("127.0.0.1", SERVER.port, timeout=60)
        conn.request("POST", "/v1/completions", body=iter([data[:7], data[7:20], data[20:]]),
                     headers={"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json",
                              "Transfer-Encoding": "chunked"}, encode_chunked=True)
        resp = conn.getresponse()
        chunked = json.loads(resp.read())
        conn.close()
        self.assertEqual(resp.status, 200, chunked)
        status, _, text = SERVER.request("POST", "/v1/completions", body)
        self.assertEqual(status, 200, text)
        self.assertEqual(chunked["choices"][0]["text"], json.loads(text)["choices"][0]["text"])
        status, _, text = SERVER.request("POST", "/v1/completions", headers={"Transfer-Encoding": "gzip"},
                                         raw=data)
        self.assertEqual(status, 501, text)

    def test_tokenize_detokenize_round_trip(self):
        status, _, body = SERVER.request("POST", "/tokenize", {"prompt": "Hello, world!"})
        self.assertEqual(status, 200)
        ids = json.loads(body)["tokens"]
        status, _, body = SERVER.request("POST", "/detokenize", {"tokens": ids})
        self.assertEqual(json.loads(body)["prompt"], "Hello, world!")


class BatchMatchesServeTest(unittest.TestCase):
    """`weft batch` answers a request body as `weft serve` does: same choices, text, finish reasons,
    usage and logprobs (both forms), for greedy and seeded sampling."""

    def test_batch_bodies_equal_serve_responses(self):
        requests = [
            ("/v1/completions", {"prompt": "The capital of France is", "max_tokens": 8, "temperature": 0,
                                 "logprobs": 3, "ignore_eos": True}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi there"}], "max_tokens": 6,
                                      "temperature": 0, "logprobs": True, "top_logprobs": 2, "ignore_eos": True}),
            ("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 10, "temperature": 0.9, "top_k": 20,
                                 "seed": 11, "n": 2, "logprobs": 0, "ignore_eos": True}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Tell me"}], "max_tokens": 5,
                                      "temperature": 0.8, "seed": 5}),
        ]
        tmp = tempfile.mkdtemp(prefix="weft-e2e-batch-")
        try:
            with open(os.path.join(tmp, "in.jsonl"), "w") as f:
                for i, (url, body) in enumerate(requests):
                    f.write(json.dumps({"custom_id": "r%d" % i, "method": "POST", "url": url,
                                        "body": dict(body, model=MODEL)}) + "\n")
            subprocess.run([ARGS.weft, "batch", "--model", MODEL_DIR, "--input", os.path.join(tmp, "in.jsonl"),
                            "--output", os.path.join(tmp, "out.jsonl"), "--served-model-name", MODEL,
                            "--max-model-len", str(MAX_MODEL_LEN), "--kv-cache-blocks", "256", "--threads", "1"],
                           check=True, capture_output=True, timeout=300)
            with open(os.path.join(tmp, "out.jsonl")) as f:
                records = {r["custom_id"]: r for r in map(json.loads, f)}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for i, (url, body) in enumerate(requests):
            status, _, text = SERVER.request("POST", url, dict(body, model=MODEL))
            self.assertEqual(status, 200, text)
            served = json.loads(text)
            record = records["r%d" % i]
            self.assertIsNone(record["error"])
            batched = record["response"]["body"]
            self.assertEqual(batched["object"], served["object"])
            self.assertEqual(batched["usage"], served["usage"])
            self.assertEqual(len(batched["choices"]), len(served["choices"]))
            for b, s in zip(batched["choices"], served["choices"]):
                for key in ("index", "finish_reason", "text", "message"):
                    self.assertEqual(b.get(key), s.get(key), "request %d %s" % (i, key))
                self.assert_same_logprobs(b["logprobs"], s["logprobs"], "request %d" % i)

    def assert_same_logprobs(self, a, b, what):
        """Equal structure and token strings; numbers within 1e-4 (batching may differ)."""
        if isinstance(a, dict):
            self.assertIsInstance(b, dict, what)
            self.assertEqual(sorted(a), sorted(b), what)
            for k in a:
                self.assert_same_logprobs(a[k], b[k], what + "." + k)
        elif isinstance(a, list):
            self.assertIsInstance(b, list, what)
            self.assertEqual(len(a), len(b), what)
            for i, (x, y) in enumerate(zip(a, b)):
                self.assert_same_logprobs(x, y, "%s[%d]" % (what, i))
        elif isinstance(a, float) or isinstance(b, float):
            self.assertAlmostEqual(a, b, delta=1e-4, msg=what)
        else:
            self.assertEqual(a, b, what)


class ErrorTest(unittest.TestCase):
    def assertError(self, status, body, want_status, param=None, contains=None):
        self.assertEqual(status, want_status, body)
        err = assert_openai_error_shape(self, body)
        if param is not None:
            self.assertEqual(err["param"], param)
        if contains is not None:
            self.assertIn(contains, err["message"])
        return err

    def test_auth(self):
        s, _, b = SERVER.request("POST", "/v1/completions", {"prompt": "x"}, headers={"Authorization": ""})
        self.assertError(s, b, 401)
        s, _, b = SERVER.request("GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        self.assertError(s, b, 401)
        s, _, _ = SERVER.request("GET", "/health", headers={"Authorization": ""})
        self.assertEqual(s, 200)

    def test_unknown_model(self):
        s, _, b = SERVER.request("POST", "/v1/completions", {"model": "gpt-9", "prompt": "x"})
        self.assertError(s, b, 404, param="model", contains="gpt-9")

    def test_bad_parameters_are_named(self):
        for body, param in [({"prompt": "x", "temperature": "hot"}, "temperature"),
                            ({"prompt": "x", "top_p": 1.5}, "top_p"),
                            ({"prompt": "x", "n": 0}, "n"),
                            ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
                            ({"prompt": "x", "stream": "yes"}, "stream"),
                            ({"prompt": "x", "logprobs": 99}, "logprobs"),
                            ({"prompt": [1, 2, 99999999]}, "prompt"),
                            ({"prompt": "x", "stream_options": {"include_usage": True}}, "stream_options")]:
            s, _, b = SERVER.request("POST", "/v1/completions", body)
            self.assertError(s, b, 400, param=param)
        s, _, b = SERVER.request("POST", "/v1/chat/completions",
                                 {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})
        self.assertError(s, b, 400, param="top_logprobs")
        s, _, b = SERVER.request("POST", "/v1/chat/completions",
                                 {"messages": [{"role": "user", "content": "x"}],
                                  "response_format": {"type": "yaml"}})
        self.assertError(s, b, 400, param="response_format.type")

    def test_prompt_past_the_context(self):
        s, _, b = SERVER.request("POST", "/v1/completions", {"prompt": "hello " * 400, "max_tokens": 4})
        err = self.assertError(s, b, 400, contains=str(MAX_MODEL_LEN))
        self.assertEqual(err["code"], "context_length_exceeded")
        s, _, b = SERVER.request("POST", "/v1/completions", {"prompt": "hello", "max_tokens": 1000})
        self.assertError(s, b, 400, param="max_tokens", contains=str(MAX_MODEL_LEN))

    def test_malformed_huge_and_nested_bodies(self):
        cases = [b"", b"{", b"[1,2,3]", b"\xff\xfe{}", b"null", b'{"prompt": "\\ud800"}',
                 b"[" * 100000 + b"]" * 100000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                 json.dumps({"prompt": "x", "stop": [[["deep"]]]}).encode()]
        rng = random.Random(7)
        good = json.dumps({"prompt": "hello", "max_tokens": 2, "stop": ["a"], "logit_bias": {"1": 2}}).encode()
        for _ in range(60):
            b = bytearray(good)
            for _ in range(rng.randint(1, 6)):
                i = rng.randrange(len(b))
                b[i] = rng.randrange(256)
            cases.append(bytes(b))
        for raw in cases:
            s, _, b = SERVER.request("POST", "/v1/completions", raw=raw)
            self.assertIn(s, (200, 400), raw[:80])
            if s == 400:
                self.assertIn("error", json.loads(b))
        # A body past the 8 MiB limit is refused from its headers, before it is sent.
        with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (9 << 20))
            self.assertTrue(sock.recv(4096).startswith(b"HTTP/1.1 413 "))
        # ... and a client that sends it anyway still reads the 413 (lingering close, no reset).
        s, _, b = SERVER.request("POST", "/v1/completions", raw=b"x" * (9 << 20))
        self.assertError(s, b, 413)
        # Garbage on the wire: malformed HTTP gets a 4xx and the server stays up.
        for junk in [b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"GET /health HTTP/1.1\r\nHost: x\r\n" +
                     b"X: y\r\n" * 200 + b"\r\n", b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"]:
            with socket.create_connection(("127.0.0.1", SERVER.port), timeout=10) as sock:
                sock.sendall(junk)
                reply = sock.recv(4096)
                self.assertRegex(reply, rb"^HTTP/1.1 (4\d\d|5\d\d) ")
        s, _, _ = SERVER.request("GET", "/health")
        self.assertEqual(s, 200)

    def test_disconnect_frees_kv(self):
        sock = raw_stream(SERVER.port, {"prompt": "Keep going", "max_tokens": 200, "stream": True,
                                        "ignore_eos": True})
        got = b""
        while got.count(b"data: ") < 3:
            got += sock.recv(4096)
        m = SERVER.metrics()
        self.assertGreater(m["weft:kv_cache_usage_perc"], 0.0)
        sock.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            m = SERVER.metrics()
            if m["weft:kv_cache_usage_perc"] == 0.0 and m["weft:num_requests_running"] == 0:
                break
            time.sleep(0.05)
        self.assertEqual(m["weft:kv_cache_usage_perc"], 0.0)
        self.assertEqual(m["weft:num_requests_running"], 0)
        self.assertGreaterEqual(m['weft:request_success_total{finished_reason="abort"}'], 1)

    def test_metrics_exposition(self):
        CLIENT.completions.create(model=MODEL, prompt="a", max_tokens=3, extra_body={"ignore_eos": True})
        m = SERVER.metrics()
        for name in ["weft:num_requests_running", "weft:num_requests_waiting", "weft:kv_cache_usage_perc",
                     "weft:prompt_tokens_total", "weft:generation_tokens_total",
                     "weft:time_to_first_token_seconds_count", "weft:inter_token_latency_seconds_count",
                     "weft:e2e_request_latency_seconds_count"]:
            self.assertIn(name, m)
        self.assertGreater(m["weft:generation_tokens_total"], 0)
        self.assertGreater(m["weft:time_to_first_token_seconds_count"], 0)


class QueueAndDrainTest(unittest.TestCase):
    def test_full_queue_then_drain(self):
        server = Server(MODEL_DIR, "--max-waiting", "1", "--max-num-seqs", "1", "--drain-timeout", "120",
                        "--api-key", API_KEY, "--max-model-len", "65536", "--kv-cache-blocks", "4200")
        try:
            # The two long requests must outlast the checks below (a few milliseconds) on any machine,
            # so their length comes from this machine's measured decode rate: about five seconds each.
            calibration = 400
            start = time.monotonic()
            s, _, b = server.request("POST", "/v1/completions",
                                     {"prompt": "Run", "max_tokens": calibration, "ignore_eos": True})
            self.assertEqual(s, 200, b)
            tokens_per_second = calibration / max(time.monotonic() - start, 1e-3)
            max_tokens = int(min(65000, max(4000, 5 * tokens_per_second)))
            long = {"prompt": "Run", "max_tokens": max_tokens, "stream": True, "ignore_eos": True}

            def wait_for(running, waiting):
                # Headers go out on admission, before the scheduler runs a request: poll the gauges.
                deadline = time.time() + 30
                while time.time() < deadline:
                    m = server.metrics()
                    if (m["weft:num_requests_running"], m["weft:num_requests_waiting"]) == (running, waiting):
                        return
                    time.sleep(0.01)
                self.fail("gauges never showed %d running, %d waiting: %s" % (running, waiting, m))

            running = raw_stream(server.port, long)
            first = running.recv(4096)
            self.assertIn(b"200 OK", first)
            wait_for(1, 0)  # until then the first request itself holds the one waiting place
            waiting = raw_stream(server.port, long)  # takes the one waiting place
            wait_for(1, 1)
            s, h, b = server.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
            self.assertIn(s, (429, 503), b)
            self.assertIn("Retry-After", h)
            assert_openai_error_shape(self, b)
            self.assertEqual(server.request("GET", "/ready")[0], 200)

            server.proc.send_signal(signal.SIGTERM)
            deadline = time.time() + 10
            while time.time() < deadline and server.request("GET", "/ready")[0] != 503:
                time.sleep(0.02)
            self.assertEqual(server.request("GET", "/ready")[0], 503)
            s, h, b = server.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
            self.assertEqual(s, 503)
            self.assertIn("Retry-After", h)
            assert_openai_error_shape(self, b)
            for sock in (running, waiting):
                data = first if sock is running else b""
                while not data.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"):
                    more = sock.recv(65536)
                    if not more:
                        break
                    data += more
                self.assertIn(b'"finish_reason":"length"', data)
                self.assertTrue(data.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n"), data[-200:])
                sock.close()
            self.assertEqual(server.proc.wait(60), 0, "".join(server.log))
        finally:
            server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--make-model", required=True)
    ARGS, rest = parser.parse_known_args()
    serve_fixture.configure(ARGS.weft)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
