"""Renderer benchmark (issue: renderers). Prints figures; asserts nothing.

The official profile against the July 2026 template rendered by jinja2, for a 20-message
conversation with 3 tools, measured in the same run; and the omp profile on the same
conversation. Needs ../shared/data/gemma4-templates and jinja2.
"""

from __future__ import annotations

import pathlib
import sys
import timeit

from gemma4_lark.messages import from_openai_messages
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.omp import render_transcript

TEMPLATE = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "gemma4-templates" / "gemma4-e2b-2026-07.jinja"


def conversation():
    tools = [{"type": "function", "function": {
        "name": f"tool_{i}", "description": f"Tool number {i}.",
        "parameters": {"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string", "description": "A path"},
            "mode": {"type": "string", "enum": ["read", "write"]},
            "lines": {"type": "array", "items": {"type": "integer"}},
            "opts": {"type": "object", "properties": {"force": {"type": "boolean"}}}}}}} for i in range(3)]
    messages = [{"role": "system", "content": "You are a careful coding agent."}]
    while len(messages) < 20:
        n = len(messages)
        messages.append({"role": "user", "content": f"Please look at file {n} and fix the bug on line {n * 3}."})
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"c{n}", "type": "function", "function": {
            "name": f"tool_{n % 3}", "arguments": {"path": f"src/mod_{n}.py", "mode": "read", "lines": [n, n + 1], "opts": {"force": False}}}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"def f():\n    return {n}  # the bug\n"})
        messages.append({"role": "assistant", "content": f"The bug is on line {n * 3}: f returns {n}."})
    return messages[:20], tools


def main() -> None:
    messages, tools = conversation()
    ours = render_chat(messages, tools, add_generation_prompt=True)
    t_ours = min(timeit.repeat(lambda: render_chat(messages, tools, add_generation_prompt=True), number=200, repeat=7)) / 200
    print(f"official profile, 20 messages, 3 tools: {t_ours * 1e6:9.1f} µs ({len(ours)} characters)")
    omp_messages = from_openai_messages(messages)
    t_omp = min(timeit.repeat(lambda: render_transcript(omp_messages), number=200, repeat=7)) / 200
    print(f"omp profile, same conversation:         {t_omp * 1e6:9.1f} µs")
    if not TEMPLATE.exists():
        print("jinja2 comparison skipped: template not found at", TEMPLATE)
        return
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = lambda m: (_ for _ in ()).throw(jinja2.TemplateError(m))
    template = env.from_string(TEMPLATE.read_text(encoding="utf-8"))
    kwargs = {"messages": messages, "tools": tools, "bos_token": "<bos>", "add_generation_prompt": True}
    theirs = template.render(**kwargs)
    t_jinja = min(timeit.repeat(lambda: template.render(**kwargs), number=20, repeat=7)) / 20
    print(f"jinja2 template (compiled once):         {t_jinja * 1e6:9.1f} µs")
    print(f"identical output: {ours == theirs}; speed-up: {t_jinja / t_ours:.1f}x")


if __name__ == "__main__":
    sys.exit(main())
