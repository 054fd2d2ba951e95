"""Tool result text is third-party content, and OMP JSON-parses it (issue 9, M4): JSON of any
depth parses as V8's iterative JSON.parse does, with the same values and errors as json.loads;
what nests past the parser's max_depth is refused naming the field, never a RecursionError."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_lark.render import js, omp

_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)


def _loads(text):
    try:
        return json.loads(text, parse_constant=js._reject_constant)
    except ValueError:
        return ValueError


def _iteratively(text):
    try:
        return js.parse_iteratively(text)
    except ValueError:
        return ValueError


@settings(max_examples=300, deadline=None)
@given(_value, st.sampled_from([None, 0, 2]), st.sampled_from([(",", ":"), (", ", ": "), (" ,\n", "\t:\r")]),
       st.integers(0, 40))
def test_the_iterative_parser_agrees_with_json_loads(value, indent, separators, cut):
    text = json.dumps(value, indent=indent, separators=separators)
    assert _iteratively(text) == _loads(text) == value
    # a broken text is an error in both, or the same value
    assert _iteratively(text[:cut]) == _loads(text[:cut])
    assert _iteratively(text[cut:]) == _loads(text[cut:])


@pytest.mark.parametrize("text", ["", " ", "[1,]", '{"a" 1}', '{"a":1,}', "[NaN]", "[-Infinity]", "Infinity", '"abc',
                                  "1 2", "[1e400]", '{"a":1,"a":2}', "-0", "01", "[\"\\ud800\"]", "tru", "[1 2]"])
def test_edge_cases_agree(text):
    assert _iteratively(text) == _loads(text)


def _depth(value):
    levels = 0
    while isinstance(value, list):
        value = value[0] if value else None
        levels += 1
    return levels


def test_deep_json_parses():
    assert _depth(js.parse_json("[" * 5000 + "]" * 5000)) == 5000
    assert _depth(js.parse_json(" [" * 5000 + "1" + "]\n" * 5000)) == 5000


def test_a_deep_json_result_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"^results\[0\]\.text(\[0\])+: .*deeper than 512"):
        omp.render_tool_results([{"name": "f", "text": "[" * 5000 + "]" * 5000}])
    messages = [{"role": "toolResult", "toolCallId": "1", "toolName": "f",
                 "content": [{"type": "text", "text": "[" * 5000 + "]" * 5000}]}]
    with pytest.raises(ValueError, match=r"^messages\[0\]\.content\[0\]\.text(\[0\])+: .*deeper than 512"):
        omp.render_transcript(messages)


def test_deep_text_that_is_not_json_is_text():
    text = "[" * 5000 + "]" * 4999  # one bracket short: JSON.parse fails, OMP sends the text
    assert omp.render_tool_results([{"name": "f", "text": text}]) == (
        "<|tool_response>response:f{output:<|\"|>" + text + "<|\"|>}<tool_response|>")
