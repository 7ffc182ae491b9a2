#!/usr/bin/env python3
"""Builds model directories in each chat-template layout a checkpoint uses today, loads them with
transformers 5's AutoTokenizer and writes what it renders to reference.json. The C++ tests
(tests/unit/tokenizer/chat_template_source_test.cpp, tests/unit/launcher/cli_chat_layout_test.cpp) rebuild
the same directories from reference.json and the qwen3 fixture and compare byte for byte.

A case's layout:
  files            file name -> template name (the text is templates[name]); "chat_template.json"
                   holds {"chat_template": text}
  config_template  tokenizer_config.json's "chat_template": null (absent), a template name
                   (a string field), or a list of [entry name, template name] pairs
The rest of tokenizer_config.json is the qwen3 fixture's.

Where transformers cannot load the layout itself (its tokenizer never reads chat_template.json;
the processor classes do), the reference is apply_chat_template(chat_template=<that text>), and
"reference" says so. Where two sources disagree, transformers silently takes one
("transformers_picks"); weft refuses with "conflicting template sources" ("weft_error").

Usage: /work/refvenv/bin/python generate_reference.py   (transformers 5.x, jinja2)
"""
import copy
import json
import os
import shutil
import tempfile

import transformers
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "tokenizer_data", "fixtures", "qwen3"))

with open(os.path.join(FIXTURE, "tokenizer_config.json"), encoding="utf-8") as f:
    BASE_CONFIG = json.load(f)

TEMPLATES = {
    "qwen3": BASE_CONFIG["chat_template"],
    "brief": (
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    ),
}

CONVERSATIONS = {
    "multi_turn": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name a prime."},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "Another?"},
    ],
    # What `weft generate --chat --system 'Be brief.' --prompt 'Hi there'` renders.
    "generate_chat": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
    ],
}

CASES = [
    {"name": "jinja_file", "files": {"chat_template.jinja": "qwen3"}, "config_template": None,
     "template_name": None, "conversation": "multi_turn"},
    {"name": "jinja_file_generate", "files": {"chat_template.jinja": "qwen3"}, "config_template": None,
     "template_name": None, "conversation": "generate_chat"},
    {"name": "json_file", "files": {"chat_template.json": "qwen3"}, "config_template": None,
     "template_name": None, "conversation": "multi_turn"},
    {"name": "config_list_named", "files": {},
     "config_template": [["default", "qwen3"], ["brief", "brief"]],
     "template_name": "brief", "conversation": "multi_turn"},
    {"name": "config_list_default", "files": {},
     "config_template": [["default", "qwen3"], ["brief", "brief"]],
     "template_name": None, "conversation": "multi_turn"},
    {"name": "additional_dir_named",
     "files": {"chat_template.jinja": "qwen3", "additional_chat_templates/brief.jinja": "brief"},
     "config_template": None, "template_name": "brief", "conversation": "multi_turn"},
    {"name": "jinja_and_same_config", "files": {"chat_template.jinja": "qwen3"}, "config_template": "qwen3",
     "template_name": None, "conversation": "multi_turn"},
    {"name": "jinja_conflicts_with_config", "files": {"chat_template.jinja": "brief"},
     "config_template": "qwen3", "template_name": None, "conversation": "multi_turn",
     "weft_error": ["conflicting template sources", "chat_template.jinja", "tokenizer_config.json"]},
    {"name": "unknown_name", "files": {}, "config_template": [["default", "qwen3"], ["brief", "brief"]],
     "template_name": "tool_use", "conversation": "multi_turn",
     "weft_error": ["no chat template named 'tool_use'", "brief", "default"]},
]


def build(case, directory):
    os.makedirs(directory)
    shutil.copy(os.path.join(FIXTURE, "tokenizer.json"), directory)
    config = copy.deepcopy(BASE_CONFIG)
    config.pop("chat_template")
    ct = case["config_template"]
    if isinstance(ct, str):
        config["chat_template"] = TEMPLATES[ct]
    elif isinstance(ct, list):
        config["chat_template"] = [{"name": n, "template": TEMPLATES[t]} for n, t in ct]
    with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
    for name, template in case["files"].items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            if name == "chat_template.json":
                json.dump({"chat_template": TEMPLATES[template]}, f, ensure_ascii=False, indent=2)
            else:
                f.write(TEMPLATES[template])


def main():
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            directory = os.path.join(tmp, case["name"])
            build(case, directory)
            tok = AutoTokenizer.from_pretrained(directory)
            messages = CONVERSATIONS[case["conversation"]]
            out = dict(case)
            loaded = tok.chat_template
            out["transformers_names"] = (
                sorted(loaded) if isinstance(loaded, dict) else (["default"] if loaded is not None else []))
            kwargs = {}
            if case["template_name"] is not None:
                kwargs["chat_template"] = case["template_name"]
            if "chat_template.json" in case["files"]:
                # The tokenizer ignores chat_template.json (processing_utils reads it).
                assert loaded is None
                kwargs["chat_template"] = TEMPLATES[case["files"]["chat_template.json"]]
                out["reference"] = "apply_chat_template(chat_template=chat_template.json's text)"
            try:
                text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
            except ValueError as e:
                out["transformers_error"] = str(e)
                cases.append(out)
                continue
            if "weft_error" in case:
                out["transformers_picks"] = text
            else:
                out["output"] = text
                out["ids"] = tok.encode(text, add_special_tokens=False)
            cases.append(out)
    reference = {
        "generated_by": f"generate_reference.py, transformers {transformers.__version__}",
        "templates": TEMPLATES,
        "conversations": CONVERSATIONS,
        "cases": cases,
    }
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(reference, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
