"""A str subclass is a str at every entry point that takes model output (issue 30, section 6):
`parse_call` always took one; `StreamParser.feed`, `parse_output` (its express path too) and
`OpenAIStream.feed` refused it. Each reads it once as a str of Python's own type, so no event,
argument or chunk carries the subclass; anything that is no str is still a TypeError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st
from lark import Token

from gemma4_incremental import StreamParser, collect, parse_output
from gemma4_incremental import output as output_module
from gemma4_incremental.integrations.base import ThoughtGate, ToolCallDeltas
from gemma4_incremental.openai import OpenAIStream
from gemma4_lark import parse_call
from stream_helpers import counter_ids

OUTPUT = ('<|channel>thought\nPlan.<channel|>Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,'
          'days:3}<tool_call|>done')


class Text(str):
    """A caller's own str, whose __str__ says something else: only its characters count."""

    def __str__(self):
        return "not the text"


def subclasses(text):
    return [Text(text), Token("OUTPUT", text)]


def all_plain(value):
    """Whether no str inside `value` (events, their fields, chunks) is of a subclass."""
    if isinstance(value, str):
        return type(value) is str
    if isinstance(value, dict):
        return all(all_plain(k) and all_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(all_plain(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return all(all_plain(getattr(value, name)) for name in value.__dataclass_fields__)
    return True


def fed(chunks, **options):
    parser = StreamParser(id_factory=counter_ids(), **options)
    return [e for chunk in chunks for e in parser.feed(chunk)] + parser.flush()


def test_parse_call_takes_a_subclass_and_so_does_everything_else():
    assert parse_call(Text('<|tool_call>call:f{a:1}<tool_call|>')) == parse_call('<|tool_call>call:f{a:1}<tool_call|>')


@settings(max_examples=60, deadline=None)
@given(st.integers(1, len(OUTPUT)))
def test_feed_reads_a_subclass_as_its_text(size):
    chunks = [OUTPUT[i:i + size] for i in range(0, len(OUTPUT), size)]
    want = fed(chunks)
    for make in (Text, lambda c: Token("OUTPUT", c)):
        got = fed([make(c) for c in chunks])
        assert got == want and all_plain(got)


def test_parse_output_takes_a_subclass_on_its_express_path(monkeypatch):
    want = parse_output(OUTPUT, id_factory=counter_ids())
    assert want.calls and want.thinking
    seen = []
    express_events = output_module.express.events
    monkeypatch.setattr(output_module.express, "events",
                        lambda parser, text: seen.append(type(text)) or express_events(parser, text))
    for text in subclasses(OUTPUT):
        got = parse_output(text, id_factory=counter_ids())
        assert got == want and all_plain(got.events)
    assert seen == [str, str]  # the express path was asked, with a str


def test_token_mode_entry_points_take_a_subclass():
    from fake_tokenizer import TOK, deltas

    steps = deltas(TOK.encode(OUTPUT), 3)
    want = []
    parser = StreamParser.for_tokenizer(TOK, id_factory=counter_ids())
    for text, ids in steps:
        want += parser.feed(text, token_ids=ids)
    want += parser.flush()
    for make in (Text, lambda c: Token("OUTPUT", c)):
        parser = StreamParser.for_tokenizer(TOK, id_factory=counter_ids())
        got = []
        for n, (text, ids) in enumerate(steps):
            if n % 2:
                got += parser.feed(make(text), token_ids=ids)
            else:
                aligned, marks = parser.align(make(text), ids)
                got += parser.feed_aligned(make(aligned), marks)
        got += parser.flush()
        assert got == want and all_plain(got)


@pytest.mark.parametrize("stream_arguments", [False, True])
def test_the_openai_stream_takes_a_subclass(stream_arguments):
    def chunks(make):
        stream = OpenAIStream(StreamParser(id_factory=counter_ids()), stream_arguments=stream_arguments,
                              completion_id="c", created=0)
        return [c for i in range(0, len(OUTPUT), 4) for c in stream.feed(make(OUTPUT[i:i + 4]))] + stream.flush()

    want = chunks(str)
    for make in (Text, lambda c: Token("OUTPUT", c)):
        got = chunks(make)
        assert got == want and all_plain(got)
        assert json.dumps(got) == json.dumps(want)
    deltas = ToolCallDeltas(StreamParser(id_factory=counter_ids()))
    assert all_plain([deltas.feed(Text(OUTPUT)), deltas.finish()])


def test_the_thought_gate_takes_a_subclass():
    for make in (str, Text):
        gate = ThoughtGate()
        reasoning, content, forward = gate.feed(make(OUTPUT))
        assert (reasoning, content, forward) == ("Plan.", "", OUTPUT[OUTPUT.index("Checking"):])
        assert all_plain([reasoning, content, forward])


@pytest.mark.parametrize("value", [b"text", None, 3, ["text"]])
def test_what_is_no_str_is_still_a_type_error(value):
    entries = [
        lambda: StreamParser().feed(value),
        lambda: StreamParser().feed_aligned(value, None),
        lambda: parse_output(value),
        lambda: OpenAIStream(StreamParser()).feed(value),
        lambda: ThoughtGate().feed(value),
    ]
    for entry in entries:
        with pytest.raises(TypeError, match=f"must be str, not {type(value).__name__}"):
            entry()
    from fake_tokenizer import TOK

    with pytest.raises(TypeError, match="must be str"):
        StreamParser.for_tokenizer(TOK).feed(value, token_ids=[1])
    with pytest.raises(TypeError, match="must be str"):
        StreamParser.for_tokenizer(TOK).align(value, [1])
    assert collect(fed([])).events == []
