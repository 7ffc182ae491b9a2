"""Banned phrases through `weft serve` with the official `openai` client, on the default model
(configs/default-model, trained on the KJV Bible): a server started with --banned-phrases FILE
(phrases the model really produces: a plain server's output is checked to contain them) and
requests with vLLM's bad_words. No choice's text -- non-streamed, or the concatenated SSE deltas
of a stream -- contains a phrase (compared case-insensitively under NFKC), a stream says exactly
what the same seeded request says without streaming, logprobs tokens spell the text, /metrics
counts the matches, and a bad bad_words gets a 400 naming it.

Run by ctest (label e2e) as:
  python3 test_banned_phrases.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR
"""
import os
import sys
import tempfile
import unicodedata
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
(openai,) = serve_fixture.require("openai")
from serve_fixture import API_KEY, MODEL, Server, assert_openai_error_shape  # noqa: E402

ARGS = None
SERVER_PHRASES = ["children of Israel", "the LORD"]
REQUEST_PHRASES = ["Moses said", "AND THE"]
PROMPTS = ["And God said unto Moses,", "And it came to pass", "In the beginning"]


def folded(text):
    return unicodedata.normalize("NFKC", text).casefold()


def client(server):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % server.port, api_key=API_KEY, max_retries=0)


def setUpModule():
    global PLAIN, SCREENED, LIST_FILE
    LIST_FILE = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    LIST_FILE.write("# phrases the default model produces\n" + "\n".join(SERVER_PHRASES) + "\n")
    LIST_FILE.close()
    PLAIN = Server(ARGS.model, "--api-key", API_KEY)
    SCREENED = Server(ARGS.model, "--api-key", API_KEY, "--banned-phrases", LIST_FILE.name, "--max-num-seqs", "32")


def tearDownModule():
    PLAIN.stop()
    SCREENED.stop()
    os.unlink(LIST_FILE.name)


class BannedPhrasesTest(unittest.TestCase):
    def assert_clean(self, text, phrases):
        for p in phrases:
            self.assertNotIn(folded(p), folded(text), text)

    def test_the_plain_model_produces_the_phrases(self):
        # Without this the other tests would prove nothing.
        seen = " ".join(c.text for p in PROMPTS for c in client(PLAIN).completions.create(
            model=MODEL, prompt=p, max_tokens=64, temperature=0).choices)
        for p in SERVER_PHRASES + REQUEST_PHRASES:
            self.assertIn(folded(p), folded(seen))

    def test_completions_streamed_and_not(self):
        c = client(SCREENED)
        for i, prompt in enumerate(PROMPTS):
            for temperature in (0.0, 0.9):
                kw = dict(model=MODEL, prompt=prompt, max_tokens=64, temperature=temperature, seed=100 + i, n=2,
                          extra_body={"bad_words": REQUEST_PHRASES})
                whole = c.completions.create(**kw)
                texts = {ch.index: ch.text for ch in whole.choices}
                streamed = {0: "", 1: ""}
                finish = {}
                for chunk in c.completions.create(stream=True, **kw):
                    for ch in chunk.choices:
                        streamed[ch.index] += ch.text
                        if ch.finish_reason:
                            finish[ch.index] = ch.finish_reason
                for index in (0, 1):
                    self.assert_clean(texts[index], SERVER_PHRASES + REQUEST_PHRASES)
                    self.assert_clean(streamed[index], SERVER_PHRASES + REQUEST_PHRASES)
                    self.assertEqual(streamed[index], texts[index])
                    self.assertEqual(finish[index], whole.choices[index].finish_reason)
                    self.assertIn(finish[index], ("length", "stop"))

    def test_chat_stream_with_logprobs(self):
        c = client(SCREENED)
        kw = dict(model=MODEL, messages=[{"role": "user", "content": "Who spake unto Moses?"}], max_tokens=80,
                  temperature=0.7, seed=3, logprobs=True, extra_body={"bad_words": REQUEST_PHRASES})
        whole = c.chat.completions.create(**kw)
        message = whole.choices[0].message.content
        self.assertEqual("".join(t.token for t in whole.choices[0].logprobs.content), message)
        text = ""
        for chunk in c.chat.completions.create(stream=True, **kw):
            if chunk.choices and chunk.choices[0].delta.content:
                text += chunk.choices[0].delta.content
        self.assertEqual(text, message)
        self.assert_clean(text, SERVER_PHRASES + REQUEST_PHRASES)

    def test_metrics_count_the_matches(self):
        client(SCREENED).completions.create(model=MODEL, prompt=PROMPTS[0], max_tokens=64, temperature=0)
        metrics = SCREENED.metrics()
        self.assertGreater(metrics["weft:banned_phrase_matches_total"], 0)
        self.assertGreater(metrics["weft:banned_phrase_rolled_back_tokens_total"], 0)
        self.assertIn("weft:banned_phrase_content_filter_total", metrics)

    def test_bad_words_errors_name_the_field(self):
        for bad_words, where in ((["ok", 3], "bad_words[1]"), ([""], "bad_words[0]"), ("word", "bad_words"),
                                 (["x" * 300], "bad_words[0]"), (["w"] * 1025, "bad_words")):
            status, _, body = SCREENED.request("POST", "/v1/completions",
                                               {"model": MODEL, "prompt": "x", "max_tokens": 2, "bad_words": bad_words})
            self.assertEqual(status, 400, body)
            err = assert_openai_error_shape(self, body)
            self.assertEqual(err["param"], "bad_words")
            self.assertTrue(err["message"].startswith(where), err["message"])


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv, verbosity=2)
