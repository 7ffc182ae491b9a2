"""weft inspect on the default model: the report against the engine's other outputs, each kind of
stop, and the HTML page in a real headless Chromium.

Run by ctest (label e2e) as:
  python3 test_inspect.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR --eos-model GOLDEN_LLAMA_GQA
                          [--screenshot-dir DIR]
Checks: the report's prompt ids equal `weft tokenize` of its rendered prompt (plain and --chat);
pieces and offsets are consistent; its per-step tokens and logprobs equal `weft generate --json`
(greedy and seeded sampling); the stop kind is right for max_tokens, a stop string (with its
offset in the generated text), a stop token, end of sequence, the context length and a complete
grammar; a penalty that moves the greedy choice is named; the page has no external references,
renders in Chromium offline with no console messages, and its screenshot is a real PNG.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

ARGS = None
PROMPT = "And God said unto Moses,"


def run(*args, stdin=None):
    done = subprocess.run([ARGS.weft, *args], input=stdin, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError("weft %s failed (%d): %s" % (" ".join(args), done.returncode, done.stderr))
    return done.stdout


def inspect(workdir, name, *flags):
    html = os.path.join(workdir, name + ".html")
    run("inspect", "--model", ARGS.model, "--threads", "2", "--report", html, *flags)
    with open(os.path.join(workdir, name + ".json"), encoding="utf-8") as f:
        return json.load(f), html


def generate_json(*flags):
    return json.loads(run("generate", "--model", ARGS.model, "--threads", "2", "--json", *flags))


class InspectReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="weft-inspect-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_prompt_tokens_equal_weft_tokenize(self):
        for name, flags, add_special in (("plain", ["--prompt", PROMPT], True),
                                         ("chat", ["--prompt", PROMPT, "--chat"], False)):
            report, _ = inspect(self.tmp, "tokens_" + name, *flags, "--max-tokens", "2")
            text = report["prompt"]["text"]
            if name == "plain":
                self.assertEqual(text, PROMPT)
            else:
                self.assertIn(PROMPT, text)
                self.assertNotEqual(text, PROMPT)
            line = json.dumps({"text": text, "add_special_tokens": add_special})
            want = json.loads(run("tokenize", "--model", ARGS.model, stdin=line + "\n"))["ids"]
            tokens = report["prompt"]["tokens"]
            self.assertEqual([t["id"] for t in tokens], want)
            offset = 0
            for t in tokens:
                self.assertEqual(t["offset"], offset)
                offset += len(t["piece"].encode("utf-8"))
            if name == "chat":
                self.assertTrue(any(t["special"] for t in tokens), "the chat template's markers are special")

    def test_steps_equal_generate_json_logprobs(self):
        # Sampled both times (the default model's generation_config.json sets temperature 0.8).
        for flags in (["--max-tokens", "12", "--request-seed", "3"],
                      ["--max-tokens", "12", "--temperature", "0.9", "--top-p", "0.95", "--request-seed", "7"]):
            report, _ = inspect(self.tmp, "steps", "--prompt", PROMPT, *flags)
            ref = generate_json("--prompt", PROMPT, *flags)
            self.assertEqual(report["output_ids"], ref["output_ids"])
            self.assertEqual(report["text"], ref["text"])
            self.assertEqual(len(report["steps"]), len(ref["steps"]))
            for mine, want in zip(report["steps"], ref["steps"]):
                self.assertEqual(mine["token"], want["token"])
                self.assertAlmostEqual(mine["logprob"], want["logprob"], delta=1e-5)
                self.assertEqual([t["token"] for t in mine["top"]], [t[0] for t in want["top_logprobs"]])
                for t, (_, lp) in zip(mine["top"], want["top_logprobs"]):
                    self.assertAlmostEqual(t["logprob"], lp, delta=1e-5)
                # Rank and entropy describe the same raw row: rank 1 is the top alternative.
                self.assertGreaterEqual(mine["rank"], 1)
                self.assertGreater(mine["entropy"], 0.0)
                if mine["rank"] == 1:
                    self.assertEqual(mine["token"], mine["top"][0]["token"])
            sampling = report["sampling"]
            self.assertEqual(sampling["max_tokens"], {"value": 12, "source": "request (--max-tokens)"})
            if "--temperature" in flags:
                self.assertEqual(sampling["temperature"]["source"], "request (--temperature)")
            else:
                self.assertNotEqual(sampling["temperature"]["source"], "request (--temperature)")

    def test_stop_kinds(self):
        greedy = ["--temperature", "0"]
        base = generate_json("--prompt", PROMPT, "--max-tokens", "24", "--ignore-eos", *greedy)
        text, ids = base["text"], base["output_ids"]

        report, _ = inspect(self.tmp, "max", "--prompt", PROMPT, *greedy, "--max-tokens", "4", "--ignore-eos")
        self.assertEqual(report["stop"]["kind"], "max_tokens")
        self.assertEqual(report["stop"]["finish_reason"], "length")
        self.assertEqual(len(report["steps"]), 4)
        self.assertFalse(report["stop"]["context_length_reached"])

        stop = text[8:12]
        report, _ = inspect(self.tmp, "stopstr", "--prompt", PROMPT, *greedy, "--max-tokens", "24", "--ignore-eos",
                            "--stop", stop)
        self.assertEqual(report["stop"]["kind"], "stop_string")
        self.assertEqual(report["stop"]["stop_string"], stop)
        self.assertEqual(report["stop"]["offset"], len(text[: text.index(stop)].encode("utf-8")))
        self.assertEqual(report["text"], text[: text.index(stop)])

        token = ids[3]
        report, _ = inspect(self.tmp, "stoptok", "--prompt", PROMPT, *greedy, "--max-tokens", "24", "--ignore-eos",
                            "--stop-token-ids", str(token))
        self.assertEqual(report["stop"]["kind"], "stop_token")
        self.assertEqual(report["stop"]["token"], token)
        self.assertEqual(report["output_ids"], ids[: ids.index(token) + 1])

        # The context length: prompt + max_tokens exactly fill --max-model-len.
        prompt_len = len(base["prompt_ids"])
        report, _ = inspect(self.tmp, "ctx", "--prompt", PROMPT, *greedy, "--max-tokens", "3", "--ignore-eos",
                            "--max-model-len", str(prompt_len + 3))
        self.assertEqual(report["stop"]["kind"], "max_tokens")
        self.assertTrue(report["stop"]["context_length_reached"])
        self.assertIn("context length %d" % (prompt_len + 3), report["stop"]["detail"])

        # End of sequence: the default model hardly ever ends its text, so the golden llama_gqa with
        # its prompt_2, whose greedy continuation by transformers (reference.safetensors) has EOS (2)
        # as token 9: 366 454 385 20 487 340 314 181 2.
        html = os.path.join(self.tmp, "eos.html")
        run("inspect", "--model", ARGS.eos_model, "--generation-config", "none", "--max-tokens", "32", "--report", html,
            "--prompt-ids", "470,39,173,443,469,132,417,65,45,419,208,321,335,476,277,464,243,149,59,138,89,46,173,"
            "227,247,107")
        with open(os.path.join(self.tmp, "eos.json")) as f:
            report = json.load(f)
        self.assertEqual(report["output_ids"], [366, 454, 385, 20, 487, 340, 314, 181, 2])
        self.assertEqual(report["stop"]["kind"], "eos", report["stop"])
        self.assertEqual(report["stop"]["token"], 2)
        self.assertEqual(report["sampling"]["eos_token_ids"]["value"], [2])
        self.assertIsNone(report["steps"][0]["piece"])  # no tokenizer: ids only

        # A complete choice allows only the end of sequence, which then ends it; with --ignore-eos the
        # end of sequence does not stop, and the complete grammar does.
        report, _ = inspect(self.tmp, "choice", "--prompt", PROMPT, *greedy, "--choice", "yes|no", "--max-tokens", "10")
        self.assertEqual(report["stop"]["kind"], "eos")
        self.assertIn(report["text"], ("yes", "no"))
        report, _ = inspect(self.tmp, "choice", "--prompt", PROMPT, *greedy, "--choice", "yes|no", "--max-tokens", "10",
                            "--ignore-eos")
        self.assertEqual(report["stop"]["kind"], "grammar_complete")
        self.assertIn(report["text"], ("yes", "no"))
        self.assertTrue(all("constraint or banned-phrase mask" in s["changed_by"] or
                            s["processed_argmax"] == s["raw_argmax"] for s in report["steps"]))

    def test_penalty_that_moves_the_choice_is_named(self):
        report, _ = inspect(self.tmp, "penalty", "--prompt", PROMPT, "--temperature", "0", "--max-tokens", "24",
                            "--ignore-eos",
                            "--repetition-penalty", "1.8")
        moved = 0
        for s in report["steps"]:
            self.assertEqual(s["token"], s["processed_argmax"])  # greedy picks the processed argmax
            if s["processed_argmax"] != s["raw_argmax"]:
                moved += 1
                self.assertEqual(s["changed_by"], ["repetition_penalty"])
                self.assertGreater(s["rank"], 1)
            else:
                self.assertEqual(s["changed_by"], [])
        self.assertGreater(moved, 0, "a 1.8 repetition penalty should move some greedy choice")

    def test_bad_flags_are_named(self):
        for flags, message in ((["--prompt", PROMPT], "--report FILE.html is required"),
                               (["--prompt", PROMPT, "--report", "x.html", "--attention-layers", "99"],
                                "--attention-layers: 99 is outside [0, "),
                               (["--prompt", PROMPT, "--report", "x.html", "--attention-heads", "a"],
                                "--attention-heads"),
                               (["--prompt", PROMPT, "--report", "x.html", "--n", "2"], "--n: weft inspect follows one")):
            done = subprocess.run([ARGS.weft, "inspect", "--model", ARGS.model, *flags], capture_output=True, text=True,
                                  timeout=60, cwd=self.tmp)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn(message, done.stderr)

    def test_html_in_headless_chromium(self):
        # Markup in the prompt must come out as text (the page would otherwise hold a script).
        report, html = inspect(self.tmp, "page", "--prompt", PROMPT + ' <script>x("&")</script>', "--chat",
                               "--max-tokens", "10",
                               "--attention-layers", "0,1", "--attention-heads", "0,1")
        self.assertEqual(len(report["attention"]["maps"]), 4)
        for m in report["attention"]["maps"]:
            self.assertEqual([r["step"] for r in m["rows"]], list(range(len(report["steps"]))))
            for r in m["rows"]:
                self.assertAlmostEqual(sum(r["weights"]), 1.0, delta=1e-4)
        self.assertGreater(report["resources"]["ranks"][0]["peak_rss_bytes"], 0)
        self.assertGreaterEqual(report["resources"]["kv_blocks_peak"], 1)
        with open(html, encoding="utf-8") as f:
            page = f.read()
        # Nothing to fetch: no scripts, links, images or URLs other than the SVG namespace.
        for needle in ("<script", "<link", "<img", "src=", "href=", "url("):
            self.assertNotIn(needle, page)
        self.assertEqual(page.replace('xmlns="http://www.w3.org/2000/svg"', "").count("http"), 0)
        self.assertIn("&lt;script&gt;x(&#34;&amp;&#34;)&lt;/script&gt;", page)
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            raise unittest.SkipTest("chromium is not installed (scripts/install-deps.sh installs it)")
        shot = os.path.join(ARGS.screenshot_dir or self.tmp, "inspect_report.png")
        profile = tempfile.mkdtemp(prefix="weft-chromium-")
        try:
            # No network: every host resolves nowhere and a dead proxy takes any request.
            done = subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--user-data-dir=" + profile, "--proxy-server=127.0.0.1:9",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
                 "--window-size=1280,2400", "--screenshot=" + shot, "file://" + os.path.abspath(html)],
                capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(profile, ignore_errors=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        console = [l for l in done.stderr.splitlines() if "CONSOLE" in l or "Failed to load" in l]
        self.assertEqual(console, [], "console messages from the page")
        with open(shot, "rb") as f:
            png = f.read()
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        self.assertTrue(non_blank_png(png), "the screenshot is one colour")


def non_blank_png(png):
    """True when the PNG's pixel bytes take many values (decoded with zlib alone): a blank page
    gives its one colour and the row filter bytes."""
    pos, data = 8, b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(data))) > 16


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--eos-model", required=True, help="tests/golden/models/llama_gqa")
    parser.add_argument("--screenshot-dir")
    ARGS, rest = parser.parse_known_args()
    ARGS.weft, ARGS.model, ARGS.eos_model = (os.path.abspath(p) for p in (ARGS.weft, ARGS.model, ARGS.eos_model))
    unittest.main(argv=[sys.argv[0]] + rest)
