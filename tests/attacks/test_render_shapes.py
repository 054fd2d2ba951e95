"""Malformed messages and tools (issue 9, M4/M5): a ValueError (also a TypeError) naming the
field, from one validation helper, never an AttributeError, KeyError or RecursionError from inside
a renderer, nor a field silently left out."""

import json

import pytest

from gemma4_lark.cli import main
from gemma4_lark.render import omp
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.shapes import ShapeError


def _deep(levels):
    value = []
    for _ in range(levels):
        value = [value]
    return value


def _tool(**function):
    return [{"type": "function", "function": {"name": "f", **function}}]


Q = [{"role": "user", "content": "q"}]
OFFICIAL = [
    ([{"role": "user", "content": [5]}], None, r"messages\[0\]\.content\[0\]: must be an object"),
    ([{"role": "user", "content": 5}], None, r"messages\[0\]\.content: must be"),
    ([{"role": "user", "content": [{"type": "text", "text": None}]}], None, r"messages\[0\]\.content\[0\]\.text:"),
    ([{"content": "x"}], None, r"messages\[0\]: has no 'role'"),
    ([{"role": 5}], None, r"messages\[0\]\.role: must be a string"),
    ([5], None, r"messages\[0\]: must be an object"),
    ([{"role": "assistant", "tool_calls": [5]}], None, r"messages\[0\]\.tool_calls\[0\]: must be an object"),
    ([{"role": "assistant", "tool_calls": [{"id": "a"}]}], None, r"messages\[0\]\.tool_calls\[0\]: has no 'function'"),
    ([{"role": "assistant", "tool_calls": [{"id": ["a"], "function": {"name": "f", "arguments": {}}}]}], None,
     r"messages\[0\]\.tool_calls\[0\]\.id:"),
    ([{"role": "assistant", "reasoning_content": _deep(5000)}], None, r"messages\[0\]\.reasoning_content:"),
    ([{"role": "tool", "tool_call_id": {}, "content": "r"}], None, r"messages\[0\]\.tool_call_id:"),
    (Q, _tool(parameters={"type": "object", "properties": [1]}), r"tools\[0\]\.parameters\.properties: must be an object"),
    (Q, _tool(description=_deep(5000)), r"tools\[0\]\.function\.description: must be a string"),  # tools.read_tools
    (Q, _tool(description=None), r"tools\[0\]\.description: must be a string"),
    (Q, _tool(parameters={"type": "object", "properties": {"a": {"type": "string", "description": _deep(5000)}}}),
     r"tools\[0\]\.parameters\.properties\.a\.description: must be a string"),
    (Q, _tool(parameters={"type": "object", "properties": {"a": {"type": _deep(5000)}}}),
     r"tools\[0\]\.parameters\.properties\.a\.type\[0\]:"),
    (Q, _tool(parameters={"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}},
                                                                  "required": [_deep(5000)]}}}),
     r"tools\[0\]\.parameters\.properties\.a\.required\[0\]: must be a string"),
    (Q, [{"type": "function"}], r"tools\[0\]: has neither 'function' nor 'name'"),  # tools.read_tools
]


@pytest.mark.parametrize("messages, tools, field", OFFICIAL, ids=[c[2][:40] for c in OFFICIAL])
def test_official_refuses_a_malformed_shape_naming_the_field(messages, tools, field):
    with pytest.raises(ShapeError, match="^" + field) as info:
        render_chat(messages, tools)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


OMP = [
    # (string content is OpenAI's shape, which render_transcript converts: tests/unit/test_openai_messages_in.py)
    ([{"role": "assistant", "content": 5}], r"messages\[0\]\.content: must be an array"),
    ([{"role": "user", "content": 5}], r"messages\[0\]\.content: must be"),
    ([{"role": "user", "content": [5]}], r"messages\[0\]\.content\[0\]: must be an object"),
    ([{"role": "user", "content": [{"type": "image", "mimeType": _deep(5000)}]}],
     r"messages\[0\]\.content\[0\]\.mimeType: must be a string"),
    ([{"role": "assistant", "content": [{"type": "text", "text": 5}]}], r"messages\[0\]\.content\[0\]\.text:"),
    ([{"role": "assistant", "content": [{"type": "toolCall", "name": "f", "arguments": [1]}]}],
     r"messages\[0\]\.content\[0\]\.arguments: must be an object"),
    ([{"role": "toolResult", "toolName": 5, "content": []}], r"messages\[0\]\.toolName: must be a string"),
    ([{"content": []}], r"messages\[0\]: has no 'role'"),
]


@pytest.mark.parametrize("messages, field", OMP, ids=[c[1][:40] for c in OMP])
def test_omp_refuses_a_malformed_shape_naming_the_field(messages, field):
    with pytest.raises(ShapeError, match="^" + field):
        omp.render_transcript(messages)


def test_omp_tools_and_results_refuse_non_string_text():
    with pytest.raises(ShapeError, match=r"^tools\[0\]\.description: must be a string"):
        omp.render_tool_inventory([{"name": "f", "description": _deep(5000)}])
    with pytest.raises(ShapeError, match=r"^tools\[0\]\.parameters\.properties\.a\.description: must be a string"):
        omp.render_tool_inventory([{"name": "f", "parameters": {"type": "object", "properties": {
            "a": {"type": "string", "description": _deep(5000)}}}}])
    with pytest.raises(ShapeError, match=r"^results\[0\]\.text: must be a string"):
        omp.render_tool_results([{"name": "f", "text": 5}])


def test_well_formed_shapes_still_render():
    messages = [{"role": "system", "content": [{"type": "text", "text": "s"}]}, {"role": "user", "content": None},
                {"role": "assistant", "content": None, "reasoning_content": None,
                 "tool_calls": [{"id": 1, "function": {"name": "f", "arguments": None}}]},
                {"role": "tool", "tool_call_id": 1, "name": None, "content": {"a": [1]}}]
    tools = _tool(description="d", parameters={"type": "object", "properties": {
        "a": {"type": ["string", "null"], "description": "x"}}, "required": ["a"]})
    assert "response:f{a:[1]}" in render_chat(messages, tools)


def test_the_cli_prints_the_field(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"role": "user", "content": [5]}]))
    assert main(["render", str(path)]) == 1
    assert "messages[0].content[0]: must be an object, not an integer" in capsys.readouterr().err
