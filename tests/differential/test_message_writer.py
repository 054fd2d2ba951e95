"""OpenAIMessageWriter writes what json.dumps(to_openai_message(...)) gives, byte for byte, while
the events come; `parse --format openai` uses it, in memory that does not grow with the input."""

import io
import json
import sys
import tracemalloc

import pytest
from hypothesis import given, strategies as st

from gemma4_incremental import StreamParser
from gemma4_incremental.message_writer import OpenAIMessageWriter
from gemma4_incremental.openai import to_openai_message
from gemma4_incremental.output import collect
from gemma4_lark import strategies
from gemma4_lark.cli import main

from stream_helpers import counter_ids

D = '<|"|>'
SHAPES = [
    "",
    "Plain text only.",
    "<|channel>thought\n<channel|>",  # an empty thought is still a thought
    '<|channel>thought\nA "quoted"\\ thought\n<channel|>Then <|tool_call>call:f{a:1}<tool_call|>'
    "<|channel>thought\nagain<channel|>",
    "<|tool_call>call:f{a:1,}<tool_call|> and <|tool_call>call:g{b:" + D + "x" + D + "}<tool_call|>",  # a recovery
    "before <|tool_call>call:f{a:[1,2<tool_call|> after <|tool_call>call:g{}<tool_call|>",  # a failure
    "<|tool_call>call:f{a:" + D + "unclosed",
    "<|channel>thought\nunclosed thought",
    "tab\t, newline\n, control \x01, quote \", backslash \\, non-ASCII é 日本 \U0001F600",
]


def _events(text, pieces, **options):
    parser = StreamParser(id_factory=counter_ids(), **options)
    events = [e for piece in pieces for e in parser.feed(piece)]
    return events + parser.flush()


def _written(events):
    out = []
    writer = OpenAIMessageWriter(out.append)
    for event in events:
        writer.add(event)
    writer.close()
    return "".join(out)


def _expected(events):
    return json.dumps(to_openai_message(collect(events)), ensure_ascii=False)


@pytest.mark.parametrize("text", SHAPES)
@pytest.mark.parametrize("start_in_thinking", [False, True])
def test_the_message_is_written_as_json_dumps_writes_it(text, start_in_thinking):
    events = _events(text, [text], start_in_thinking=start_in_thinking)
    assert _written(events) == _expected(events)


@given(st.data())
def test_random_streams_are_written_as_json_dumps_writes_them(data):
    text = data.draw(strategies.canonical_streams() | strategies.canonical_streams().flatmap(strategies.mutated))
    events = _events(text, data.draw(strategies.chunked(text)))
    assert _written(events) == _expected(events)


def test_parts_larger_than_the_spool_go_to_disk_and_come_back_whole(monkeypatch):
    from gemma4_incremental import message_writer
    monkeypatch.setattr(message_writer, "_SPOOL_BYTES", 64)
    monkeypatch.setattr(message_writer, "_COPY_CHARS", 7)
    text = "<|channel>thought\n" + "t" * 500 + "<channel|>" + "<|tool_call>call:f{a:1}<tool_call|>" * 20 + \
        "<|tool_call>call:g{a:[<tool_call|>" * 5
    events = _events(text, [text[i:i + 13] for i in range(0, len(text), 13)])
    assert _written(events) == _expected(events)


def test_discard_writes_nothing():
    out = []
    writer = OpenAIMessageWriter(out.append)
    for event in _events("a<|tool_call>call:f{}<tool_call|>", ["a<|tool_call>call:f{}<tool_call|>"]):
        writer.add(event)
    writer.discard()
    writer.close()  # after discard: nothing
    assert out == []


def test_a_command_that_gives_up_midway_writes_no_half_message(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello <|tool_call>call:f{a:1}<tool_call|> " + b"x" * 200_000 + b"\xff")
    deep = tmp_path / "deep.txt"
    deep.write_text("<|tool_call>call:f{a:" + "{b:" * 3000 + "1" + "}" * 3000 + "}<tool_call|>")
    for path, form, options, needle in ((bad, "openai", [], "not UTF-8"), (bad, "summary", [], "not UTF-8"),
                                        (deep, "summary", ["--max-depth", "100000"], "nests too deeply")):
        code = main(["parse", str(path), "--format", form, *options])
        out, err = capsys.readouterr()
        assert (code, out) == (1, "") and needle in err, (form, path.name, code, err)
    # the message's arguments are a string: however deep the value, the message is written
    assert main(["parse", str(deep), "--format", "openai", "--max-depth", "100000"]) == 0
    assert json.loads(capsys.readouterr().out)["tool_calls"][0]["function"]["name"] == "f"


class _Sink(io.TextIOBase):
    def write(self, text):
        return len(text)


def _peak(path) -> int:
    stdout, sys.stdout = sys.stdout, _Sink()
    tracemalloc.start()
    try:
        assert main(["parse", str(path), "--format", "openai"]) == 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sys.stdout = stdout


def test_parse_format_openai_memory_does_not_grow_with_the_input(tmp_path, monkeypatch):
    # n and 8n calls and as much text: a command that kept the message would hold 8x as much (the
    # spool's threshold lowered, so that what waits is on disk at both sizes)
    from gemma4_incremental import message_writer
    monkeypatch.setattr(message_writer, "_SPOOL_BYTES", 4096)
    unit = "Checking. <|tool_call>call:get_weather{city:" + D + "Paris" + D + ",days:3}<tool_call|>\n"
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    small.write_text(unit * 2_000)
    large.write_text(unit * 16_000)
    _peak(small)  # imports and caches, outside the comparison
    assert _peak(large) < 2 * _peak(small)
