"""Messages in (docs/serving.md, "Messages in"): what rendering OpenAI's string arguments costs
next to the same arguments as dicts. Prints figures; asserts nothing.

The 20-message conversation of render_bench.py (3 tools, 5 calls and results) with its arguments
as dicts and as the JSON strings OpenAI sends, and one call whose argument string grows from 64 KB
to 1 MB (a long string value with escapes; an object of many members), per profile.
"""

from __future__ import annotations

import copy
import json
import pathlib
import sys
import timeit

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from render_bench import conversation  # noqa: E402

from gemma4_lark.messages import from_openai_messages  # noqa: E402
from gemma4_lark.render.official import render_chat  # noqa: E402
from gemma4_lark.render.omp import render_transcript  # noqa: E402


def stringified(messages):
    out = copy.deepcopy(messages)
    for message in out:
        for call in message.get("tool_calls") or ():
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return out


def best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def one_call(arguments):
    return [{"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"}]


def main() -> None:
    messages, tools = conversation()
    strings = stringified(messages)
    assert render_chat(strings, tools) == render_chat(messages, tools)
    t_dict = best(lambda: render_chat(messages, tools), 200)
    t_str = best(lambda: render_chat(strings, tools), 200)
    print(f"official, 20 messages: dict arguments {t_dict * 1e6:8.1f} µs, string arguments {t_str * 1e6:8.1f} µs"
          f" ({t_str / t_dict:.2f}x)")
    t_dict = best(lambda: render_transcript(from_openai_messages(messages)), 200)
    t_str = best(lambda: render_transcript(from_openai_messages(strings)), 200)
    print(f"omp, 20 messages:      dict arguments {t_dict * 1e6:8.1f} µs, string arguments {t_str * 1e6:8.1f} µs"
          f" ({t_str / t_dict:.2f}x)")
    shapes = {
        "long string value": lambda n: {"text": 'a"\u00e9\n' * (n // 8)},
        "many members": lambda n: {f"k{i}": [i, 1.5, None] for i in range(n // 24)},
    }
    for name, shape in shapes.items():
        previous = None
        for size in (64_000, 256_000, 1_024_000):
            arguments = shape(size)
            text = json.dumps(arguments)
            t_dict = best(lambda: render_chat(one_call(arguments)), 5)
            t_str = best(lambda: render_chat(one_call(text)), 5)
            growth = f", {t_str / previous:.1f}x the time of 1/4 the size" if previous else ""
            print(f"official, one call, {name}, {len(text) / 1e3:7.0f} KB string: dict {t_dict * 1e3:7.2f} ms,"
                  f" string {t_str * 1e3:7.2f} ms{growth}")
            previous = t_str


if __name__ == "__main__":
    sys.exit(main())
