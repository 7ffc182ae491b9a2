"""Constrained output through `weft serve` with real clients: the official `openai` client
(response_format json_schema / json_object, `.parse()` with a Pydantic model, vLLM's
structured_outputs and guided_* fields, streamed and not) and LangChain's
`with_structured_output`, on the default model (configs/default-model, which has a chat
template). Every output under a schema that finishes with "stop" must parse and validate
(Python `jsonschema`) over a corpus of 42 schemas; bad schemas, regexes and grammars get a 400 in
the OpenAI error shape naming the parameter.

Run by ctest (label e2e) as:
  python3 test_constrained_output.py --weft WEFT_BINARY --model DEFAULT_MODEL_DIR
Installs tests/e2e/requirements.txt with pip when a package is missing.
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, HERE)
import serve_fixture  # noqa: E402
jsonschema, langchain_openai, openai, pydantic = serve_fixture.require("jsonschema", "langchain_openai", "openai", "pydantic")
from constrained_schemas import SCHEMAS  # noqa: E402
from serve_fixture import API_KEY, MODEL, Server, assert_openai_error_shape  # noqa: E402

ARGS = None


def setUpModule():
    global SERVER, CLIENT
    SERVER = Server(ARGS.model, "--api-key", API_KEY, "--max-num-seqs", "64")
    CLIENT = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY, max_retries=0)


def tearDownModule():
    SERVER.stop()


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=24)
    age: int = pydantic.Field(ge=0, le=150)


def chat(content):
    return [{"role": "user", "content": content}]


class SchemaCorpusTest(unittest.TestCase):
    def test_every_stopped_output_validates(self):
        stopped = 0
        for i, schema in enumerate(SCHEMAS):
            r = CLIENT.completions.create(
                model=MODEL, prompt="And the king said,", max_tokens=240, temperature=1.0, seed=i,
                extra_body={"response_format": {"type": "json_schema",
                                                "json_schema": {"name": "s%d" % i, "schema": schema}}})
            c = r.choices[0]
            if c.finish_reason != "stop":
                continue
            stopped += 1
            value = json.loads(c.text)
            jsonschema.validate(value, schema)
        # The default model is not an instruct model; most outputs still complete in 240 tokens.
        self.assertGreaterEqual(stopped, len(SCHEMAS) // 2, "only %d of %d outputs finished" % (stopped, len(SCHEMAS)))

    def test_streamed_output_is_the_same_json(self):
        schema = SCHEMAS[9]
        body = {"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}}
        args = dict(model=MODEL, prompt="And God said", max_tokens=200, temperature=0.8, seed=5, extra_body=body)
        whole = CLIENT.completions.create(**args).choices[0]
        text = "".join(ch.choices[0].text for ch in CLIENT.completions.create(stream=True, **args) if ch.choices)
        self.assertEqual(text, whole.text)
        if whole.finish_reason == "stop":
            jsonschema.validate(json.loads(text), schema)


class ClientsTest(unittest.TestCase):
    def test_openai_parse_with_a_pydantic_model(self):
        parse = getattr(CLIENT.chat.completions, "parse", None) or CLIENT.beta.chat.completions.parse
        done = 0
        for seed in range(6):
            r = parse(model=MODEL, messages=chat("Who was king?"), response_format=Person, max_tokens=200,
                      temperature=0.7, seed=seed)
            if r.choices[0].finish_reason != "stop":
                continue
            done += 1
            person = r.choices[0].message.parsed
            self.assertIsInstance(person, Person)
            self.assertLessEqual(len(person.name), 24)
        self.assertGreater(done, 0)

    def test_langchain_with_structured_output(self):
        llm = langchain_openai.ChatOpenAI(base_url="http://127.0.0.1:%d/v1" % SERVER.port, api_key=API_KEY,
                                          model=MODEL, temperature=0.7, max_tokens=200, max_retries=0)
        structured = llm.with_structured_output(Person, method="json_schema")
        person = structured.invoke("Name a king and his age.")
        self.assertIsInstance(person, Person)

    def test_json_object(self):
        for seed in range(4):
            r = CLIENT.chat.completions.create(model=MODEL, messages=chat("Reply in JSON."), max_tokens=200,
                                               temperature=0.8, seed=seed, response_format={"type": "json_object"})
            if r.choices[0].finish_reason == "stop":
                self.assertIsInstance(json.loads(r.choices[0].message.content), (dict, list))

    def test_vllm_fields(self):
        def text(**body):
            return CLIENT.completions.create(model=MODEL, prompt="And", max_tokens=40, temperature=0.9, seed=1,
                                             extra_body=body).choices[0].text
        self.assertIn(text(guided_choice=["light", "darkness", "water"]), ["light", "darkness", "water"])
        self.assertIn(text(structured_outputs={"choice": ["yea", "nay"]}), ["yea", "nay"])
        self.assertRegex(text(guided_regex="[0-9]{3}-[a-z]{2,5}"), r"^[0-9]{3}-[a-z]{2,5}$")
        self.assertRegex(text(structured_outputs={"regex": "(Amen|Selah)\\."}), r"^(Amen|Selah)\.$")
        grammar = 'root ::= "The " noun " is " adj "."\nnoun ::= "LORD" | "earth" | "sea"\nadj ::= "good" | "great"'
        self.assertRegex(text(guided_grammar=grammar), r"^The (LORD|earth|sea) is (good|great)\.$")
        self.assertRegex(text(structured_outputs={"grammar": grammar}), r"^The (LORD|earth|sea) is (good|great)\.$")
        r = CLIENT.completions.create(model=MODEL, prompt="And", max_tokens=200, temperature=0.9, seed=1, extra_body={
            "guided_json": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}})
        if r.choices[0].finish_reason == "stop":
            self.assertIsInstance(json.loads(r.choices[0].text)["n"], int)

    def test_n_choices_each_follow_the_grammar(self):
        r = CLIENT.completions.create(model=MODEL, prompt="And", max_tokens=20, temperature=1.0, n=4, seed=2,
                                      extra_body={"guided_choice": ["one", "two", "three"]})
        self.assertEqual(len(r.choices), 4)
        for c in r.choices:
            self.assertIn(c.text, ["one", "two", "three"])


class BadInputTest(unittest.TestCase):
    def expect_400(self, param, **body):
        status, _, text = SERVER.request("POST", "/v1/completions",
                                         {"model": MODEL, "prompt": "x", "max_tokens": 4, **body})
        self.assertEqual(status, 400, text)
        err = assert_openai_error_shape(self, text)
        self.assertEqual(err["param"], param, text)
        return err["message"]

    def test_bad_constraints_name_the_parameter(self):
        self.expect_400("response_format.json_schema.schema",
                        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}})
        self.expect_400("response_format.json_schema.schema",
                        response_format={"type": "json_schema", "json_schema": {"name": "x"}})
        self.expect_400("response_format.type", response_format={"type": "yaml"})
        self.expect_400("guided_regex", guided_regex="([a-z]")
        self.expect_400("guided_grammar", guided_grammar="root ::= undefined_rule")
        self.expect_400("guided_choice", guided_choice=[])
        self.expect_400("structured_outputs.whitespace_pattern",
                        structured_outputs={"json": {"type": "object"}, "whitespace_pattern": " "})
        self.assertIn("only one constraint", self.expect_400("guided_choice", guided_regex="a", guided_choice=["b"]))
        deep = {"type": "string"}
        for _ in range(55):  # past the schema depth limit (48), within the request body's (64)
            deep = {"type": "array", "items": deep}
        self.expect_400("guided_json", guided_json=deep)


if __name__ == "__main__":
    ARGS, argv = serve_fixture.parse_args("--model")
    unittest.main(argv=argv, verbosity=2)
