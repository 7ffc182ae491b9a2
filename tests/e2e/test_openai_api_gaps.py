"""End-to-end tests of the chat and completions fields weft serve took over from vLLM / OpenAI:
assistant prefill (continue_final_message, add_generation_prompt), chat echo, text parts, lists of
prompts, completions echo (with max_tokens 0), prompt logprobs (echo + logprobs, vLLM's
prompt_logprobs; summed, equal to `weft perplexity`'s scoring), /v1/models/{id}, and the refusals that go with them,
through the official `openai` client against a real `weft serve` on configs/default-model (a small
Llama trained on the KJV Bible, with a chat template of its own).

Run by ctest (label e2e) as:
  python3 test_openai_api_gaps.py --weft WEFT_BINARY --model MODEL_DIR
Installs tests/e2e/requirements.txt with pip when `openai` is missing.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
openai, = serve_fixture.require("openai")
from serve_fixture import API_KEY, MODEL, Server, assert_openai_error_shape  # noqa: E402

ARGS = None
SERVER = None
CLIENT = None

GREEDY = dict(model=MODEL, temperature=0, extra_body={"ignore_eos": True})
PREFILL = [{"role": "user", "content": "Tell me of the creation."},
           {"role": "assistant", "content": "In the beginning God "}]
# The default model's template: '<|' + role + '|>\n' + content | trim + '<|end|>\n' per message.
# Continuing the final message cuts after its (trimmed) content: no <|end|>, no new header.
PREFILL_PROMPT = "<|user|>\nTell me of the creation.<|end|>\n<|assistant|>\nIn the beginning God"


def setUpModule():
    global SERVER, CLIENT
    SERVER = Server(ARGS.model, "--api-key", API_KEY)
    CLIENT = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY, max_retries=0)


def tearDownModule():
    SERVER.stop()


def tokenize(body):
    status, _, text = SERVER.request("POST", "/tokenize", body)
    assert status == 200, text
    return json.loads(text)["tokens"]


def with_extra(kw, **extra):
    out = dict(kw)
    out["extra_body"] = dict(kw.get("extra_body", {}), **extra)
    return out


class ModelsTest(unittest.TestCase):
    def test_retrieve_the_served_model(self):
        m = CLIENT.models.retrieve(MODEL)
        self.assertEqual(m.id, MODEL)
        self.assertEqual(m.object, "model")
        self.assertEqual(m.model_dump(), CLIENT.models.list().data[0].model_dump())

    def test_unknown_model_is_404_in_openai_shape(self):
        with self.assertRaises(openai.NotFoundError) as ctx:
            CLIENT.models.retrieve("gpt-9")
        self.assertIn("gpt-9", str(ctx.exception))
        status, _, body = SERVER.request("GET", "/v1/models/org%2Fgpt-9")
        self.assertEqual(status, 404, body)
        err = assert_openai_error_shape(self, body)
        self.assertIn("org/gpt-9", err["message"])
        self.assertEqual(err["code"], "model_not_found")
        status, _, body = SERVER.request("POST", "/v1/models/" + MODEL, {})
        self.assertEqual(status, 405, body)


class ChatPrefillTest(unittest.TestCase):
    def test_prefill_renders_as_transformers_continue_final_message(self):
        ids = tokenize({"messages": PREFILL, "continue_final_message": True, "add_generation_prompt": False})
        self.assertEqual(ids, tokenize({"prompt": PREFILL_PROMPT, "add_special_tokens": False}))
        # continue_final_message alone turns the generation prompt off.
        self.assertEqual(tokenize({"messages": PREFILL, "continue_final_message": True}), ids)

    def test_prefilled_assistant_turn_continues_the_message(self):
        kw = with_extra(GREEDY, continue_final_message=True, add_generation_prompt=False)
        r = CLIENT.chat.completions.create(messages=PREFILL, max_tokens=12, **kw)
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertEqual(r.usage.completion_tokens, 12)
        # The same tokens as a completion of the rendered prompt: the prefill was continued, not
        # answered in a new turn.
        c = CLIENT.completions.create(prompt=PREFILL_PROMPT, max_tokens=12, **GREEDY)
        self.assertEqual(r.usage.prompt_tokens, c.usage.prompt_tokens)
        self.assertEqual(r.choices[0].message.content, c.choices[0].text)
        # A new turn differs: the generation prompt opens a fresh assistant message.
        fresh = CLIENT.chat.completions.create(messages=PREFILL, max_tokens=12, **GREEDY)
        self.assertGreater(fresh.usage.prompt_tokens, r.usage.prompt_tokens)

    def test_add_generation_prompt_false(self):
        messages = [{"role": "user", "content": "And God said"}]
        r = CLIENT.chat.completions.create(messages=messages, max_tokens=6,
                                           **with_extra(GREEDY, add_generation_prompt=False))
        # vLLM's reply role without a generation prompt: the final message's.
        self.assertEqual(r.choices[0].message.role, "user")
        self.assertEqual(r.usage.prompt_tokens,
                         len(tokenize({"prompt": "<|user|>\nAnd God said<|end|>\n", "add_special_tokens": False})))

    def test_echo_prepends_the_prefill(self):
        kw = with_extra(GREEDY, continue_final_message=True, add_generation_prompt=False)
        plain = CLIENT.chat.completions.create(messages=PREFILL, max_tokens=8, **kw).choices[0].message.content
        echoed = CLIENT.chat.completions.create(messages=PREFILL, max_tokens=8, **with_extra(kw, echo=True))
        self.assertEqual(echoed.choices[0].message.content, PREFILL[-1]["content"] + plain)
        self.assertEqual(echoed.usage.completion_tokens, 8)
        chunks = list(CLIENT.chat.completions.create(messages=PREFILL, max_tokens=8, stream=True,
                                                     **with_extra(kw, echo=True)))
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        # As vLLM: the echo is one content delta right after the role.
        self.assertEqual(chunks[1].choices[0].delta.content, PREFILL[-1]["content"])
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in chunks),
                         echoed.choices[0].message.content)
        # After a generation prompt the final (user) message is not the reply's role: no echo.
        messages = [{"role": "user", "content": "Who made the light?"}]
        a = CLIENT.chat.completions.create(messages=messages, max_tokens=6, **GREEDY).choices[0].message.content
        b = CLIENT.chat.completions.create(messages=messages, max_tokens=6, **with_extra(GREEDY, echo=True))
        self.assertEqual(b.choices[0].message.content, a)

    def test_text_parts_are_joined_with_newlines(self):
        parts = [{"role": "user", "content": [{"type": "text", "text": "In the beginning"},
                                              {"type": "text", "text": "God created"}]}]
        joined = [{"role": "user", "content": "In the beginning\nGod created"}]
        a = CLIENT.chat.completions.create(messages=parts, max_tokens=6, **GREEDY)
        b = CLIENT.chat.completions.create(messages=joined, max_tokens=6, **GREEDY)
        self.assertEqual(a.usage.prompt_tokens, b.usage.prompt_tokens)
        self.assertEqual(a.choices[0].message.content, b.choices[0].message.content)

    def test_both_prompt_ends_is_an_error(self):
        with self.assertRaises(openai.BadRequestError) as ctx:
            CLIENT.chat.completions.create(messages=PREFILL, max_tokens=4,
                                           **with_extra(GREEDY, continue_final_message=True,
                                                        add_generation_prompt=True))
        self.assertEqual(ctx.exception.body["param"], "continue_final_message")
        self.assertIn("add_generation_prompt", ctx.exception.body["message"])

    def test_nothing_to_continue_is_an_error(self):
        status, _, body = SERVER.request("POST", "/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": None}],
            "continue_final_message": True, "max_tokens": 4})
        self.assertEqual(status, 400, body)
        err = assert_openai_error_shape(self, body)
        self.assertEqual(err["param"], "continue_final_message")


class CompletionsTest(unittest.TestCase):
    PROMPTS = ["In the beginning", "And the earth was", "Let there be"]

    def test_list_of_prompts(self):
        single = [CLIENT.completions.create(prompt=p, max_tokens=6, **GREEDY) for p in self.PROMPTS]
        ids = tokenize({"prompt": "And God saw"})
        prompts = self.PROMPTS + [ids]
        single.append(CLIENT.completions.create(prompt=ids, max_tokens=6, **GREEDY))
        r = CLIENT.completions.create(prompt=prompts, max_tokens=6, **GREEDY)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2, 3])
        self.assertEqual([c.text for c in r.choices], [s.choices[0].text for s in single])
        self.assertEqual(r.usage.prompt_tokens, sum(s.usage.prompt_tokens for s in single))
        self.assertEqual(r.usage.completion_tokens, 6 * len(prompts))
        # A list of token-id lists.
        many = [tokenize({"prompt": p}) for p in self.PROMPTS]
        r2 = CLIENT.completions.create(prompt=many, max_tokens=6, **GREEDY)
        self.assertEqual([c.text for c in r2.choices], [c.text for c in r.choices[:3]])

    def test_list_of_prompts_with_n_numbers_choices_prompt_major(self):
        kw = dict(model=MODEL, max_tokens=8, temperature=1.0, seed=7, n=2, extra_body={"ignore_eos": True})
        single = [CLIENT.completions.create(prompt=p, **kw) for p in self.PROMPTS]
        r = CLIENT.completions.create(prompt=self.PROMPTS, **kw)
        self.assertEqual(sorted(c.index for c in r.choices), list(range(6)))
        by_index = {c.index: c.text for c in r.choices}
        for p, s in enumerate(single):
            for c in s.choices:
                self.assertEqual(by_index[p * 2 + c.index], c.text, "prompt %d choice %d" % (p, c.index))
        # Streamed: every index finishes once, and each index's text is the same.
        chunks = list(CLIENT.completions.create(prompt=self.PROMPTS, stream=True,
                                                stream_options={"include_usage": True}, **kw))
        self.assertEqual(len({c.id for c in chunks}), 1)
        done = sorted(c.choices[0].index for c in chunks if c.choices and c.choices[0].finish_reason)
        self.assertEqual(done, list(range(6)))
        for i in range(6):
            streamed = "".join(c.choices[0].text for c in chunks if c.choices and c.choices[0].index == i)
            self.assertEqual(streamed, by_index[i], "index %d" % i)
        self.assertEqual(chunks[-1].usage.completion_tokens, 6 * 8)
        self.assertEqual(chunks[-1].usage.prompt_tokens, r.usage.prompt_tokens)

    def test_echo(self):
        prompt = "In the beginning"
        plain = CLIENT.completions.create(prompt=prompt, max_tokens=6, **GREEDY).choices[0].text
        r = CLIENT.completions.create(prompt=prompt, max_tokens=6, echo=True, **GREEDY)
        self.assertEqual(r.choices[0].text, prompt + plain)
        self.assertEqual(r.usage.completion_tokens, 6)
        streamed = list(CLIENT.completions.create(prompt=prompt, max_tokens=6, echo=True, stream=True, **GREEDY))
        self.assertTrue(streamed[0].choices[0].text.startswith(prompt))
        self.assertEqual("".join(c.choices[0].text for c in streamed if c.choices), prompt + plain)
        # Token ids are echoed decoded.
        ids = tokenize({"prompt": prompt})
        r = CLIENT.completions.create(prompt=ids, max_tokens=6, echo=True, **GREEDY)
        self.assertEqual(r.choices[0].text, prompt + plain)

    def test_echo_with_max_tokens_zero(self):
        r = CLIENT.completions.create(model=MODEL, prompt=self.PROMPTS, max_tokens=0, echo=True)
        self.assertEqual([c.text for c in r.choices], self.PROMPTS)
        self.assertEqual([c.finish_reason for c in r.choices], ["length"] * 3)
        self.assertEqual(r.usage.completion_tokens, 0)
        self.assertEqual(r.usage.prompt_tokens, sum(len(tokenize({"prompt": p})) for p in self.PROMPTS))
        chunks = list(CLIENT.completions.create(model=MODEL, prompt=self.PROMPTS, max_tokens=0, echo=True,
                                                stream=True, stream_options={"include_usage": True}))
        texts = {c.choices[0].index: c.choices[0].text for c in chunks if c.choices}
        self.assertEqual(texts, {0: self.PROMPTS[0], 1: self.PROMPTS[1], 2: self.PROMPTS[2]})
        self.assertEqual(chunks[-1].usage.completion_tokens, 0)

    def test_refusals(self):
        def refused(param, contains=None, **kw):
            with self.assertRaises(openai.BadRequestError) as ctx:
                CLIENT.completions.create(model=MODEL, prompt="In the beginning", **kw)
            self.assertEqual(ctx.exception.body["param"], param, ctx.exception.body)
            if contains:
                self.assertIn(contains, ctx.exception.body["message"])
        refused("max_tokens", max_tokens=0)
        refused("max_tokens", max_tokens=0, logprobs=1)  # max_tokens 0 needs echo
        refused("suffix", suffix="Amen", max_tokens=2)
        refused("guided_regex", "invalid regular expression", max_tokens=2, extra_body={"guided_regex": "[a-z"})
        refused("bad_words", "bad_words[1]", max_tokens=2, extra_body={"bad_words": ["God", 3]})
        refused("prompt_logprobs", max_tokens=2, extra_body={"prompt_logprobs": 21})
        refused("prompt_logprobs", "stream", max_tokens=2, stream=True, extra_body={"prompt_logprobs": 1})
        status, _, body = SERVER.request("POST", "/v1/completions",
                                         {"model": MODEL, "prompt": ["In the beginning", 3], "max_tokens": 2})
        self.assertEqual(status, 400, body)
        err = assert_openai_error_shape(self, body)
        self.assertEqual(err["param"], "prompt")
        self.assertIn("prompt[1]", err["message"])


class PromptLogprobsTest(unittest.TestCase):
    """Completions echo + logprobs (+ max_tokens 0: lm-eval-harness's loglikelihood) and vLLM's
    prompt_logprobs: the engine scores every prompt token given the ones before it."""
    TEXTS = ["In the beginning God created the heaven and the earth.",
             "And the earth was without form, and void; and darkness was upon the face of the deep."]

    def score_with_perplexity(self, text):
        """-NLL of the text's tokens after the first, from `weft perplexity` (Engine::score)."""
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(text)
        try:
            out = subprocess.run([ARGS.weft, "perplexity", "--model", ARGS.model, "--text", f.name,
                                  "--context", "512", "--threads", "2"],
                                 check=True, capture_output=True, text=True).stdout
        finally:
            os.unlink(f.name)
        got = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(got["windows"], 1)
        return -got["nll_per_token"] * got["tokens"], got["tokens"]

    def test_echo_logprobs_with_max_tokens_zero_equal_scoring(self):
        r = CLIENT.completions.create(model=MODEL, prompt=self.TEXTS, max_tokens=0, echo=True, logprobs=1)
        self.assertEqual(len(r.choices), 2)
        self.assertEqual(r.usage.completion_tokens, 0)
        for text, choice in zip(self.TEXTS, r.choices):
            self.assertEqual(choice.text, text)
            self.assertEqual(choice.finish_reason, "length")
            lp = choice.logprobs
            ids = tokenize({"prompt": text})
            self.assertEqual(len(lp.tokens), len(ids))
            self.assertIsNone(lp.token_logprobs[0])
            self.assertIsNone(lp.top_logprobs[0])
            self.assertTrue(all(x <= 0 for x in lp.token_logprobs[1:]))
            self.assertTrue(all(len(t) == 1 for t in lp.top_logprobs[1:]))
            # The best alternative is at least as likely as the prompt token.
            for got, top in zip(lp.token_logprobs[1:], lp.top_logprobs[1:]):
                self.assertGreaterEqual(max(top.values()), got - 1e-6)
            self.assertEqual(lp.text_offset[0], 0)
            self.assertEqual(lp.text_offset, sorted(lp.text_offset))
            total, scored = self.score_with_perplexity(text)
            self.assertEqual(scored, len(ids) - 1)
            self.assertAlmostEqual(sum(lp.token_logprobs[1:]), total, delta=1e-3 * max(1.0, abs(total)))

    def test_echo_logprobs_before_the_generated_ones(self):
        text = self.TEXTS[0]
        plain = CLIENT.completions.create(prompt=text, max_tokens=5, logprobs=2, **GREEDY).choices[0]
        prompt_only = CLIENT.completions.create(model=MODEL, prompt=text, max_tokens=0, echo=True,
                                                logprobs=2).choices[0].logprobs
        r = CLIENT.completions.create(prompt=text, max_tokens=5, logprobs=2, echo=True, **GREEDY).choices[0]
        self.assertEqual(r.text, text + plain.text)
        n = len(prompt_only.tokens)
        self.assertEqual(r.logprobs.tokens, prompt_only.tokens + plain.logprobs.tokens)
        self.assertEqual(r.logprobs.token_logprobs[:n], prompt_only.token_logprobs)
        for a, b in zip(r.logprobs.token_logprobs[n:], plain.logprobs.token_logprobs):
            self.assertAlmostEqual(a, b, places=5)
        # Generated tokens' offsets continue after the prompt tokens' text.
        self.assertEqual(r.logprobs.text_offset[n], prompt_only.text_offset[-1] + len(prompt_only.tokens[-1]))
        # Streamed: the first chunk carries the prompt's logprobs, then the generated ones follow.
        chunks = list(CLIENT.completions.create(prompt=text, max_tokens=5, logprobs=2, echo=True, stream=True,
                                                **GREEDY))
        tokens, logprobs = [], []
        for c in chunks:
            if c.choices and c.choices[0].logprobs:
                tokens += c.choices[0].logprobs.tokens
                logprobs += c.choices[0].logprobs.token_logprobs
        self.assertEqual(tokens, r.logprobs.tokens)
        self.assertIsNone(logprobs[0])
        for a, b in zip(logprobs[1:], r.logprobs.token_logprobs[1:]):
            self.assertAlmostEqual(a, b, places=5)

    def test_vllm_prompt_logprobs(self):
        text = self.TEXTS[1]
        echoed = CLIENT.completions.create(model=MODEL, prompt=text, max_tokens=0, echo=True,
                                           logprobs=0).choices[0].logprobs
        ids = tokenize({"prompt": text})
        r = CLIENT.completions.create(prompt=text, max_tokens=2, n=2, extra_body={"prompt_logprobs": 2, "seed": 1},
                                      model=MODEL)
        for choice in r.choices:
            plp = choice.model_extra["prompt_logprobs"]
            self.assertEqual(len(plp), len(ids))
            self.assertIsNone(plp[0])
            for p in range(1, len(ids)):
                entry = plp[p]
                self.assertIn(str(ids[p]), entry)
                self.assertAlmostEqual(entry[str(ids[p])]["logprob"], echoed.token_logprobs[p], places=5)
                self.assertGreaterEqual(entry[str(ids[p])]["rank"], 1)
                self.assertIn(len(entry), (2, 3))  # the prompt token and the 2 best (it may be one)
                # The alternatives are ranks 1 and 2 (one of them may be the prompt token itself).
                self.assertTrue({v["rank"] for k, v in entry.items() if k != str(ids[p])} <= {1, 2})
                self.assertTrue({1, 2} <= {v["rank"] for v in entry.values()})
            self.assertIsNone(choice.logprobs)
        # Chat: one list beside the choices, for the rendered prompt.
        messages = [{"role": "user", "content": "Tell me of the creation."}]
        chat = CLIENT.chat.completions.create(model=MODEL, messages=messages, max_tokens=2,
                                              extra_body={"prompt_logprobs": 0})
        plp = chat.model_extra["prompt_logprobs"]
        self.assertEqual(len(plp), len(tokenize({"messages": messages})))
        self.assertIsNone(plp[0])
        self.assertTrue(all(len(e) == 1 for e in plp[1:]))

    def test_matches_transformers(self):
        try:
            import torch
            import transformers
        except ImportError:
            self.skipTest("torch / transformers not installed")
        text = self.TEXTS[0]
        ids = tokenize({"prompt": text})
        lp = CLIENT.completions.create(model=MODEL, prompt=text, max_tokens=0, echo=True,
                                       logprobs=0).choices[0].logprobs
        model = transformers.AutoModelForCausalLM.from_pretrained(ARGS.model, torch_dtype=torch.float32)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].double()
        ref = torch.log_softmax(logits, dim=-1)
        # The server's default KV cache and matmul settings, not the golden tests' F32 ones.
        expected = [ref[p - 1, ids[p]].item() for p in range(1, len(ids))]
        for got, want in zip(lp.token_logprobs[1:], expected):
            self.assertAlmostEqual(got, want, delta=1e-2)
        self.assertAlmostEqual(sum(lp.token_logprobs[1:]), sum(expected), delta=1e-3 * abs(sum(expected)))


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv, verbosity=2)
