"""A string never closed, at the end of the stream (docs/leniency.md#unclosed-strings): the block
ends where the model ended it, the model's next calls are calls, and no recovered call carries a
control token in an argument (issue 30, section 2)."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import ToolCallEnd, ToolCallError, collect
from gemma4_lark import strategies, tokens
from gemma4_lark.render.safety import CONTROL

from stream_helpers import assert_tiles, run, split_every

D = tokens.STRING_DELIMITER


def _call(name, value):
    return f"<|tool_call>call:{name}{{x:{value}}}<tool_call|>"


BAD = f"<|tool_call>call:bad{{x:{D}unterminated"


def _outcomes(text, sizes=(1, 3, 7, 1 << 20), **options):
    """(calls as (name, arguments), errors as (code, raw)) of `text`, the same at every chunking."""
    seen = None
    for size in sizes:
        events = run(split_every(text, size), **options)
        assert_tiles(events, text)
        parsed = collect(events)
        got = ([(c.name, c.arguments) for c in parsed.calls], [(e.code, e.raw) for e in parsed.errors], parsed.text)
        assert seen is None or got == seen, (size, got, seen)
        seen = got
    return seen


def test_the_next_real_call_ends_the_unclosed_string():
    calls, errors, text = _outcomes(f"Before {BAD}{_call('good', 2)} after")
    assert calls == [("good", {"x": 2})]
    assert errors == [("unclosed", BAD)]
    assert text == "Before  after"


def test_no_call_around_the_broken_one_is_lost():
    stream = _call("a", 1) + BAD + _call("b", 2) + "\n" + _call("c", 3)
    calls, errors, _ = _outcomes(stream)
    assert calls == [("a", {"x": 1}), ("b", {"x": 2}), ("c", {"x": 3})]
    assert [code for code, _ in errors] == ["unclosed"]


def test_an_opener_without_a_head_does_not_end_the_string():
    # `<|tool_call>` and prose: no call follows it, so the string's text is not cut there; the
    # reading that would carry the control token is no call
    calls, errors, _ = _outcomes(f"<|tool_call>call:w{{x:{D}a <|tool_call> b}}<tool_call|>")
    assert calls == [] and [code for code, _ in errors] == ["syntax"]


def test_a_closed_string_keeps_what_it_holds():
    # the grammar's string: any control token but the delimiter is its text, calls included
    inner = f"see {_call('quoted', 1)} and <turn|>"
    calls, errors, _ = _outcomes(f"<|tool_call>call:w{{x:{D}{inner}{D}}}<tool_call|>")
    assert calls == [("w", {"x": inner})] and errors == []


def test_strict_mode_reads_the_grammar():
    # strict: the string runs to the end of the stream, and the block is one error
    calls, errors, _ = _outcomes(f"{BAD}{_call('good', 2)}", strict=True)
    assert calls == [] and [code for code, _ in errors] == ["unclosed"]


@pytest.mark.parametrize("inside", ["a<turn|>b", "a<eos>", "<|tool_response>x", "a<|channel>b"])
def test_no_recovered_call_carries_a_control_token(inside):
    calls, errors, _ = _outcomes(f"<|tool_call>call:w{{x:{D}{inside}}}<tool_call|>")
    assert calls == [] and [code for code, _ in errors] == ["syntax"]


@settings(max_examples=60, deadline=None)
@given(before=st.lists(strategies.canonical_calls(), max_size=2), after=st.lists(strategies.canonical_calls(), min_size=1, max_size=3),
       prose=st.sampled_from(["", " ", "\n", "tail"]), size=st.integers(1, 40))
def test_property_calls_after_an_unclosed_string_are_calls(before, after, prose, size):
    """Whatever calls stand before and after a block whose string never closes, every one of them is
    a call, the broken block is one error, and no recovered call holds a control token."""
    text = "".join(before) + BAD + "".join(after) + prose
    events = run(split_every(text, size))
    assert_tiles(events, text)
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert len(ends) == len(before) + len(after)
    assert [e.code for e in events if isinstance(e, ToolCallError)] == ["unclosed"]
    for event in ends:
        if event.recovered:
            assert not CONTROL.search(repr(event.arguments)), event
