"""Tool calling through `weft serve` with the official `openai` client, on the default model
(configs/default-model, a small Llama trained on the KJV Bible) copied into a temporary
directory with a Hermes-style (Qwen 2.5-like) tool-calling chat template written by this test,
so the server judges the hermes parser from the template.

  - tool_choice "required" and a named function (streamed and not): the grammar makes the model
    write <tool_call> blocks; every call's arguments validate (Python `jsonschema`) against its
    function's parameters; parallel_tool_calls false gives one call; streamed deltas assemble to
    the non-streamed reply of the same seed.
  - tool_choice "auto": the model is free. Honest checks on what it really wrote: (1) with no call
    in its text, the reply equals (content and finish_reason) that of tool_choice "none" for the
    same prompt and seed, where nothing is parsed; (2) the request's own guided_regex makes the
    model write text followed by a call, and the parser (not a tool grammar) must split it into
    content and the call, streamed and not, with the raw text (from tool_choice "none") as
    the reference.
  - A multi-turn history with an assistant tool call (arguments as a JSON string) and a tool
    result renders into the prompt with the arguments as a mapping (checked through /tokenize).
  - 400s in the OpenAI error shape naming the parameter; a model without a known format refuses
    tools unless tool_choice is "none".

Run by ctest (label e2e) as:
  python3 test_tool_calling.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
jsonschema, openai = serve_fixture.require("jsonschema", "openai")
from serve_fixture import API_KEY, MODEL, Server, assert_openai_error_shape  # noqa: E402
from tool_calling_fixture import SCHEMAS, TOOLS, USER, assemble_stream, model_with_template  # noqa: E402

ARGS = None

# Hermes / Qwen 2.5 style, in the default model's own role tokens.
TOOL_TEMPLATE = r"""
{%- if tools %}<|system|>
{%- if messages[0].role == 'system' %}
{{ messages[0].content }}{% endif %}
Tools:
{%- for tool in tools %}
{{ tool.function | tojson }}
{%- endfor %}
Call one as <tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|end|>
{% elif messages[0].role == 'system' %}<|system|>
{{ messages[0].content }}<|end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- elif message.role == 'assistant' and message.tool_calls %}<|assistant|>
{%- if message.content %}
{{ message.content }}{% endif %}
{%- for call in message.tool_calls %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|end|>
{% elif message.role == 'tool' %}<|user|>
<tool_response>
{{ message.content }}
</tool_response><|end|>
{% else %}<|{{ message.role }}|>
{{ message.content }}<|end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|assistant|>
{% endif %}"""



def setUpModule():
    global SERVER, PLAIN, CLIENT, MODEL_DIR
    MODEL_DIR = model_with_template(ARGS.model, TOOL_TEMPLATE, "weft-tools-")
    SERVER = Server(MODEL_DIR, "--api-key", API_KEY, "--max-model-len", "1024")
    CLIENT = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY, max_retries=0)
    PLAIN = None


def tearDownModule():
    SERVER.stop()
    if PLAIN is not None:
        PLAIN.stop()
    shutil.rmtree(MODEL_DIR, ignore_errors=True)


def create(**kw):
    args = dict(model=MODEL, messages=USER, tools=TOOLS, max_tokens=160, temperature=0.9)
    args.update(kw)
    return CLIENT.chat.completions.create(**args)


def streamed(**kw):
    """The reply of a streamed request; the model writes no call ids, so each is a server one."""
    content, calls, finish = assemble_stream(create(stream=True, **kw))
    assert all(c["id"].startswith("call_") for c in calls), calls
    return content, calls, finish


class ForcedCallsTest(unittest.TestCase):
    def check_calls(self, calls, allowed):
        self.assertTrue(calls)
        for call in calls:
            self.assertEqual(call.type, "function")
            self.assertTrue(call.id.startswith("call_"), call.id)
            self.assertIn(call.function.name, allowed)
            jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])

    def test_required(self):
        # The Bible model, once it may end, rather writes another call: a bias on its end token
        # (id 0, only allowed by the grammar between calls) lets it stop.
        finished = 0
        for seed in range(6):
            c = create(tool_choice="required", seed=seed, max_tokens=300, logit_bias={"0": 20}).choices[0]
            self.assertIn(c.finish_reason, ("tool_calls", "length"), c)
            if c.finish_reason == "length":
                continue  # calls until max_tokens: the last one is cut (and is content)
            finished += 1
            self.assertIsNone(c.message.content)
            self.check_calls(c.message.tool_calls, SCHEMAS)
        self.assertGreaterEqual(finished, 3)

    def test_required_cut_by_max_tokens(self):
        # Without the bias it writes calls until max_tokens: the complete ones are calls, the
        # finish_reason says the reply was cut.
        c = create(tool_choice="required", seed=0, max_tokens=120).choices[0]
        self.assertEqual(c.finish_reason, "length")
        self.check_calls(c.message.tool_calls, SCHEMAS)

    def test_required_without_parallel_calls(self):
        for seed in range(4):
            c = create(tool_choice="required", parallel_tool_calls=False, seed=seed).choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertEqual(len(c.message.tool_calls), 1)
            self.check_calls(c.message.tool_calls, SCHEMAS)

    def test_named(self):
        for seed in range(4):
            c = create(tool_choice={"type": "function", "function": {"name": "get_time"}}, seed=seed).choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertEqual(len(c.message.tool_calls), 1)
            self.check_calls(c.message.tool_calls, {"get_time"})

    def test_streamed_equals_non_streamed(self):
        for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
            whole = create(tool_choice=choice, seed=11).choices[0]
            content, calls, finish = streamed(tool_choice=choice, seed=11)
            self.assertEqual(finish, whole.finish_reason)
            self.assertEqual(content, whole.message.content or "")
            self.assertEqual([(c["name"], c["arguments"]) for c in calls],
                             [(c.function.name, c.function.arguments) for c in whole.message.tool_calls])


REGEX = (r'In the beginning\. <tool_call>\n\{"name": "get_weather", "arguments": '
         r'\{"city": "[A-Z][a-z]{2,8}"\}\}\n</tool_call>')


class AutoTest(unittest.TestCase):
    def test_free_text_is_passed_through(self):
        for seed in range(3):
            auto = create(tool_choice="auto", seed=seed, max_tokens=40).choices[0]
            raw = create(tool_choice="none", seed=seed, max_tokens=40).choices[0]
            self.assertNotIn("<tool_call>", raw.message.content)  # the Bible model writes no calls
            self.assertIsNone(auto.message.tool_calls)
            self.assertEqual(auto.message.content, raw.message.content)
            self.assertEqual(auto.finish_reason, raw.finish_reason)
            content, calls, finish = streamed(tool_choice="auto", seed=seed, max_tokens=40)
            self.assertEqual((content, calls, finish), (raw.message.content, [], raw.finish_reason))

    def test_a_call_the_model_wrote_is_parsed(self):
        body = {"guided_regex": REGEX}
        raw = create(tool_choice="none", seed=3, extra_body=body).choices[0].message.content
        self.assertRegex(raw, "^" + REGEX + "$")
        city = re.search(r'"city": "([A-Za-z]+)"', raw).group(1)
        c = create(tool_choice="auto", seed=3, extra_body=body).choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(c.message.content, "In the beginning.")
        self.assertEqual(len(c.message.tool_calls), 1)
        self.assertEqual(c.message.tool_calls[0].function.name, "get_weather")
        self.assertEqual(json.loads(c.message.tool_calls[0].function.arguments), {"city": city})
        content, calls, finish = streamed(tool_choice="auto", seed=3, extra_body=body)
        self.assertEqual(content, "In the beginning.")
        self.assertEqual([(x["name"], x["arguments"]) for x in calls],
                         [("get_weather", c.message.tool_calls[0].function.arguments)])
        self.assertEqual(finish, "tool_calls")


class HistoryTest(unittest.TestCase):
    HISTORY = USER + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Jerusalem\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"},
    ]

    def test_history_renders_and_answers(self):
        status, _, text = SERVER.request("POST", "/tokenize", {"model": MODEL, "messages": self.HISTORY, "tools": TOOLS})
        self.assertEqual(status, 200, text)
        status, _, text = SERVER.request("POST", "/detokenize", {"model": MODEL, "tokens": json.loads(text)["tokens"],
                                                                 "skip_special_tokens": False})
        prompt = json.loads(text)["prompt"]
        self.assertIn('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Jerusalem"}}\n</tool_call><|end|>', prompt)
        self.assertIn('<|user|>\n<tool_response>\n{"temperature": 21}\n</tool_response><|end|>\n<|assistant|>\n', prompt)
        self.assertIn('{"name": "get_time"', prompt)  # the tools are in the prompt
        c = create(messages=self.HISTORY, tool_choice="required", parallel_tool_calls=False, seed=2).choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(len(c.message.tool_calls), 1)
        jsonschema.validate(json.loads(c.message.tool_calls[0].function.arguments),
                            SCHEMAS[c.message.tool_calls[0].function.name])
        r = create(messages=self.HISTORY, tool_choice="auto", seed=2, max_tokens=30).choices[0]
        self.assertIn(r.finish_reason, ("stop", "length", "tool_calls"))


class ErrorsTest(unittest.TestCase):
    def expect_400(self, param, **body):
        req = {"model": MODEL, "messages": USER, "max_tokens": 8}
        req.update(body)
        status, _, text = SERVER.request("POST", "/v1/chat/completions", req)
        self.assertEqual(status, 400, text)
        err = assert_openai_error_shape(self, text)
        self.assertEqual(err["param"], param, text)
        self.assertTrue(err["message"].startswith(param), text)
        return err

    def test_bad_requests(self):
        self.expect_400("tool_choice", tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}})
        self.expect_400("tool_choice", tool_choice="required")
        self.expect_400("tools", tools=TOOLS + TOOLS[:1])
        self.expect_400("tools", tools=[{"type": "retrieval"}])
        self.expect_400("tools", tools=[{"type": "function", "function": {"description": "no name"}}])
        err = self.expect_400("tools", tools=[{"type": "function", "function": {
            "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "strnig"}}}}}])
        self.assertTrue(err["message"].startswith("tools[0].function.parameters: "), err)
        self.expect_400("response_format", tools=TOOLS, tool_choice="required",
                        response_format={"type": "json_object"})
        self.expect_400("parallel_tool_calls", tools=TOOLS, parallel_tool_calls="no")
        status, _, text = SERVER.request("POST", "/v1/completions", {"model": MODEL, "prompt": "x", "tools": TOOLS})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(text)["error"]["param"], "tools")
        with self.assertRaises(openai.BadRequestError):
            create(tool_choice={"type": "function", "function": {"name": "nope"}})

    def test_a_model_without_a_tool_format(self):
        global PLAIN
        PLAIN = Server(ARGS.model, "--api-key", API_KEY)
        self.assertFalse(any("tool calls parsed as" in line for line in PLAIN.log))
        req = {"model": MODEL, "messages": USER, "max_tokens": 8, "tools": TOOLS}
        status, _, text = PLAIN.request("POST", "/v1/chat/completions", req)
        self.assertEqual(status, 400, text)
        err = assert_openai_error_shape(self, text)
        self.assertEqual(err["param"], "tools")
        self.assertIn("--tool-call-parser", err["message"])
        status, _, text = PLAIN.request("POST", "/v1/chat/completions", dict(req, tool_choice="none"))
        self.assertEqual(status, 200, text)
        self.assertIsNone(json.loads(text)["choices"][0]["message"].get("tool_calls"))


class BatchTest(unittest.TestCase):
    """`weft batch` chat lines with tools: read as weft serve reads them, so on the same model
    and flags each line's record has the reply the server gives the same request (content, the
    calls' names and arguments, finish_reason); a bad line gets an error record naming the field."""

    CASES = [dict(tool_choice="required", seed=3, max_tokens=300, logit_bias={"0": 20}),
             dict(tool_choice="required", parallel_tool_calls=False, seed=1),
             dict(tool_choice={"type": "function", "function": {"name": "get_time"}}, seed=2),
             dict(tool_choice="auto", seed=0, max_tokens=40),
             dict(tool_choice="none", seed=0, max_tokens=40),
             dict(tool_choice="auto", seed=4, max_tokens=100, extra_body={"guided_regex": REGEX})]

    def test_lines_answer_as_the_server_does(self):
        work = tempfile.mkdtemp(prefix="weft-tools-batch-")
        try:
            lines = []
            for i, case in enumerate(self.CASES):
                body = dict(model=MODEL, messages=USER, tools=TOOLS, max_tokens=160, temperature=0.9)
                body.update({k: v for k, v in case.items() if k != "extra_body"})
                body.update(case.get("extra_body", {}))
                lines.append({"custom_id": "c%d" % i, "method": "POST", "url": "/v1/chat/completions", "body": body})
            lines.append({"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
                          "body": dict(model=MODEL, messages=USER, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "nope"}})})
            with open(os.path.join(work, "in.jsonl"), "w") as f:
                f.write("".join(json.dumps(line) + "\n" for line in lines))
            # The server's flags (serve_fixture.Server), one line at a time as the server is asked.
            cmd = [serve_fixture.WEFT, "batch", "--model", MODEL_DIR, "--served-model-name", MODEL,
                   "--max-model-len", "1024", "--kv-cache-blocks", "256", "--threads", "1", "--max-in-flight", "1",
                   "--input", os.path.join(work, "in.jsonl"), "--output", os.path.join(work, "out.jsonl"),
                   "--errors", os.path.join(work, "errors.jsonl")]
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(os.path.join(work, "out.jsonl")) as f:
                records = {r["custom_id"]: r for r in map(json.loads, f)}
            with open(os.path.join(work, "errors.jsonl")) as f:
                errors = [json.loads(line) for line in f]
        finally:
            shutil.rmtree(work, ignore_errors=True)
        called = 0
        for i, case in enumerate(self.CASES):
            want = create(**case).choices[0]
            got = records["c%d" % i]["response"]["body"]["choices"][0]
            self.assertEqual(got["finish_reason"], want.finish_reason, case)
            self.assertEqual(got["message"]["content"], want.message.content, case)
            want_calls = [(c.function.name, c.function.arguments) for c in want.message.tool_calls or []]
            got_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in got["message"].get("tool_calls", [])]
            self.assertEqual(got_calls, want_calls, case)
            for c in got["message"].get("tool_calls", []):
                self.assertTrue(c["id"].startswith("call_") and c["type"] == "function", c)
                jsonschema.validate(json.loads(c["function"]["arguments"]), SCHEMAS[c["function"]["name"]])
            called += bool(got_calls)
        self.assertGreaterEqual(called, 4)  # required x2, named, and the regex's call in auto
        self.assertEqual(len(errors), 1, errors)
        self.assertEqual(errors[0]["custom_id"], "bad")
        self.assertTrue(errors[0]["error"]["message"].startswith("body.tool_choice"), errors[0])


class ServerLogTest(unittest.TestCase):
    def test_parser_judged_from_the_template(self):
        self.assertTrue(any("tool calls parsed as hermes (judged from the chat template)" in line for line in SERVER.log),
                        "".join(SERVER.log))


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv)
