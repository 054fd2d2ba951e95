"""Attacks on OpenAIStream from the issue-10 review: each test failed before its fix."""

import json
import tracemalloc

from gemma4_incremental import StreamParser
from gemma4_incremental.openai import OpenAIStream


def _stream_peak(text: str, size: int, **parser_options) -> tuple[int, list]:
    stream = OpenAIStream(StreamParser(**parser_options), stream_arguments=True)
    fragments = []
    tracemalloc.start()
    try:
        for i in range(0, len(text), size):  # chunks dropped as a server would send them
            for chunk in stream.feed(text[i:i + size]):
                for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                    fragments.append(delta)
        for chunk in stream.flush():
            for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                fragments.append(delta)
        return tracemalloc.get_traced_memory()[1], fragments
    finally:
        tracemalloc.stop()


def test_a_string_argument_past_max_block_chars_keeps_memory_bounded_and_stops_streaming():
    # The parser keeps at most max_block_chars of a block; the fast path for string content held
    # everything it skipped the parser with (and streamed it), so memory grew with the block.
    make = lambda n: '<|tool_call>call:write{text:<|"|>' + "x" * n + '<|"|>}<tool_call|>'  # noqa: E731
    _stream_peak(make(10), 4, max_block_chars=1000)  # tables built on first use
    small, large = make(50_000), make(200_000)
    peak_small, fragments_small = _stream_peak(small, 4, max_block_chars=1000)
    peak_large, fragments_large = _stream_peak(large, 4, max_block_chars=1000)
    assert (peak_large - peak_small) / (len(large) - len(small)) < 0.5
    for fragments in (fragments_small, fragments_large):
        sent = "".join(d["function"]["arguments"] for d in fragments)
        assert len(sent) <= 1000 and "error" in fragments[-1]  # void: the block failed
        try:
            json.loads(sent)
        except ValueError:
            pass
        else:
            raise AssertionError("complete JSON for a failed call")
