"""`<|tool_call>:NAME{...}<tool_call|>`: a real opener whose head lacks its `call` keyword (OVMS v2).
Lenient and NAME declared: a recovered call (`missing-call-keyword`); otherwise, or strict, a
`tool_call_error` with the block kept (docs/leniency.md#recoveries; issue 30, section 2)."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import collect, parse_output
from gemma4_lark import tokens
from gemma4_lark.recovery import decode_calls

from stream_helpers import assert_tiles, counter_ids, run, split_every

D = tokens.STRING_DELIMITER


def _tool(name):
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}}}}


TOOLS = [_tool("question"), _tool("get_time")]


def _read(text, **options):
    """(calls, error codes, content) of `text`, the same at every chunking and in parse_output."""
    seen = None
    for size in (1, 4, 1 << 20):
        events = run(split_every(text, size), **options)
        assert_tiles(events, text)
        parsed = collect(events)
        got = ([(c.name, c.arguments, [d.code for d in c.diagnostics]) for c in parsed.calls],
               [e.code for e in parsed.errors], parsed.text)
        assert seen is None or got == seen
        seen = got
    whole = parse_output(text, id_factory=counter_ids(), **options)
    assert [(c.name, c.arguments) for c in whole.calls] == [(name, args) for name, args, _ in seen[0]]
    return seen


def test_a_declared_name_is_a_call():
    calls, errors, text = _read(f"Let me ask. <|tool_call>:question{{q:{D}Which one?{D},n:2}}<tool_call|>", tools=TOOLS)
    assert calls == [("question", {"q": "Which one?", "n": 2}, ["syntax", "missing-call-keyword"])]
    assert errors == [] and text == "Let me ask. "


def test_the_diagnostic_spans_the_colon():
    raw = "<|tool_call> :question{n:1}<tool_call|>"
    (_, _, decoded), = decode_calls(raw, declared={"question"})
    (found,) = [d for d in decoded.diagnostics if d.code == "missing-call-keyword"]
    assert raw[found.pos:found.end] == ":"


@pytest.mark.parametrize("text, options", [
    ("<|tool_call>:unknown_tool{n:1}<tool_call|>", {"tools": TOOLS}),        # not declared
    ("<|tool_call>:question{n:1}<tool_call|>", {}),                           # no tools
    ("<|tool_call>:question{n:1}<tool_call|>", {"tools": TOOLS, "strict": True}),
    ("<|tool_call>:question(n=1)<tool_call|>", {"tools": TOOLS}),             # only the grammar's `{`
    ("<|tool_call>question{n:1}<tool_call|>", {"tools": TOOLS}),              # no colon either
])
def test_otherwise_an_error_that_keeps_the_block(text, options):
    calls, errors, content = _read(text, **options)
    assert calls == [] and errors == ["syntax"]
    assert parse_output(text, **options).errors[0].raw == text


def test_a_bare_block_is_not_read_so():
    # without its opener `:question{...}` is prose: only a real `<|tool_call>` vouches for it
    calls, errors, text = _read(":question{n:1}", tools=TOOLS)
    assert calls == [] and errors == [] and text == ":question{n:1}"


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["question", "get_time", "other", "call", "questions"]), st.sampled_from(["", " ", "\n"]),
       st.integers(0, 99), st.integers(1, 7))
def test_only_a_declared_name_is_recovered(name, space, n, size):
    text = f"a <|tool_call>{space}:{name}{{n:{n}}}<tool_call|> b"
    events = run(split_every(text, size), tools=TOOLS)
    assert_tiles(events, text)
    parsed = collect(events)
    if name in ("question", "get_time"):
        assert [(c.name, c.arguments) for c in parsed.calls] == [(name, {"n": n})] and not parsed.errors
        assert parsed.calls[0].recovered and "missing-call-keyword" in [d.code for d in parsed.calls[0].diagnostics]
    else:
        assert parsed.calls == [] and [e.code for e in parsed.errors] == ["syntax"]
    assert parsed.text == "a  b"
