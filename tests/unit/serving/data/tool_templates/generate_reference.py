#!/usr/bin/env python3
"""Renders OpenAI chat bodies with tools through real tool-calling chat templates (Qwen 2.5's
Hermes-style template and Llama 3.1's, copied from the models' Hugging Face repositories by way
of llama.cpp's models/templates) the way vLLM hands them to transformers, and writes
reference.json for openai_tool_template_test.cpp.

What vLLM does before apply_chat_template, re-stated here from its documented behaviour:
text parts of a message joined with "\\n"; an assistant message's tool_calls[*].function.arguments
(a JSON string in the API) parsed into the value it holds (null or "" -> {}); the request's tools
passed as `tools`, whatever tool_choice is. Rendering is transformers' own
(chat_template_utils._normalize_chat_messages + render_jinja_template, as
tokenizer.apply_chat_template(tokenize=False, add_generation_prompt=True) does); bos/eos are the
tokenizer's of tests/tokenizer_data/fixtures/qwen3 (the tokenizer the C++ test serves with).

Usage: /work/refvenv/bin/python generate_reference.py   (needs transformers and jinja2)
"""
import copy
import json
import os

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", ".."))

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}

CALL_WEATHER = {"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\", \"unit\": \"celsius\"}"}}
CALL_TIME = {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": ""}}

BODIES = {
    "first_turn": {
        "messages": [{"role": "system", "content": "You can call tools."},
                     {"role": "user", "content": "What's the weather in Zürich?"}],
        "tools": [WEATHER, TIME],
    },
    "history_with_tool_result": {
        "messages": [{"role": "user", "content": "What's the weather in Zürich?"},
                     {"role": "assistant", "content": None, "tool_calls": [CALL_WEATHER]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21.5, \"sky\": \"sunny\"}"},
                     {"role": "assistant", "content": "It is 21.5 °C and sunny."},
                     {"role": "user", "content": "And the time?"}],
        "tools": [WEATHER, TIME],
        "tool_choice": "auto",
    },
    "empty_arguments_and_text_parts": {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Time?"}, {"type": "text", "text": "Now."}]},
                     {"role": "assistant", "content": "", "tool_calls": [CALL_TIME]},
                     {"role": "tool", "tool_call_id": "call_2",
                      "content": [{"type": "text", "text": "14:05"}, {"type": "text", "text": "UTC"}]}],
        "tools": [TIME],
        "tool_choice": "required",
    },
    "tool_choice_none_still_renders_tools": {
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [WEATHER],
        "tool_choice": "none",
    },
    "parallel_calls_in_history": {
        "messages": [{"role": "user", "content": "Weather and time in Oslo?"},
                     {"role": "assistant", "content": "Checking both.", "tool_calls": [CALL_WEATHER, CALL_TIME]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "cold"},
                     {"role": "tool", "tool_call_id": "call_2", "content": "noon"}],
        "tools": [WEATHER, TIME],
    },
    "no_tools": {
        "messages": [{"role": "user", "content": "Hello"}],
    },
}


def vllm_messages(messages):
    out = []
    for m in copy.deepcopy(messages):
        if isinstance(m.get("content"), list):
            m["content"] = "\n".join(p["text"] for p in m["content"])
        for call in m.get("tool_calls") or []:
            args = call["function"].get("arguments")
            call["function"]["arguments"] = json.loads(args) if args else {}
        out.append(m)
    return out


def render(source, body, bos, eos):
    conversations = [ctu._normalize_chat_messages(vllm_messages(body["messages"]))]
    rendered, _ = ctu.render_jinja_template(conversations=conversations, tools=body.get("tools"), documents=None,
                                            chat_template=source, add_generation_prompt=True,
                                            bos_token=bos, eos_token=eos)
    return rendered[0]


def main():
    with open(os.path.join(ROOT, "tests/tokenizer_data/fixtures/qwen3/tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    token = lambda t: (t.get("content", "") if isinstance(t, dict) else t) or ""
    bos, eos = token(cfg.get("bos_token")), token(cfg.get("eos_token"))
    cases = []
    for template in ("qwen2_5", "llama3_1"):
        with open(os.path.join(HERE, template, "chat_template.jinja"), encoding="utf-8") as f:
            source = f.read()
        for name, body in BODIES.items():
            case = {"template": template, "body": name}
            try:
                case["output"] = render(source, body, bos, eos)
            except jinja2.exceptions.TemplateError as e:
                case["error"] = str(e)
            cases.append(case)
    ref = {"generator": f"transformers {transformers.__version__}, jinja2 {jinja2.__version__}",
           "bodies": BODIES, "cases": cases}
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
