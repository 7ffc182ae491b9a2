#!/usr/bin/env python3
"""Renders the chat templates in this directory with Hugging Face transformers' own Jinja2 setup
and writes reference.json, which chat_template_test.cpp compares against byte for byte.

Rendering goes through transformers.utils.chat_template_utils exactly as
tokenizer.apply_chat_template(tokenize=False) does (also with continue_final_message=True, which
cuts the output after the final message): _normalize_chat_messages (drops None-valued
keys) then render_jinja_template (ImmutableSandboxedEnvironment(trim_blocks=True,
lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols]), HF's tojson, raise_exception,
strftime_now, dict, namespace). strftime_now's clock is pinned to FIXED_NOW so outputs are stable.

Usage: python3 generate_reference.py   (from any directory; needs transformers and jinja2)
"""
import datetime as _dt
import json
import os

import jinja2
import transformers
import transformers.utils.chat_template_utils as ctu

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = _dt.datetime(2024, 7, 26, 14, 5, 9)


class _FixedDatetime(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return FIXED_NOW


ctu.datetime = _FixedDatetime


def token_content(tok):
    if isinstance(tok, dict):
        return tok.get("content", "")
    return tok or ""


def load_templates():
    templates = {}
    for name in ("qwen3", "deepseek_v3"):
        with open(os.path.join(HERE, f"{name}_tokenizer_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        templates[name] = {
            "file": f"{name}_tokenizer_config.json",
            "source": cfg["chat_template"],
            "bos_token": token_content(cfg.get("bos_token")),
            "eos_token": token_content(cfg.get("eos_token")),
        }
    with open(os.path.join(HERE, "llama2_tokenizer_config.json"), encoding="utf-8") as f:
        llama2 = json.load(f)
    special = {
        "llama2": (token_content(llama2.get("bos_token")), token_content(llama2.get("eos_token"))),
        "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
        "mistral": ("<s>", "</s>"),
    }
    for fname in sorted(os.listdir(os.path.join(HERE, "templates"))):
        name = fname[: -len(".jinja")]
        with open(os.path.join(HERE, "templates", fname), encoding="utf-8") as f:
            source = f.read()
        bos, eos = special.get(name, ("<s>", "</s>"))
        templates[name] = {"file": f"templates/{fname}", "source": source, "bos_token": bos, "eos_token": eos}
    return templates


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "  Get the current weather for a city.  ",
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
TIME_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}

CONVERSATIONS = {
    "system_user": (
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        {},
    ),
    "multi_turn": (
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello there!"},
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "Tell me a joke."},
            {"role": "assistant", "content": "Why did the chicken cross the road? To get to the other side."},
            {"role": "user", "content": "Another one, please?"},
        ],
        {},
    ),
    "unicode": (
        [
            {"role": "user", "content": "Grüße aus Zürich! 你好，世界 🌍 — «ça va?» Ωμέγα ﷺ"},
            {"role": "assistant", "content": "Привет! こんにちは 👋🏽 \"quoted\" and 'single' \\ backslash\ttab"},
            {"role": "user", "content": "ÉCOLE ß İstanbul ǅ"},
        ],
        {},
    ),
    "whitespace": (
        [
            {"role": "system", "content": "  \n System with spaces \n\n"},
            {"role": "user", "content": "\n\n   leading and trailing   \t\n"},
            {"role": "assistant", "content": "   answer with spaces   "},
            {"role": "user", "content": " "},
        ],
        {},
    ),
    "tool_calls": (
        [
            {"role": "system", "content": "You can call tools."},
            {"role": "user", "content": "What's the weather in Zürich?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}},
                    }
                ],
            },
            {"role": "tool", "name": "get_weather", "content": "{\"temperature\": 21.5, \"sky\": \"sunny\"}"},
            {"role": "assistant", "content": "It is 21.5 °C and sunny in Zürich."},
            {"role": "user", "content": "Thanks!"},
        ],
        {"tools": [WEATHER_TOOL, TIME_TOOL]},
    ),
    "tool_calls_null_content": (
        [
            {"role": "user", "content": "Time and weather in Oslo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                    {"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
                ],
            },
            {"role": "tool", "content": "12:00"},
            {"role": "tool", "content": "rain"},
        ],
        {"tools": [TIME_TOOL]},
    ),
    "reasoning": (
        [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "<think>\nsimple arithmetic\n</think>\n\n4"},
            {"role": "user", "content": "3+3?"},
            {"role": "assistant", "content": "6", "reasoning_content": "add three and three"},
            {"role": "user", "content": "And 4+4?"},
        ],
        {"enable_thinking": False},
    ),
    "content_parts": (
        [
            {"role": "user", "content": [{"type": "text", "text": "Describe this:"}, {"type": "image"}, {"type": "text", "text": "Briefly."}]},
            {"role": "assistant", "content": "A cat."},
        ],
        {},
    ),
    "not_alternating": (
        [
            {"role": "user", "content": "first"},
            {"role": "user", "content": "second"},
        ],
        {"date_string": "01 Jan 2025"},
    ),
    # Assistant prefills for continue_final_message (the other conversations are continued too).
    "prefill": (
        [
            {"role": "system", "content": "Answer in verse."},
            {"role": "user", "content": "Write a haiku about rain."},
            {"role": "assistant", "content": "Soft rain on the roof, "},
        ],
        {},
    ),
    "prefill_unicode": (
        [
            {"role": "user", "content": "Say good morning."},
            {"role": "assistant", "content": "  Guten Morgen, 你好 🌍\u3000\n"},
        ],
        {},
    ),
    "prefill_parts": (
        [
            {"role": "user", "content": "Count."},
            {"role": "assistant", "content": [{"type": "text", "text": "One,"}, {"type": "text", "text": "two, "}, {"type": "image"}]},
        ],
        {},
    ),
    "prefill_empty": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": ""},
        ],
        {},
    ),
    "prefill_no_content": (
        [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": None},
        ],
        {},
    ),
}


def render(source, messages, add_generation_prompt, bos, eos, extra, continue_final_message=False):
    conversations = [ctu._normalize_chat_messages(messages)]
    kwargs = {"bos_token": bos, "eos_token": eos}
    kwargs.update({k: v for k, v in extra.items() if k not in ("tools", "documents")})
    rendered, _ = ctu.render_jinja_template(
        conversations=conversations,
        tools=extra.get("tools"),
        documents=extra.get("documents"),
        chat_template=source,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        **kwargs,
    )
    return rendered[0]


def outcome(fn):
    try:
        return {"output": fn()}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error_type": "TemplateSyntaxError", "error": str(e)}
    except jinja2.exceptions.UndefinedError as e:
        return {"error_type": "UndefinedError", "error": str(e)}
    except jinja2.exceptions.SecurityError as e:
        return {"error_type": "SecurityError", "error": str(e)}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception() raises a bare TemplateError carrying the template's message.
        return {"error_type": "TemplateError", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - any Python error is a render failure to reproduce
        return {"error_type": type(e).__name__, "error": str(e)}


# Small templates for single features, rendered over SNIPPET_CONTEXT.
SNIPPET_CONTEXT = {
    "s": "  Hello, World  ",
    "u": "héllo wörld",
    "n": 7,
    "f": 2.5,
    "l": [3, 1, 2],
    "d": {"b": 2, "a": 1, "c": {"x": [1, 2]}},
    "users": [{"name": "ann", "age": 30, "admin": True}, {"name": "Bob", "age": 25, "admin": False}, {"name": "cy", "age": 35}],
    "none_value": None,
    "empty": "",
}

SNIPPETS = [
    "{{ s }}|{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s | trim }}|{{ s.strip(' H') }}|{{ s | trim(' Hd') }}",
    "{{ u | upper }}|{{ u.upper() }}|{{ u | length }}|{{ u[1] }}|{{ u[-1] }}|{{ u[1:4] }}|{{ u[::2] }}|{{ u | title }}|{{ u.title() }}|{{ u | capitalize }}",
    "{{ s.split(',') }}|{{ s.split() }}|{{ 'a,b,,c'.split(',', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ '  a  b  '.split(None, 1) }}|{{ '  a  b  '.rsplit(None, 1) }}",
    "{{ s.replace('l', 'L') }}|{{ s.replace('l', 'L', 1) }}|{{ s | replace('o', '0') }}|{{ 'abc'.replace('', '-') }}|{{ s.find('World') }}|{{ u.find('w') }}|{{ s.count('l') }}|{{ u.rfind('l') }}",
    "{{ s.startswith('  He') }}|{{ s.endswith(('x', '  ')) }}|{{ 'abc'.upper().lower() }}|{{ '123'.isdigit() }}|{{ 'ab1'.isalpha() }}|{{ 'Ab'.islower() }}",
    "{{ n + 1 }}|{{ n - 10 }}|{{ n * f }}|{{ n / 2 }}|{{ n // 2 }}|{{ n % 3 }}|{{ -n // 2 }}|{{ -n % 3 }}|{{ n ** 2 }}|{{ 2 ** -2 }}|{{ f // 1 }}|{{ f % 1 }}|{{ -f }}|{{ 1e20 }}|{{ 1.5e-7 }}|{{ 100.0 }}|{{ 1/3 }}",
    "{{ l | sort }}|{{ l | sort(reverse=true) }}|{{ l | reverse | list }}|{{ l[::-1] }}|{{ l[1:] }}|{{ l[-1] }}|{{ l | length }}|{{ l | first }}|{{ l | last }}|{{ l | sum }}|{{ l | join('-') }}|{{ 2 in l }}|{{ 5 not in l }}|{{ l + [4] }}|{{ l * 2 }}",
    "{{ d | dictsort }}|{{ d | dictsort(reverse=true) }}|{{ d.keys() | list }}|{{ d.values() | list }}|{{ d.items() | list }}|{{ d.get('a') }}|{{ d.get('z') }}|{{ d.get('z', 0) }}|{{ d['c']['x'][1] }}|{{ d.c.x.0 }}|{{ 'a' in d }}",
    "{{ users | map(attribute='name') | join(',') }}|{{ users | selectattr('admin') | map(attribute='name') | list }}|{{ users | rejectattr('admin') | map(attribute='name') | list }}|{{ users | selectattr('age', 'gt', 26) | list | length }}|{{ users | sort(attribute='name') | map(attribute='name') | join }}|{{ users | sort(attribute='age', reverse=true) | map(attribute='age') | list }}|{{ users | map(attribute='admin', default='?') | list }}",
    "{{ users | selectattr('name', 'equalto', 'Bob') | first }}|{{ users | max(attribute='age') }}|{{ users | unique(attribute='admin') | list | length }}|{{ ['B', 'a', 'b'] | unique | list }}|{{ ['B', 'a', 'b'] | sort(case_sensitive=true) }}|{{ ['x', 'y'] | map('upper') | list }}",
    "{{ undefined_var }}|{{ undefined_var is defined }}|{{ undefined_var | default('dflt') }}|{{ none_value | default('dflt') }}|{{ empty | default('dflt', true) }}|{{ none_value }}|{{ none_value is none }}|{{ undefined_var | length }}|{% for x in undefined_var %}x{% endfor %}|{{ d.missing }}|{{ d.missing is defined }}",
    "{{ undefined_var.attr }}",
    "{{ undefined_var + 1 }}",
    "{{ 'a' + 1 }}",
    "{{ n | tojson }}|{{ f | tojson }}|{{ l | tojson }}|{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ users[0] | tojson(sort_keys=true) }}|{{ 'é\"<>&\\u2028' | tojson }}|{{ none_value | tojson }}|{{ d | tojson(separators=(',', ':')) }}",
    "{{ undefined_var | tojson }}",
    "{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i * 10 %}{{ x }},{% endfor %}{{ x }}",
    "{% set ns = namespace(total=0, names=[]) %}{% for u in users %}{% set ns.total = ns.total + u.age %}{% set ns.names = ns.names + [u.name] %}{% endfor %}{{ ns.total }} {{ ns.names }}",
    "{% for u in users if u.age > 26 %}{{ loop.index }}:{{ u.name }}/{{ loop.length }}{% if not loop.last %}, {% endif %}{% else %}none{% endfor %}",
    "{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %}",
    "{% macro m(a, b=2) %}[{{ a }},{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=4) }}{% macro r(k) %}{% if k > 0 %}{{ k }}{{ r(k - 1) }}{% endif %}{% endmacro %}{{ r(4) }}",
    "{% macro outer() %}<{{ caller('x') }}>{% endmacro %}{% call(v) outer() %}got {{ v }}{% endcall %}",
    "{{ raise_exception('Custom failure: ' ~ n) }}",
    "{% if n > 5 %}{{ raise_exception('n too big') }}{% endif %}ok",
    "{{ strftime_now('%Y-%m-%d %H:%M:%S %a %b %d %j') }}",
    "{{ [1, 2].append(3) }}",
    "{{ range(100001) | length }}",
    "{{ n is odd }} {{ n is even }} {{ n is divisibleby 7 }} {{ f is float }} {{ n is integer }} {{ true is boolean }} {{ l is sequence }} {{ d is mapping }} {{ s is string }} {{ n is number }} {{ none_value is none }} {{ l is iterable }} {{ n is eq 7 }} {{ n is ne 7 }} {{ n is lt 8 }} {{ n is ge 7 }} {{ 2 is in l }} {{ true is true }} {{ 0 is false }}",
    "{{ 'a' ~ 1 ~ none ~ [1] }} {{ (1, 2) }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }} {{ {'a': 'it\\'s'} }} {{ [\"x'y\", 'q\"'] }} {{ 1 if n else 2 }} {{ 0 or 'z' }} {{ 1 and 0 }} {{ none or [] }}",
    "{{ '%s-%05.1f-%x-%r' % ('a', 3.14159, 255, 'b') }} {{ '%(k)s!' % {'k': 'v'} }} {{ '%d%%' | format(50) }}",
    "{{ n | string ~ 'x' }} {{ '12' | int * 2 }} {{ ' 3.9 ' | float }} {{ '0x1A' | int(0, 16) }} {{ 3.99 | int }} {{ 'abc' | float }} {{ -2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 1.5 | round(0, 'floor') }} {{ 1.2 | round(0, 'ceil') }} {{ -4 | abs }}",
    "{{ 'a\nb\nc' | indent }}|{{ 'a\n\nb' | indent(3, first=true, blank=true) }}|{{ 'x' | center(7) }}|{{ 'one two  three' | wordcount }}|{{ '<b>' | safe }}|{{ '<b>\"&' | escape }}",
    "{%- for i in range(3) -%}\n  {{ i }}\n{%- endfor %}\n  {% if true %}\n    yes\n  {% endif %}\n{# comment #}\n  {#- c2 -#}\n  end {{ 'x' -}}   \n  tail\n",
    "line1\n    {% if true %}\n    kept\n    {%+ if true %}plus{% endif %}\n  {{ 'var' }}  {% if true %}inline{% endif %}\n{% raw %}  {{ raw }}\n{% endraw %}\ndone\n{% endif %}\n",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }} {% set t = (1, 'x') %}{{ t[1] }} {{ [1, [2, [3]]][1][1][0] }} {{ 'abc'[5] is defined }} {{ l[10] is undefined }}",
    "{{ foo(1) }}",
    "{{ n() }}",
    "{{ l | nosuchfilter }}",
    "{% for i in range(3) %}{% for j in range(3) %}{% if j > i %}{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %}",
    "{{ 'Hello {name}, you are {age}'.format(name='Ann', age=30) }} {{ ', '.join(['a', 'b']) }} {{ 'x'.join('abc') }}",
    "{{ 10 / 0 }}",
    "{{ '\\x41\\u00e9\\n\\t\\\\\\'\\d' }}|{{ \"dq'\" }}|{{ 'a' 'b' }}|{{ 1_000 + 0.5e1 }}|{{ 0.1 | tojson }}|{{ [1e-7, 1e16, -0.0, 123456789012, 2.0**60] | tojson }}|{{ 2 ** 62 }}",
    "{% for x in ['a', 'b', 'c'] %}{{ loop.cycle('<', '>') }}{{ loop.revindex0 }}{{ loop.depth }}{% endfor %}|{% generation %}gen {{ n }}{% endgeneration %}|{{ none is sameas none }}{{ 1 is sameas 1 }}",
    "{%- set x = 1 -%}\n  A  {#- trimmed -#}  B\n{%- if true %}  C{% endif -%}\n  D {{- ' E ' -}} F\n",
    "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}|{{ dict([('k', 1)], z=2) }}|{{ undefined_var | items | list }}|{{ 'b' in {'b': 1} }}|{{ {'a': 1}['a'] }}|{{ d['zz'] is defined }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% macro inner() %}[{{ caller() }}]{% endmacro %}{% call wrap('b') %}{% call inner() %}deep {{ n }}{% endcall %}{% endcall %}",
    "{{ users | groupbyx }}",
    "{{ l | map('string') | map('int') | sum }}|{{ users | map(attribute='age') | select('gt', 26) | list }}|{{ [0, 1, '', 'x', none] | reject | list }}|{{ users | selectattr('admin', 'defined') | list | length }}|{{ users | rejectattr('admin', 'undefined') | map(attribute='name') | join('/') }}",
    "{{ s | length }}{{ s | count }}{{ [] | first is defined }}{{ '' | last is undefined }}|{{ 'abc' | list }}|{{ d | list }}|{{ (d | length) > 2 }}|{{ l | join }}{{ [1, 'a', none] | join(',') }}",
    "{{ 'Ab Cd'.swapcase() if false else 'ok' }}|{{ '  x  '.strip() ~ '|' ~ 'xxhixx'.strip('x') }}|{{ 'a.b.c'.split('.', -1) }}|{{ 'abc'.startswith('') }}|{{ 'Hello'.lower().capitalize() }}|{{ 'ǆemal ǅ'.title() }}|{{ 'ﬁne straße'.upper() }}|{{ 'ΟΔΟΣ Σ'.lower() }}",
    "{% for i in range(3) %}{% set outer = i %}{% endfor %}{{ outer is defined }}|{% if true %}{% set inner = 5 %}{% endif %}{{ inner }}|{% with %}{% set w = 1 %}{% endwith %}{{ w is defined }}",
    "{{ messages_missing[0] }}",
    "{{ l[1:2:0] }}",
    "{% for x in 5 %}{% endfor %}",
    "{{ n | round(1) }} {{ f | round }} {{ (7 / 3) | round(3) }} {{ 1.0 / 3 * 3 }} {{ 10 // 3.0 }} {{ -1 ** 2 }} {{ 2 * 3 ** 2 }} {{ 1 + 2 * 3 - 4 / 2 }} {{ (1 + 2) * 3 }} {{ 'ab' ~ (1 + 2) }} {{ -n|abs }}",
]


def main():
    templates = load_templates()
    cases = []
    for tname, t in templates.items():
        for cname, (messages, extra) in CONVERSATIONS.items():
            for agp in (False, True):
                res = outcome(lambda: render(t["source"], messages, agp, t["bos_token"], t["eos_token"], extra))
                cases.append(
                    {
                        "template": tname,
                        "conversation": cname,
                        "add_generation_prompt": agp,
                        **res,
                    }
                )
    # apply_chat_template(continue_final_message=True), which requires add_generation_prompt=False.
    continue_cases = []
    for tname, t in templates.items():
        for cname, (messages, extra) in CONVERSATIONS.items():
            res = outcome(lambda: render(t["source"], messages, False, t["bos_token"], t["eos_token"], extra,
                                         continue_final_message=True))
            continue_cases.append({"template": tname, "conversation": cname, **res})
    snippets = []
    for src in SNIPPETS:
        res = outcome(lambda: ctu._compile_jinja_template(src).render(**SNIPPET_CONTEXT))
        snippets.append({"template": src, **res})
    out = {
        "generator": "generate_reference.py",
        "transformers_version": transformers.__version__,
        "jinja2_version": jinja2.__version__,
        "fixed_now": FIXED_NOW.isoformat(),
        "templates": {k: {kk: vv for kk, vv in v.items() if kk != "source"} for k, v in templates.items()},
        "conversations": {k: {"messages": m, "extra": e} for k, (m, e) in CONVERSATIONS.items()},
        "cases": cases,
        "continue_final_message_cases": continue_cases,
        "snippet_context": SNIPPET_CONTEXT,
        "snippets": snippets,
    }
    with open(os.path.join(HERE, "reference.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum(1 for c in cases if "error" in c)
    n_cont_err = sum(1 for c in continue_cases if "error" in c)
    print(f"{len(cases)} template cases ({n_err} errors), {len(continue_cases)} continue_final_message cases "
          f"({n_cont_err} errors), {len(snippets)} snippets")


if __name__ == "__main__":
    main()
