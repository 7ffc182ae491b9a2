"""`"weft_debug": true` on `weft serve`: the weft inspect report of one served request, on the default
model (configs/default-model), through real HTTP requests to real servers (one started with
--enable-debug-reports, one without, both with an API key).

Checks: the report's prompt ids equal `weft tokenize` of its rendered prompt (completions and chat);
its per-step logprobs equal the response's logprobs (and its chosen ids spell the response's text);
asking for the report does not change the output; the stop reason is right (max_tokens, a stop
string at its byte offset, a stop token id); the sampling sources (request field,
generation_config.json, weft default); the attention weights equal those `weft inspect` records
for the same request (whose own test compares them with transformers), for the default and for
chosen layers and heads, and under mpirun with TP 2 and PP 2 (each rank records its heads and
layers); the request's own KV blocks; the tokens banned-phrase rollbacks withdrew (bad_words);
a streamed request's report in its last chunk; refused with a 400 naming weft_debug when the
server has reports off, for a value of another type, an unknown member, an index outside the
model, n 2; refused (401) without the key; the HTML page and the JSON at
/v1/debug/reports/{response id}, 404 for an unknown id and on the server without reports;
--debug-report-store N keeps the N most recent reports, and a bad N is refused.

Run by ctest (label e2e) as:
  python3 test_serve_debug_report.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR [--mpirun MPIRUN]
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
from serve_fixture import MODEL, Server, assert_openai_error_shape  # noqa: E402

ARGS = None
PROMPT = "And God said unto Moses,"


def weft_tokenize(text, add_special):
    line = json.dumps({"text": text, "add_special_tokens": add_special}) + "\n"
    done = subprocess.run([ARGS.weft, "tokenize", "--model", ARGS.model], input=line, capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError("weft tokenize failed: " + done.stderr)
    return json.loads(done.stdout)["ids"]


def weft_inspect_attention(prompt, max_tokens, layers, heads):
    """The attention maps `weft inspect` records for a greedy completion of `prompt`: (layer, head)
    -> the rows' weights in step order."""
    with tempfile.TemporaryDirectory() as tmp:
        html = os.path.join(tmp, "r.html")
        done = subprocess.run([ARGS.weft, "inspect", "--model", ARGS.model, "--threads", "1", "--prompt", prompt,
                               "--max-tokens", str(max_tokens), "--temperature", "0", "--report", html,
                               "--attention-layers", ",".join(map(str, layers)),
                               "--attention-heads", ",".join(map(str, heads))],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError("weft inspect failed: " + done.stderr)
        with open(os.path.join(tmp, "r.json")) as f:
            return maps_of(json.load(f)["attention"])


def maps_of(attention):
    return {(m["layer"], m["head"]): [r["weights"] for r in sorted(m["rows"], key=lambda r: r["step"])]
            for m in attention["maps"]}


def sse_chunks(text):
    """The JSON chunks of an SSE body, and whether it ended with [DONE]."""
    chunks, done = [], False
    for line in text.splitlines():
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            done = True
        else:
            chunks.append(json.loads(line[len("data: "):]))
    return chunks, done


def setUpModule():
    global ON, OFF
    ON = Server(ARGS.model, "--api-key", serve_fixture.API_KEY, "--enable-debug-reports")
    OFF = Server(ARGS.model, "--api-key", serve_fixture.API_KEY)


def tearDownModule():
    ON.stop()
    OFF.stop()


def post(server, path, body, headers=None):
    status, hdrs, text = server.request("POST", path, dict(body, model=MODEL), headers=headers)
    return status, hdrs, json.loads(text) if text else None


class ServedDebugReport(unittest.TestCase):
    def completion(self, **fields):
        body = dict(prompt=PROMPT, max_tokens=10, seed=3, weft_debug=True)
        body.update(fields)
        status, _, resp = post(ON, "/v1/completions", body)
        self.assertEqual(status, 200, resp)
        self.assertIn("weft_debug", resp)
        return resp, resp["weft_debug"]

    def test_prompt_tokens_equal_weft_tokenize(self):
        _, report = self.completion(max_tokens=2)
        self.assertEqual(report["prompt"]["text"], PROMPT)
        self.assertEqual([t["id"] for t in report["prompt"]["tokens"]], weft_tokenize(PROMPT, True))
        status, _, resp = post(ON, "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 2, "weft_debug": True})
        self.assertEqual(status, 200, resp)
        report = resp["weft_debug"]
        text = report["prompt"]["text"]
        self.assertIn(PROMPT, text)
        self.assertNotEqual(text, PROMPT)  # the chat template's rendering
        ids = [t["id"] for t in report["prompt"]["tokens"]]
        self.assertEqual(ids, weft_tokenize(text, False))
        self.assertEqual(len(ids), resp["usage"]["prompt_tokens"])
        self.assertTrue(any(t["special"] for t in report["prompt"]["tokens"]))

    def test_steps_equal_response_logprobs(self):
        # Sampled (generation_config.json's temperature 0.8), with the request's own alternatives.
        resp, report = self.completion(logprobs=3, max_tokens=12)
        lp = resp["choices"][0]["logprobs"]
        steps = report["steps"]
        self.assertEqual(len(steps), len(lp["token_logprobs"]))
        self.assertEqual(len(steps), resp["usage"]["completion_tokens"])
        for i, s in enumerate(steps):
            self.assertEqual(s["index"], i)
            self.assertAlmostEqual(s["logprob"], lp["token_logprobs"][i], places=5)
            self.assertAlmostEqual(s["probability"], math.exp(lp["token_logprobs"][i]), places=5)
            self.assertEqual(len(s["top"]), 3)
            # The response's alternatives are keyed by text (two ids may share one): each is the report's.
            report_top = [t["logprob"] for t in s["top"]]
            for v in lp["top_logprobs"][i].values():
                self.assertTrue(any(abs(v - r) < 1e-5 for r in report_top), (v, report_top))
            self.assertGreaterEqual(s["rank"], 0)
            self.assertGreaterEqual(s["entropy"], 0.0)
        self.assertEqual(report["text"], resp["choices"][0]["text"])
        self.assertEqual(report["output_ids"], [s["token"] for s in steps])
        # Chat: logprobs true + top_logprobs.
        status, _, chat = post(ON, "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8, "seed": 5,
                                "logprobs": True, "top_logprobs": 2, "weft_debug": True})
        self.assertEqual(status, 200, chat)
        content = chat["choices"][0]["logprobs"]["content"]
        steps = chat["weft_debug"]["steps"]
        self.assertEqual(len(content), len(steps))
        for c, s in zip(content, steps):
            self.assertAlmostEqual(c["logprob"], s["logprob"], places=5)
            self.assertEqual(len(s["top"]), 2)

    def test_the_report_does_not_change_the_output(self):
        body = dict(prompt=PROMPT, max_tokens=12, seed=11, temperature=0.9)
        status, _, plain = post(ON, "/v1/completions", body)
        self.assertEqual(status, 200, plain)
        self.assertNotIn("weft_debug", plain)
        resp, report = self.completion(**body)
        self.assertEqual(resp["choices"][0]["text"], plain["choices"][0]["text"])
        self.assertIsNone(resp["choices"][0].get("logprobs"))  # the request asked for none
        self.assertEqual(len(report["steps"][0]["top"]), 5)  # the report's own alternatives

    def test_stop_reasons(self):
        _, report = self.completion(max_tokens=6, temperature=0)
        self.assertEqual(report["stop"]["finish_reason"], "length")
        self.assertEqual(report["stop"]["kind"], "max_tokens")
        self.assertEqual(report["stop"]["limit"], 6)
        self.assertEqual(len(report["steps"]), 6)
        # A stop string taken from the greedy output itself: the text ends where it began.
        _, long = self.completion(max_tokens=24, temperature=0)
        words = long["text"].split()
        self.assertGreater(len(words), 3, long["text"])
        stop = words[3]
        want = long["text"][:long["text"].index(stop)]
        resp, report = self.completion(max_tokens=24, temperature=0, stop=[stop])
        self.assertEqual(resp["choices"][0]["finish_reason"], "stop")
        self.assertEqual(resp["choices"][0]["text"], want)
        self.assertEqual(report["stop"]["kind"], "stop_string")
        self.assertEqual(report["stop"]["stop_string"], stop)
        self.assertEqual(report["stop"]["offset"], len(want.encode("utf-8")))
        # A stop token: the third greedy token's id ends the sequence there.
        token = long["output_ids"][2]
        first = long["output_ids"].index(token)
        _, report = self.completion(max_tokens=24, temperature=0, stop_token_ids=[token])
        self.assertEqual(report["stop"]["kind"], "stop_token")
        self.assertEqual(report["stop"]["token"], token)
        # The stop token is the last generated one (the text leaves it out).
        self.assertEqual(report["output_ids"], long["output_ids"][:first + 1])

    def test_sampling_sources(self):
        _, report = self.completion(temperature=0.7)
        s = report["sampling"]
        self.assertEqual(s["temperature"], {"value": 0.7, "source": "request (temperature)"})
        self.assertEqual(s["top_p"], {"value": 0.95, "source": "generation_config.json (top_p)"})
        self.assertEqual(s["top_k"]["source"], "weft default")
        self.assertEqual(s["max_tokens"], {"value": 10, "source": "request (max_tokens)"})
        self.assertEqual(s["seed"], {"value": 3, "source": "request (seed)"})
        status, _, chat = post(ON, "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": PROMPT}], "max_completion_tokens": 3,
                                "weft_debug": True})
        self.assertEqual(status, 200, chat)
        s = chat["weft_debug"]["sampling"]
        self.assertEqual(s["max_tokens"], {"value": 3, "source": "request (max_completion_tokens)"})
        self.assertEqual(s["temperature"], {"value": 0.8, "source": "generation_config.json (temperature)"})

    def assert_refused(self, server, body, path="/v1/completions", words=()):
        status, _, text = server.request("POST", path, dict(body, model=MODEL))
        self.assertEqual(status, 400, text)
        err = assert_openai_error_shape(self, text)
        self.assertEqual(err["param"], "weft_debug", err)
        self.assertTrue(err["message"].startswith("weft_debug"), err["message"])
        for w in words:
            self.assertIn(w, err["message"])

    def assert_maps_close(self, got, want, what, tolerance=1e-5):
        self.assertEqual(sorted(got), sorted(want), what)
        for key, rows in want.items():
            self.assertEqual(len(got[key]), len(rows), (what, key))
            for i, (g, w) in enumerate(zip(got[key], rows)):
                self.assertEqual(len(g), len(w), (what, key, i))
                self.assertLess(max(abs(a - b) for a, b in zip(g, w)), tolerance, (what, key, i))

    def test_attention_equals_weft_inspect(self):
        # The default selection (first, middle and last layers; heads 0 and 1), greedy.
        resp, report = self.completion(max_tokens=8, temperature=0)
        att = report["attention"]
        self.assertEqual(att["layers"], [0, 3, 5])  # the default model's 6 layers
        self.assertEqual(att["heads"], [0, 1])
        want = weft_inspect_attention(PROMPT, 8, att["layers"], att["heads"])
        self.assert_maps_close(maps_of(att), want, "default selection")
        prompt_len = len(report["prompt"]["tokens"])
        for m in att["maps"]:
            self.assertEqual([r["step"] for r in m["rows"]], list(range(8)))
            for r in m["rows"]:
                self.assertEqual(r["position"], prompt_len - 1 + r["step"])
                self.assertAlmostEqual(sum(r["weights"]), 1.0, places=4)
        # Chosen layers and heads, sampled: the weights of the rows that chose the drawn tokens.
        resp, report = self.completion(max_tokens=5, temperature=0,
                                       weft_debug={"attention_layers": [2], "attention_heads": [3, 1]})
        self.assertEqual(report["attention"]["heads"], [1, 3])
        self.assert_maps_close(maps_of(report["attention"]), weft_inspect_attention(PROMPT, 5, [2], [1, 3]),
                               "layer 2, heads 1 and 3")
        # An empty list: a report without attention, and a note saying why.
        resp, report = self.completion(max_tokens=3, weft_debug={"attention_heads": []})
        self.assertEqual(report["attention"]["maps"], [])
        self.assertIn("none asked for", report["attention"]["note"])
        self.assertEqual(len(report["steps"]), 3)

    def test_kv_blocks_of_the_request(self):
        _, report = self.completion(max_tokens=40, temperature=0)
        res = report["resources"]
        prompt_len = len(report["prompt"]["tokens"])
        # 16-token blocks; the last token chosen was never run, so prompt + 39 tokens are cached.
        self.assertEqual(res["kv_blocks_peak_request"], (prompt_len + 39 + 15) // 16)
        self.assertGreaterEqual(res["kv_blocks_peak_engine"], res["kv_blocks_peak_request"])

    def test_rollbacks_show_the_withdrawn_tokens(self):
        # The default model's greedy text holds "children of Israel" (banned_phrases_engine_test).
        resp, report = self.completion(max_tokens=60, temperature=0, bad_words=["children of Israel"])
        text = resp["choices"][0]["text"]
        self.assertNotIn("children of Israel", text)
        rollbacks = report["rollbacks"]
        self.assertTrue(rollbacks, report["text"])
        for rb in rollbacks:
            self.assertTrue(rb["tokens"])
            self.assertEqual(rb["banned_token"]["id"], rb["tokens"][0]["id"])
            self.assertLess(rb["at"], len(report["steps"]))
        self.assertTrue(any("children" in rb["text"] or "Israel" in rb["text"] for rb in rollbacks), rollbacks)
        status, _, page = ON.request("GET", report["html"])
        self.assertEqual(status, 200, page)
        self.assertIn("<h2>Banned-phrase rollbacks</h2>", page)
        self.assertIn("withdrawn tokens", page)

    def test_streamed_report_comes_last(self):
        for path, body in (("/v1/completions", {"prompt": PROMPT}),
                           ("/v1/chat/completions", {"messages": [{"role": "user", "content": PROMPT}]})):
            body = dict(body, model=MODEL, max_tokens=7, temperature=0, stream=True, weft_debug=True,
                        stream_options={"include_usage": True})
            status, headers, text = ON.request("POST", path, body)
            self.assertEqual(status, 200, text)
            self.assertTrue(headers["Content-Type"].startswith("text/event-stream"), headers)
            chunks, done = sse_chunks(text)
            self.assertTrue(done, text[-300:])
            debug = [c for c in chunks if "weft_debug" in c]
            self.assertEqual(len(debug), 1, text[-500:])
            self.assertEqual(debug[0]["choices"], [])
            report = debug[0]["weft_debug"]
            self.assertEqual(report["response_id"], chunks[0]["id"])
            self.assertEqual(len(report["steps"]), 7)
            self.assertEqual(report["stop"]["kind"], "max_tokens")
            streamed = "".join(c["choices"][0].get("text") or (c["choices"][0].get("delta") or {}).get("content") or ""
                               for c in chunks if c.get("choices"))
            self.assertEqual(report["text"], streamed)
            self.assertTrue(report["attention"]["maps"])
            # After every choice's chunks, then the usage chunk.
            at = chunks.index(debug[0])
            self.assertFalse(any(c.get("choices") for c in chunks[at:]), text[-500:])
            self.assertTrue(chunks[-1].get("usage"), text[-500:])
            status, _, stored = ON.request("GET", report["html"] + ".json")
            self.assertEqual(status, 200, stored)
            self.assertEqual(json.loads(stored), report)

    def test_refused_when_off_or_unsupported(self):
        for value in (True, False):
            self.assert_refused(OFF, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": value},
                                words=("--enable-debug-reports",))
            self.assert_refused(OFF, {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
                                      "weft_debug": value}, path="/v1/chat/completions")
        self.assert_refused(ON, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": "yes"},
                            words=("expected true, false or an object",))
        self.assert_refused(ON, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": {"layers": [0]}},
                            words=("weft_debug.layers", "unknown member"))
        self.assert_refused(ON, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": {"attention_layers": [6]}},
                            words=("weft_debug.attention_layers", "6 is not an index in [0, 6)"))
        self.assert_refused(ON, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": {"attention_heads": "all"}},
                            words=("weft_debug.attention_heads", "expected an array"))
        self.assert_refused(ON, {"prompt": PROMPT, "max_tokens": 2, "weft_debug": True, "n": 2}, words=("n 2",))
        self.assert_refused(ON, {"prompt": [PROMPT, "x"], "max_tokens": 2, "weft_debug": True})
        # false on the enabled server: a plain response.
        status, _, resp = post(ON, "/v1/completions", {"prompt": PROMPT, "max_tokens": 2, "weft_debug": False})
        self.assertEqual(status, 200, resp)
        self.assertNotIn("weft_debug", resp)

    def test_refused_without_the_key(self):
        resp, _ = self.completion(max_tokens=2)
        for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}):
            status, _, text = ON.request("POST", "/v1/completions",
                                         {"model": MODEL, "prompt": PROMPT, "max_tokens": 2, "weft_debug": True},
                                         headers=headers)
            self.assertEqual(status, 401, text)
            status, _, text = ON.request("GET", "/v1/debug/reports/" + resp["id"], headers=headers)
            self.assertEqual(status, 401, text)

    def test_html_and_json_endpoints(self):
        resp, report = self.completion(max_tokens=5)
        self.assertEqual(report["response_id"], resp["id"])
        self.assertEqual(report["html"], "/v1/debug/reports/" + resp["id"])
        status, headers, page = ON.request("GET", report["html"])
        self.assertEqual(status, 200, page)
        self.assertTrue(headers["Content-Type"].startswith("text/html"), headers)
        self.assertTrue(page.startswith("<!DOCTYPE html>"), page[:100])
        for section in ("<h2>Prompt</h2>", "<h2>Sampling", "<h2>Stop</h2>", "<h2>Attention</h2>",
                        "<h3>layer 0, head 0</h3>", "<h2>Banned-phrase rollbacks</h2>"):
            self.assertIn(section, page)
        self.assertNotIn("<script", page)
        status, _, text = ON.request("GET", report["html"] + ".json")
        self.assertEqual(status, 200, text)
        self.assertEqual(json.loads(text), report)
        status, _, text = ON.request("GET", "/v1/debug/reports/cmpl-unknown")
        self.assertEqual(status, 404, text)
        status, _, text = OFF.request("GET", report["html"])
        self.assertEqual(status, 404, text)
        self.assertIn("--enable-debug-reports", text)

    def test_the_store_keeps_the_most_recent_reports(self):
        small = Server(ARGS.model, "--api-key", serve_fixture.API_KEY, "--enable-debug-reports",
                       "--debug-report-store", "2")
        try:
            ids = []
            for seed in range(3):
                status, _, resp = post(small, "/v1/completions",
                                       {"prompt": PROMPT, "max_tokens": 2, "seed": seed, "weft_debug": True})
                self.assertEqual(status, 200, resp)
                ids.append(resp["id"])
            statuses = [small.request("GET", "/v1/debug/reports/" + i + ".json")[0] for i in ids]
            self.assertEqual(statuses, [404, 200, 200])
        finally:
            small.stop()

    def test_a_bad_store_size_is_refused_before_loading(self):
        for flags, words in ((["--enable-debug-reports", "--debug-report-store", "0"], "[1, 100000]"),
                             (["--enable-debug-reports", "--debug-report-store", "x"], "debug-report-store"),
                             (["--debug-report-store", "8"], "needs --enable-debug-reports")):
            done = subprocess.run([ARGS.weft, "serve", "--model", ARGS.model, "--port", "0", *flags],
                                  capture_output=True, text=True, timeout=60)
            self.assertNotEqual(done.returncode, 0, flags)
            self.assertIn("--debug-report-store", done.stderr, flags)
            self.assertIn(words, done.stderr, flags)


class ServedAttentionAcrossRanks(unittest.TestCase):
    """The same report from a server that is an mpirun job: each rank records its heads (TP) or
    its layers (PP) and the weights reach rank 0 with the step's result."""

    def test_tp2_and_pp2_record_what_one_process_records(self):
        if not ARGS.mpirun:
            self.skipTest("a build without MPI (no --mpirun)")
        body = {"prompt": PROMPT, "max_tokens": 6, "temperature": 0,
                "weft_debug": {"attention_layers": [0, 2, 3, 5], "attention_heads": [0, 3, 4, 7]}}
        # The default model: 8 query heads (TP 2: 0-3 on rank 0, 4-7 on rank 1), 6 layers (PP 2:
        # 0-2 on stage 0, 3-5 on stage 1); the selection takes some of each rank's.
        # TP sums each projection over ranks in another order, so the weights differ from one
        # process's by rounding: through 6 layers up to 1.7e-5 with F32 activations (measured on
        # a Zen 4), held to the bound the weights meet against transformers (1e-4,
        # tests/golden/attention). F32 in every layout: BF16 activations (--matmul-precision auto
        # on AVX512-BF16 CPUs) turn those differences into rounding flips of 2^-9, up to 4e-4
        # here, which says nothing about the recording under test.
        f32 = ("--matmul-precision", "f32")
        single = Server(ARGS.model, "--api-key", serve_fixture.API_KEY, "--enable-debug-reports", *f32)
        try:
            status, _, one = post(single, "/v1/completions", body)
        finally:
            single.stop()
        self.assertEqual(status, 200, one)
        want = maps_of(one["weft_debug"]["attention"])
        self.assertEqual(len(want), 16)
        mpirun = [ARGS.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2"]
        for layout in (["--tp", "2"], ["--pp", "2"]):
            server = Server(ARGS.model, "--api-key", serve_fixture.API_KEY, "--enable-debug-reports", *f32, *layout,
                            launcher=mpirun)
            try:
                status, _, resp = post(server, "/v1/completions", body)
                self.assertEqual(status, 200, resp)
                self.assertEqual(resp["choices"][0]["text"], one["choices"][0]["text"], layout)
                ServedDebugReport.assert_maps_close(self, maps_of(resp["weft_debug"]["attention"]), want, layout,
                                                    tolerance=1e-4)
            finally:
                server.stop()


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model", optional=("--mpirun",))
    unittest.main(argv=argv, verbosity=2)
