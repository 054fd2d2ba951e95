"""Render or refuse (issue 9, M3): every value a renderer writes (arguments, tool results,
schema values) is refused with a ValueError naming its field when the parser, at its default
max_depth, could not read the prompt back; one level less renders and reads back."""

import json

import pytest

from gemma4_lark import parse_transcript
from gemma4_lark.messages import read_official, read_omp
from gemma4_lark.parser import DEFAULT_MAX_DEPTH
from gemma4_lark.render import omp
from gemma4_lark.render.official import render_chat


def _nested_list(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _call(levels):  # the call's braces are the first level
    return [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f",
                                                                          "arguments": {"a": _nested_list(levels - 1)}}}]}]


def _result(levels):
    return [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": {}}}]},
            {"role": "tool", "tool_call_id": "a", "content": {"x": _nested_list(levels - 1)}}]


def _legacy_result(levels):  # a list result is written as `value:[...]` inside the block's braces
    return [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_responses": [{"name": "f", "response": _nested_list(levels - 1)}]}]


def _schema(levels):
    schema = {"type": "string", "enum": ["a"]}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return [{"role": "user", "content": "q"}], [{"type": "function", "function": {"name": "f", "description": "d",
                                                                                   "parameters": schema}}]


def _omp_call(levels):
    return [{"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "f",
                                               "arguments": {"a": _nested_list(levels - 1)}}]}]


def _omp_result(levels):
    return [{"role": "assistant", "content": [{"type": "toolCall", "id": "1", "name": "f", "arguments": {}}]},
            {"role": "toolResult", "toolCallId": "1", "toolName": "f",
             "content": [{"type": "text", "text": json.dumps(_nested_list(levels - 1))}]}]


LIMIT = DEFAULT_MAX_DEPTH
CASES = {
    "official call": (lambda n: render_chat(_call(n)), read_official, LIMIT,
                      r"messages\[0\]\.tool_calls\[0\]\.function\.arguments\.a(\[0\])+:"),
    "official result": (lambda n: render_chat(_result(n)), read_official, LIMIT, r"messages\[1\]\.content\.x(\[0\])+:"),
    "official legacy result": (lambda n: render_chat(_legacy_result(n)), read_official, LIMIT,
                               r"messages\[1\]\.tool_responses\[0\]\.content(\[0\])+:"),
    # each schema level is two levels of the value; the enum list is one more
    "official schema": (lambda n: render_chat(*_schema(n)), read_official, (LIMIT - 3) // 2,
                        r"tools\[0\]\.parameters\.properties\.a(\.properties\.a)*\.enum:"),
    "omp call": (lambda n: omp.render_transcript(_omp_call(n)), read_omp, LIMIT,
                 r"messages\[0\]\.content\[0\]\.arguments\.a(\[0\])+:"),
    "omp result": (lambda n: omp.render_transcript(_omp_result(n)), read_omp, LIMIT,
                   r"messages\[1\]\.content\[0\]\.text(\[0\])+:"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_value_one_level_too_deep_is_refused_naming_the_field(case):
    render, read, deepest, field = CASES[case]
    read(render(deepest))  # renders, and reads back at the parser's default
    with pytest.raises(ValueError, match=field + f".* deeper than {DEFAULT_MAX_DEPTH} levels"):
        render(deepest + 1)


def test_omp_tool_call_and_results_refuse_too():
    with pytest.raises(ValueError, match=r"call\.arguments\.a(\[0\])+: .*deeper than"):
        omp.render_tool_call("f", {"a": _nested_list(LIMIT)})
    with pytest.raises(ValueError, match=r"results\[0\]\.text(\[0\])+: .*deeper than"):
        omp.render_tool_results([{"name": "f", "text": json.dumps(_nested_list(LIMIT))}])


def test_a_larger_max_depth_renders_deeper_values():
    levels = 2000
    text = render_chat(_call(levels), max_depth=levels)
    read = read_official(parse_transcript(text, max_depth=levels))
    assert render_chat(**read.render_kwargs(), max_depth=levels) == text  # == on the values would recurse
    text = omp.render_transcript(_omp_call(levels), max_depth=levels)
    assert omp.render_transcript(read_omp(parse_transcript(text, max_depth=levels)), max_depth=levels) == text
