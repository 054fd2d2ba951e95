"""Streaming arguments keeps memory proportional to the open call, whatever the chunking."""

import tracemalloc

from gemma4_incremental import StreamParser
from gemma4_incremental.openai import OpenAIStream
from gemma4_incremental.pieces import Pieces


def _peak(block: str) -> int:
    stream = OpenAIStream(StreamParser(), stream_arguments=True)
    tracemalloc.start()
    try:
        for ch in block:  # one character a chunk, chunks dropped as a server would send them
            stream.feed(ch)
        stream.flush()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_one_character_chunks_of_a_long_string_argument_cost_a_few_bytes_each():
    # A fragment went out per chunk, and the stream kept a str object for each (about 50 bytes a
    # character, 33-46x the block): the sent JSON is now kept compactly.
    make = lambda n: '<|tool_call>call:write{text:<|"|>' + "文" * n + '<|"|>}<tool_call|>'  # noqa: E731
    _peak(make(10))  # the parser's tables and lexers are built on first use: not the block's cost
    small, large = make(20_000), make(80_000)
    peak_small, peak_large = _peak(small), _peak(large)
    # CJK text is 4 bytes a character as a str; the parser's own block, the sent JSON and the final
    # arguments each hold a copy: well under 8x the block once the constant is taken out
    assert (peak_large - peak_small) / (len(large) - len(small)) < 8 * 4


def test_pieces_join_what_was_appended():
    pieces = Pieces()
    expected = []
    for i in range(1000):
        pieces.append(str(i))
        expected.append(str(i))
    assert pieces.text() == "".join(expected)
