"""OpenAIStream(stream_arguments=True) end to end stays linear in every shape of call (complexity
guards of tests/timing.py: sizes compared within one run, 16x apart, never an absolute time), and
its shortcut for a string argument's content sends exactly what the argument stream would."""

import json

from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.arguments import ArgumentStream
from gemma4_incremental.openai import OpenAIStream, to_openai_message

from stream_helpers import counter_ids
import pytest

from timing import Guard, guard_tests

D = '<|"|>'
OPEN = "<|tool_call>call:f"
CLOSE = "<tool_call|>"

# name -> (the stream text for size n, the delta size)
SHAPES = {
    # a huge string in 1-character deltas: plain content, then with `<` and half delimiters in it
    "long plain string, 1-char deltas": (lambda n: OPEN + "{a:" + D + "abc def\n" * (n // 8) + D + "}" + CLOSE, 1),
    "long string, 1-char deltas": (lambda n: OPEN + "{a:" + D + "x<y <|z " * (n // 8) + D + "}" + CLOSE, 1),
    "many tiny members": (lambda n: OPEN + "{" + ",".join(f"k{i}:{i % 10}" for i in range(n // 6)) + "}" + CLOSE, 4),
    "many short strings": (lambda n: OPEN + "{a:[" + ",".join([D + "ab" + D] * (n // 10)) + "]}" + CLOSE, 4),
    # nesting as deep as the parser allows (max_depth 512), again and again
    "deep nesting": (lambda n: OPEN + "{a:[" + ",".join(["[" * 200 + "1" + "]" * 200] * (n // 402)) + "]}" + CLOSE, 4),
    "many calls": (lambda n: "ok " + (OPEN + "{a:" + D + "x" + D + ",b:[1,2.5]}" + CLOSE) * (n // 40), 4),
}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _stream_all(pieces):
    stream = OpenAIStream(StreamParser(), stream_arguments=True, completion_id="c", created=0)
    for piece in pieces:
        stream.feed(piece)
    stream.flush()


GUARDS = [Guard(name, _stream_all, lambda n, make=make, size=size: _pieces(make(n), size), 2_000, 40_000)
          for name, (make, size) in SHAPES.items()]


test_streaming_arguments_end_to_end_is_linear_in_every_shape, test_each_streaming_guard_can_fail = guard_tests(GUARDS)


def test_every_shape_accumulates_to_the_message():
    """(The shapes above are streams the guard times: each is what the whole output says.)"""
    for name, (make, size) in SHAPES.items():
        text = make(2_000)
        stream = OpenAIStream(StreamParser(id_factory=counter_ids()), stream_arguments=True)
        pieces = [text[i:i + size] for i in range(0, len(text), size)]
        chunks = [c for p in pieces for c in stream.feed(p)] + stream.flush()
        fragments: dict = {}
        for chunk in chunks:
            for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                fragments.setdefault(delta["index"], []).append(delta["function"]["arguments"])
        calls = to_openai_message(parse_output(text, id_factory=counter_ids())).get("tool_calls", [])
        assert [json.loads("".join(f)) for f in fragments.values()] == [
            json.loads(c["function"]["arguments"]) for c in calls], name
        assert ["".join(f) for f in fragments.values()] == [c["function"]["arguments"] for c in calls], name


# --- feed_content: the shortcut is the same as feed --------------------------------------------------
_content = st.lists(st.sampled_from(['a', '文', '"', '\\', '\n', '\x00', '<', '|', '>', ' ', D]), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["{a:" + D, "{a:[1," + D, "{" + D + "k" + D + ":" + D, "{a:" + D + "x<|", "{a:1"]),
       st.lists(_content, max_size=12))
def test_feed_content_sends_what_feed_sends_and_leaves_the_same_state(prefix, pieces):
    by_content, by_feed = ArgumentStream(), ArgumentStream()
    by_content.feed(prefix)
    by_feed.feed(prefix)
    for piece in pieces:
        fragment = by_content.feed_content(piece)
        if fragment is None:  # not content as a whole: nothing was read
            fragment = by_content.feed(piece)
        assert fragment == by_feed.feed(piece)
        assert by_content._buffer == by_feed._buffer and by_content._stack == by_feed._stack
    assert by_content.sent == by_feed.sent


def test_feed_content_takes_only_a_string_values_content():
    stream = ArgumentStream()
    assert stream.feed_content('{a:') is None  # not in a string
    stream.feed('{a:' + D)
    assert stream.feed_content('x "y"\n<b') == 'x \\"y\\"\\n<b'
    assert stream.feed_content('c' + D) is None  # the string ends: the grammar reads on
    assert stream.feed_content('c<|"') == 'c'  # a possible half delimiter is held back...
    assert stream.feed_content('x') is None    # ...and read with what follows
    assert stream.feed('|>,b:1}') == '", "b": 1'
    keyed = ArgumentStream()
    keyed.feed('{' + D)
    assert keyed.feed_content('key') is None  # a key's text is kept to check repeats: feed reads it
