"""What the tool-calling e2e tests share (test_tool_calling.py: Hermes; test_tool_calling_mistral.py:
Mistral's name form): the tools and their parameter schemas, the default model copied with a
tool-calling chat template, and a streamed reply assembled as the openai client's helpers do."""
import json
import os
import shutil
import tempfile

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 16},
                          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
           "required": ["city"]}
TIME = {"type": "object", "properties": {"zone": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["zone"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "description": "The time.", "parameters": TIME}}]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
USER = [{"role": "user", "content": "What is the weather in Jerusalem?"}]


def model_with_template(model_dir, template, prefix):
    """A temporary copy of `model_dir` whose tokenizer_config.json carries `template`."""
    out = tempfile.mkdtemp(prefix=prefix)
    for name in os.listdir(model_dir):
        shutil.copy(os.path.join(model_dir, name), out)
    cfg_path = os.path.join(out, "tokenizer_config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["chat_template"] = template
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    return out


def assemble_stream(chunks):
    """content, the calls as {"id", "name", "arguments"}, finish_reason of a streamed reply. A
    call's id, type and name come once, in its first delta; its arguments in pieces after."""
    content, calls, finish = "", [], None
    for chunk in chunks:
        if not chunk.choices:
            continue
        ch = chunk.choices[0]
        if ch.delta.content:
            content += ch.delta.content
        for tc in ch.delta.tool_calls or []:
            if tc.index == len(calls):
                assert tc.id and tc.type == "function" and tc.function.name, tc
                calls.append({"id": tc.id, "name": tc.function.name, "arguments": ""})
            else:
                assert tc.index == len(calls) - 1 and not tc.id and not (tc.function and tc.function.name), tc
            calls[tc.index]["arguments"] += tc.function.arguments or ""
        if ch.finish_reason:
            finish = ch.finish_reason
    return content, calls, finish
