"""Tool calling in Mistral's name form, `[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`, through
`weft serve` with the official `openai` client, on the default model (configs/default-model, a
small Llama trained on the KJV Bible) copied into a temporary directory with a Mistral-style
(v7 / v11+, name form) tool-calling chat template written by this test in the model's own role
tokens, so the server judges the mistral parser (name form) from the template.

  - The server log says the parser was judged from the template as mistral; that it is the name
    form is seen in what forced calls make the model write (the reply's logprobs tokens).
  - tool_choice "required" and a named function (streamed and not): the grammar makes the model
    write `[TOOL_CALLS]name[ARGS]{...}`; every call's arguments validate (Python `jsonschema`)
    against its function's parameters; streamed deltas assemble to the non-streamed reply of the
    same seed; the model wrote no [CALL_ID], so the ids are the server's `call_...` ones. A call
    cut by max_tokens is withdrawn into content whole and stays a call streamed (as documented).
  - tool_choice "auto": the request's own guided_regex makes the model write a call with
    `[CALL_ID]a1B2c3D4e` (and one with an id of its own choosing, read back from the raw text of
    tool_choice "none"): the reply's call id is exactly the model's, streamed and whole, with the
    name, the arguments and finish_reason "tool_calls"; a call without [CALL_ID] gets a `call_`
    id, also next to one with an id in the same reply.
  - A history with an assistant tool call of id "a1B2c3D4e" and its tool result renders
    (/tokenize then /detokenize) with `[CALL_ID]a1B2c3D4e` in the prompt; the template's own
    check of Mistral's id form (9 letters and digits) refuses other ids with a 400.

Run by ctest (label e2e) as:
  python3 test_tool_calling_mistral.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR
"""
import json
import os
import re
import shutil
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
jsonschema, openai = serve_fixture.require("jsonschema", "openai")
from serve_fixture import API_KEY, MODEL, Server, assert_openai_error_shape  # noqa: E402
from tool_calling_fixture import SCHEMAS, TOOLS, USER, assemble_stream, model_with_template  # noqa: E402

ARGS = None

# Mistral's name form (as in the v7 / v11+ templates: tools listed in [AVAILABLE_TOOLS], calls as
# [TOOL_CALLS]name[CALL_ID]id[ARGS]{json}, results as [TOOL_RESULTS]id[TOOL_CONTENT]...), in the
# default model's own role tokens. Like Mistral's templates it checks the ids' form.
TOOL_TEMPLATE = r"""
{%- if tools %}<|system|>
{% if messages[0].role == 'system' %}{{ messages[0].content }}
{% endif %}[AVAILABLE_TOOLS]{{ tools | tojson }}[/AVAILABLE_TOOLS]<|end|>
{% elif messages[0].role == 'system' %}<|system|>
{{ messages[0].content }}<|end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'system' %}
{%- elif message.role == 'assistant' and message.tool_calls %}<|assistant|>
{% if message.content %}{{ message.content }} {% endif %}
{%- for call in message.tool_calls %}
{%- if call.id is not defined or call.id | length != 9 or not call.id.isalnum() %}
{{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
{%- endif %}
{{- '[TOOL_CALLS]' + call.function.name + '[CALL_ID]' + call.id + '[ARGS]' + (call.function.arguments | tojson) }}
{%- endfor %}<|end|>
{% elif message.role == 'tool' %}<|user|>
[TOOL_RESULTS]{{ message.tool_call_id }}[TOOL_CONTENT]{{ message.content }}[/TOOL_RESULTS]<|end|>
{% else %}<|{{ message.role }}|>
{{ message.content }}<|end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|assistant|>
{% endif %}"""

MODEL_ID = "a1B2c3D4e"  # a call id in Mistral's form: 9 letters and digits


def setUpModule():
    global SERVER, CLIENT, MODEL_DIR
    MODEL_DIR = model_with_template(ARGS.model, TOOL_TEMPLATE, "weft-tools-mistral-")
    SERVER = Server(MODEL_DIR, "--api-key", API_KEY, "--max-model-len", "1024")
    CLIENT = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY, max_retries=0)


def tearDownModule():
    SERVER.stop()
    shutil.rmtree(MODEL_DIR, ignore_errors=True)


def create(**kw):
    args = dict(model=MODEL, messages=USER, tools=TOOLS, max_tokens=160, temperature=0.9)
    args.update(kw)
    return CLIENT.chat.completions.create(**args)


def streamed(**kw):
    return assemble_stream(create(stream=True, **kw))


def whole_calls(message):
    return [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or []]


class ServerLogTest(unittest.TestCase):
    def test_parser_judged_from_the_template(self):
        # The log names vLLM's parser ("mistral" covers both forms) and the form forced calls
        # take, which ForcedCallsTest.test_forced_calls_are_written_in_the_name_form also sees in
        # what the model writes.
        self.assertTrue(any("tool calls parsed as mistral (judged from the chat template); forced calls in "
                            "the name form [TOOL_CALLS]name[ARGS]{...}" in line
                            for line in SERVER.log), "".join(SERVER.log))


class ForcedCallsTest(unittest.TestCase):
    def check_calls(self, calls, allowed):
        self.assertTrue(calls)
        for call in calls:
            self.assertEqual(call.type, "function")
            self.assertTrue(call.id.startswith("call_"), call.id)  # the model wrote no [CALL_ID]
            self.assertIn(call.function.name, allowed)
            jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])

    def test_forced_calls_are_written_in_the_name_form(self):
        # The reply's tokens (logprobs) are what the model wrote: the name form of the template,
        # not the v3 JSON list, and its call is the one parsed.
        for choice, name in (("required", None), ({"type": "function", "function": {"name": "get_time"}}, "get_time")):
            c = create(tool_choice=choice, parallel_tool_calls=False, seed=5, logprobs=True).choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            raw = "".join(t.token for t in c.logprobs.content)
            self.check_calls(c.message.tool_calls, {name} if name else SCHEMAS)
            call = c.message.tool_calls[0]
            self.assertEqual(raw, "[TOOL_CALLS]%s[ARGS]%s<|endoftext|>" % (call.function.name, call.function.arguments))

    def test_required(self):
        # The Bible model, once it may end, rather writes another call: a bias on its end token
        # (id 0, only allowed by the grammar between calls) lets it stop.
        finished = 0
        for seed in range(6):
            c = create(tool_choice="required", seed=seed, max_tokens=300, logit_bias={"0": 20}).choices[0]
            self.assertIn(c.finish_reason, ("tool_calls", "length"), c)
            if c.finish_reason == "length":
                continue  # calls until max_tokens: the last one is cut
            finished += 1
            self.assertIsNone(c.message.content)
            self.check_calls(c.message.tool_calls, SCHEMAS)
        self.assertGreaterEqual(finished, 3)

    def test_required_without_parallel_calls(self):
        for seed in range(4):
            c = create(tool_choice="required", parallel_tool_calls=False, seed=seed).choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertIsNone(c.message.content)
            self.assertEqual(len(c.message.tool_calls), 1)
            self.check_calls(c.message.tool_calls, SCHEMAS)

    def test_named(self):
        for seed in range(4):
            c = create(tool_choice={"type": "function", "function": {"name": "get_time"}}, seed=seed).choices[0]
            self.assertEqual(c.finish_reason, "tool_calls")
            self.assertEqual(len(c.message.tool_calls), 1)
            self.check_calls(c.message.tool_calls, {"get_time"})

    def test_streamed_equals_non_streamed(self):
        cases = [dict(tool_choice="required", seed=1),  # two calls
                 dict(tool_choice="required", seed=3, max_tokens=300, logit_bias={"0": 20}),
                 dict(tool_choice="required", parallel_tool_calls=False, seed=7),
                 dict(tool_choice={"type": "function", "function": {"name": "get_weather"}}, seed=11)]
        for case in cases:
            whole = create(**case).choices[0]
            content, calls, finish = streamed(**case)
            self.assertEqual(whole.finish_reason, "tool_calls", case)
            self.assertEqual(finish, whole.finish_reason, case)
            self.assertIsNone(whole.message.content, case)
            self.assertEqual(content, "", case)
            self.assertEqual([(c["name"], c["arguments"]) for c in calls],
                             [(c["name"], c["arguments"]) for c in whole_calls(whole.message)], case)
            self.assertTrue(calls, case)
            ids = [c["id"] for c in calls] + [c.id for c in whole.message.tool_calls]
            self.assertEqual(len(set(ids)), len(ids), ids)  # server ids: new for every call
            for c in calls:
                self.assertTrue(c["id"].startswith("call_"), c)
                jsonschema.validate(json.loads(c["arguments"]), SCHEMAS[c["name"]])

    def test_a_call_cut_by_max_tokens(self):
        # The reply ends inside a call's arguments (tool_call_parser.h): whole, the cut call is
        # withdrawn and its text is content; streamed, its start and arguments already went out
        # and stay. The complete calls before it are the same either way. The first seed whose
        # reply is cut after a complete call is used (which one depends on the CPU's arithmetic).
        for seed in range(11, 41):
            case = dict(tool_choice="required", seed=seed)
            whole = create(**case).choices[0]
            # Cut inside a call's arguments: its text withdrawn into content (a cut right after a
            # call, or inside the next marker, is not this case).
            if (whole.finish_reason == "length" and whole.message.tool_calls and
                    "[ARGS]" in (whole.message.content or "")):
                break
        else:
            self.fail("no seed in 11..40 gave a reply cut by max_tokens inside a call after a complete one")
        content, calls, finish = streamed(**case)
        self.assertEqual((whole.finish_reason, finish), ("length", "length"))
        self.check_calls(whole.message.tool_calls, SCHEMAS)
        complete = [(c["name"], c["arguments"]) for c in whole_calls(whole.message)]
        self.assertEqual([(c["name"], c["arguments"]) for c in calls[:-1]], complete)
        cut = calls[-1]
        self.assertEqual(content, "")
        self.assertEqual(whole.message.content, ("[TOOL_CALLS]%s[ARGS]%s" % (cut["name"], cut["arguments"])).rstrip())
        with self.assertRaises(ValueError):
            json.loads(cut["arguments"])


CITY = r'"city": "[A-Z][a-z]{2,8}"'
WITH_ID = (r'In the beginning\. \[TOOL_CALLS\]get_weather\[CALL_ID\]' + MODEL_ID +
           r'\[ARGS\]\{' + CITY + r'\}')
OWN_ID = r'\[TOOL_CALLS\]get_weather\[CALL_ID\][A-Za-z0-9]{9}\[ARGS\]\{' + CITY + r'\}'
NO_ID = r'In the beginning\. \[TOOL_CALLS\]get_weather\[ARGS\]\{' + CITY + r'\}'
MIXED = (r'\[TOOL_CALLS\]get_weather\[CALL_ID\]' + MODEL_ID + r'\[ARGS\]\{' + CITY + r'\}'
         r'\[TOOL_CALLS\]get_time\[ARGS\]\{"zone": "[A-Z]{3}"\}')


class AutoTest(unittest.TestCase):
    """Calls the model wrote freely (tool_choice "auto"), steered by the request's own
    guided_regex; the raw text, from tool_choice "none" with the same seed, is the reference."""

    def run_regex(self, regex, seed):
        """The raw text and the reply, whole and streamed, of `regex` under tool_choice "auto"."""
        body = {"guided_regex": regex}
        raw = create(tool_choice="none", seed=seed, extra_body=body).choices[0]
        self.assertRegex(raw.message.content, "^" + regex + "$")
        self.assertIsNone(raw.message.tool_calls)
        whole = create(tool_choice="auto", seed=seed, extra_body=body).choices[0]
        return raw.message.content, whole, streamed(tool_choice="auto", seed=seed, extra_body=body)

    def expect(self, whole, stream, content, calls):
        """`calls`: (id, name, arguments) each; an id None is a server one ("call_...")."""
        def check(got):
            self.assertEqual(len(got), len(calls), got)
            for g, (cid, name, arguments) in zip(got, calls):
                if cid is None:
                    self.assertTrue(g["id"].startswith("call_"), g)
                else:
                    self.assertEqual(g["id"], cid)
                self.assertEqual(g["name"], name)
                self.assertEqual(json.loads(g["arguments"]), arguments)
                jsonschema.validate(json.loads(g["arguments"]), SCHEMAS[name])
        self.assertEqual(whole.finish_reason, "tool_calls")
        self.assertEqual(whole.message.content, content)
        for c in whole.message.tool_calls:
            self.assertEqual(c.type, "function")
        check(whole_calls(whole.message))
        s_content, s_calls, s_finish = stream
        self.assertEqual(s_finish, "tool_calls")
        self.assertEqual(s_content, content or "")
        check(s_calls)
        # The same text: streamed arguments are the whole reply's.
        self.assertEqual([c["arguments"] for c in s_calls], [c.function.arguments for c in whole.message.tool_calls])

    def test_the_model_call_id_is_the_call_id(self):
        for seed in (3, 8):
            raw, whole, stream = self.run_regex(WITH_ID, seed)
            city = re.search(r'"city": "([A-Za-z]+)"', raw).group(1)
            self.expect(whole, stream, "In the beginning.", [(MODEL_ID, "get_weather", {"city": city})])

    def test_an_id_the_model_chose(self):
        for seed in (1, 2):
            raw, whole, stream = self.run_regex(OWN_ID, seed)
            m = re.search(r'\[CALL_ID\]([A-Za-z0-9]{9})\[ARGS\](\{.*\})$', raw)
            self.expect(whole, stream, None, [(m.group(1), "get_weather", json.loads(m.group(2)))])

    def test_a_call_without_an_id_gets_a_server_id(self):
        raw, whole, stream = self.run_regex(NO_ID, 3)
        city = re.search(r'"city": "([A-Za-z]+)"', raw).group(1)
        self.expect(whole, stream, "In the beginning.", [(None, "get_weather", {"city": city})])
        # Each request's server id is its own.
        self.assertNotEqual(whole.message.tool_calls[0].id, stream[1][0]["id"])

    def test_calls_with_and_without_ids_in_one_reply(self):
        raw, whole, stream = self.run_regex(MIXED, 4)
        city = re.search(r'"city": "([A-Za-z]+)"', raw).group(1)
        zone = re.search(r'"zone": "([A-Z]+)"', raw).group(1)
        self.expect(whole, stream, None, [(MODEL_ID, "get_weather", {"city": city}), (None, "get_time", {"zone": zone})])


class HistoryTest(unittest.TestCase):
    def history(self, call_id):
        return USER + [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": call_id, "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\": \"Jerusalem\"}"}}]},
            {"role": "tool", "tool_call_id": call_id, "content": "{\"temperature\": 21}"},
        ]

    def prompt_of(self, messages):
        status, _, text = SERVER.request("POST", "/tokenize", {"model": MODEL, "messages": messages, "tools": TOOLS})
        self.assertEqual(status, 200, text)
        status, _, text = SERVER.request("POST", "/detokenize", {"model": MODEL, "tokens": json.loads(text)["tokens"],
                                                                 "skip_special_tokens": False})
        self.assertEqual(status, 200, text)
        return json.loads(text)["prompt"]

    def test_history_renders_and_answers(self):
        history = self.history(MODEL_ID)
        prompt = self.prompt_of(history)
        self.assertIn('<|assistant|>\n[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Jerusalem"}<|end|>\n',
                      prompt)
        self.assertIn('<|user|>\n[TOOL_RESULTS]a1B2c3D4e[TOOL_CONTENT]{"temperature": 21}[/TOOL_RESULTS]<|end|>\n'
                      '<|assistant|>\n', prompt)
        self.assertIn('[AVAILABLE_TOOLS]', prompt)
        self.assertIn('"name": "get_time"', prompt)  # the tools are in the prompt
        c = create(messages=history, tool_choice="required", parallel_tool_calls=False, seed=2).choices[0]
        self.assertEqual(c.finish_reason, "tool_calls")
        self.assertEqual(len(c.message.tool_calls), 1)
        self.assertTrue(c.message.tool_calls[0].id.startswith("call_"))
        jsonschema.validate(json.loads(c.message.tool_calls[0].function.arguments),
                            SCHEMAS[c.message.tool_calls[0].function.name])
        r = create(messages=history, tool_choice="auto", seed=2, max_tokens=30).choices[0]
        self.assertIn(r.finish_reason, ("stop", "length", "tool_calls"))

    def test_a_reply_id_goes_back_into_the_history(self):
        # The id the server sent with a call is one the template takes back.
        c = create(tool_choice="auto", seed=3, extra_body={"guided_regex": WITH_ID}).choices[0]
        call = c.message.tool_calls[0]
        messages = USER + [{"role": "assistant", "content": c.message.content,
                            "tool_calls": [call.model_dump(exclude_none=True)]},
                           {"role": "tool", "tool_call_id": call.id, "content": "{\"temperature\": 21}"}]
        prompt = self.prompt_of(messages)
        self.assertIn("[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]" + json.dumps(json.loads(call.function.arguments)),
                      prompt)
        self.assertIn("[TOOL_RESULTS]a1B2c3D4e[TOOL_CONTENT]", prompt)

    def test_the_template_checks_the_id_form(self):
        req = {"model": MODEL, "messages": self.history("call_1"), "tools": TOOLS, "max_tokens": 8}
        status, _, text = SERVER.request("POST", "/v1/chat/completions", req)
        self.assertEqual(status, 400, text)
        err = assert_openai_error_shape(self, text)
        self.assertEqual(err["param"], "messages", text)
        self.assertIn("Tool call IDs should be alphanumeric strings with length 9!", err["message"])


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv)
