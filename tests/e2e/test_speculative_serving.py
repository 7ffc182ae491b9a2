"""Speculative decoding through `weft serve` and `weft batch`, on the default model and its draft.

Run by ctest (label e2e) as:
  python3 test_speculative_serving.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR
Greedy and seeded sampled completions (streamed and not) are the same with and without
speculation (draft model and n-gram lookup); /metrics reports the speculation counters under
weft's and vLLM's names; `weft batch` writes the same records and reports acceptance.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
openai, = serve_fixture.require("openai")
from serve_fixture import API_KEY, MODEL, Server  # noqa: E402

ARGS = None
PASSAGE = ("And Abram went up out of Egypt, he, and his wife, and all that he had, and Lot with him, "
           "into the south. And Abram was very rich in cattle, in silver, and in gold.")
PROMPTS = ["And God said unto Moses,", PASSAGE + "\n" + PASSAGE + "\nAnd Abram went up"]


def setUpModule():
    global SERVERS, CLIENTS
    SERVERS = {
        "plain": Server(ARGS.model, "--api-key", API_KEY),
        "draft": Server(ARGS.model, "--api-key", API_KEY, "--speculative", "draft"),
        "ngram": Server(ARGS.model, "--api-key", API_KEY, "--speculative", "ngram",
                        "--speculative-adaptive", "off"),
        # Always K guesses: the adaptive policy may find a single constrained stream not worth it.
        "draft_always": Server(ARGS.model, "--api-key", API_KEY, "--speculative", "draft",
                               "--speculative-adaptive", "off"),
    }
    CLIENTS = {name: openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % s.port, api_key=API_KEY, max_retries=0)
               for name, s in SERVERS.items()}


def tearDownModule():
    for s in SERVERS.values():
        s.stop()


def complete(client, prompt, stream=False, **kw):
    args = dict(model=MODEL, prompt=prompt, max_tokens=48, extra_body={"ignore_eos": True}, **kw)
    if not stream:
        r = client.completions.create(**args)
        return r.choices[0].text, r.usage.completion_tokens
    text, tokens = "", 0
    for chunk in client.completions.create(stream=True, stream_options={"include_usage": True}, **args):
        if chunk.choices:
            text += chunk.choices[0].text
        if chunk.usage:
            tokens = chunk.usage.completion_tokens
    return text, tokens


class SpeculativeServingTest(unittest.TestCase):
    def test_greedy_and_seeded_outputs_match_plain_decoding(self):
        for prompt in PROMPTS:
            for sampling in ({"temperature": 0}, {"temperature": 0.8, "top_p": 0.95, "seed": 11}):
                for stream in (False, True):
                    expected = complete(CLIENTS["plain"], prompt, stream, **sampling)
                    self.assertEqual(expected[1], 48)
                    for name in ("draft", "ngram"):
                        self.assertEqual(complete(CLIENTS[name], prompt, stream, **sampling), expected,
                                         "%s %s stream=%s" % (name, sampling, stream))

    def test_metrics_report_speculation_under_both_names(self):
        complete(CLIENTS["ngram"], PROMPTS[1])
        for name in ("draft", "ngram"):
            m = SERVERS[name].metrics()
            for prefix in ("weft:", "vllm:"):
                drafts = m[prefix + "spec_decode_num_draft_tokens_total"]
                accepted = m[prefix + "spec_decode_num_accepted_tokens_total"]
                self.assertGreater(drafts, 0, name)
                self.assertGreater(accepted, 0, name)
                self.assertLessEqual(accepted, drafts)
                self.assertGreater(m[prefix + "spec_decode_num_drafts_total"], 0)
                per_pos = sum(v for k, v in m.items()
                              if k.startswith(prefix + "spec_decode_num_accepted_tokens_per_pos_total{"))
                self.assertEqual(per_pos, accepted)
            self.assertAlmostEqual(m["weft:spec_decode_acceptance_rate"],
                                   m["weft:spec_decode_num_accepted_tokens_total"] /
                                   m["weft:spec_decode_num_draft_tokens_total"], places=4)
        self.assertNotIn("weft:spec_decode_num_draft_tokens_total", SERVERS["plain"].metrics())

    def test_metrics_count_the_guesses_of_constrained_sequences(self):
        before = SERVERS["draft_always"].metrics()
        CLIENTS["draft_always"].chat.completions.create(
            model=MODEL, max_tokens=40, temperature=0, response_format={"type": "json_object"},
            messages=[{"role": "user", "content": "Describe Abram as a JSON object."}])
        m = SERVERS["draft_always"].metrics()
        grew = {k: m["weft:spec_decode_" + k + "_total"] - before.get("weft:spec_decode_" + k + "_total", 0)
                for k in ("num_draft_tokens", "num_accepted_tokens", "constrained_num_drafts",
                          "constrained_num_draft_tokens", "constrained_num_accepted_tokens",
                          "grammar_dropped_tokens")}
        self.assertGreater(grew["constrained_num_drafts"], 0, grew)
        self.assertGreater(grew["constrained_num_draft_tokens"], 0, grew)
        self.assertLessEqual(grew["constrained_num_accepted_tokens"], grew["constrained_num_draft_tokens"])
        # The only request in flight was constrained: every guess verified was one of its guesses.
        self.assertEqual(grew["constrained_num_draft_tokens"], grew["num_draft_tokens"], grew)
        self.assertEqual(grew["constrained_num_accepted_tokens"], grew["num_accepted_tokens"], grew)
        self.assertGreaterEqual(grew["grammar_dropped_tokens"], 0)
        self.assertNotIn("weft:spec_decode_constrained_num_drafts_total", SERVERS["plain"].metrics())


class SpeculativeBatchTest(unittest.TestCase):
    def run_batch(self, directory, *extra):
        inp = os.path.join(directory, "in.jsonl")
        with open(inp, "w") as f:
            for i, prompt in enumerate(PROMPTS * 3):
                body = {"model": MODEL, "prompt": prompt, "max_tokens": 40, "temperature": 0, "ignore_eos": True}
                f.write(json.dumps({"custom_id": "r%d" % i, "method": "POST", "url": "/v1/completions",
                                    "body": body}) + "\n")
        out = os.path.join(directory, "out-%d.jsonl" % len(extra))
        r = subprocess.run([ARGS.weft, "batch", "--model", ARGS.model, "--input", inp, "--output", out,
                            "--served-model-name", MODEL, "--threads", "1", *extra], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            records = sorted((json.loads(line) for line in f), key=lambda rec: rec["custom_id"])
        return [rec["response"]["body"]["choices"][0]["text"] for rec in records], r.stderr

    def test_batch_records_match_and_the_summary_reports_acceptance(self):
        with tempfile.TemporaryDirectory() as d:
            plain, _ = self.run_batch(d)
            spec, log = self.run_batch(d, "--speculative", "ngram")
            self.assertEqual(spec, plain)
            self.assertIn("speculative decoding:", log)
            self.assertRegex(log, r"acceptance 0\.\d{3}")


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv, verbosity=2)
