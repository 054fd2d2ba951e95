"""`StreamParser.feed`'s inlined path (a chunk with no `<` and nothing held back: text, thought or
block content as a whole, what `_consume` and `_add_to_block` do, copied inline) against the scan
that `feed` hands every other chunk to.

Differential: for every output and every chunking, a parser fed by `feed` and one whose chunks all
go to the scan (`StreamMachine.scan_chunk`, the rest of `feed`) give the same events (types, texts, spans,
names, arguments, diagnostics, ids), flush included. Chunks of one character and of a few keep
most of them `<`-free, so the inlined path takes them in every state: text, thought, a block's
content, past the block size limit and across the content's compaction.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser
from gemma4_lark import strategies, tokens

D = tokens.STRING_DELIMITER
CALL = "<|tool_call>call:get_weather{location:" + D + "Tokyo, JP" + D + ",days:3,tags:[" + D + "a" + D + "]}<tool_call|>"


def _events(chunks: list[str], *, scan_only: bool, **options) -> list[str]:
    ids = itertools.count()
    parser = StreamParser(id_factory=lambda: f"call_{next(ids)}", **options)
    feed = parser._machine.scan_chunk if scan_only else parser.feed
    events = []
    for chunk in chunks:
        events += feed(chunk)
    events += parser.flush()
    return [repr(e) for e in events]


def _same(chunks: list[str], **options) -> None:
    assert _events(chunks, scan_only=False, **options) == _events(chunks, scan_only=True, **options), chunks


def _cut(text: str, sizes: list[int]) -> list[str]:
    chunks, at = [], 0
    for size in itertools.cycle(sizes):
        if at >= len(text):
            return chunks
        chunks.append(text[at:at + size])
        at += size
    return chunks


_OPTIONS = st.fixed_dictionaries({
    "strict": st.booleans(),
    "parse_thinking": st.sampled_from([True, True, False]),
    "start_in_thinking": st.sampled_from([False, False, True]),
    "max_block_chars": st.sampled_from([4 * 1024 * 1024, 40, 64, 300]),
})


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=_OPTIONS)
def test_canonical_and_mutated_streams(data, options):
    text = data.draw(strategies.canonical_streams())
    if data.draw(st.booleans()):
        text = data.draw(strategies.mutated(text))
    _same(_cut(text, data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=3))), **options)
    _same(data.draw(strategies.chunked(text)), **options)


# Long `<`-free content in each state: the block's pieces compacted as they pile up, its size
# limit reached inside a chunk, whitespace after a block (where a bare call may follow, and where
# an opener cut at the end is markup).
_PIECES = ["hello ", "x" * 50, " ", "\n", "  \n", "a b", "{", "}", ",", ":", "k:1", D, CALL, "<|channel>thought\n",
           "<channel|>", "<|tool_call>call:f{a:", "}<tool_call|>", "call:f{a:1}", "<turn|>", "<", "<|",
           "<|tool_call>", "<|tool_c"]


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=30), options=_OPTIONS,
       sizes=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_streams_of_long_plain_pieces(pieces, options, sizes):
    _same(_cut("".join(pieces), sizes), **options)


@pytest.mark.parametrize("text", [
    CALL + " \n " + "<|tool_c",           # a cut opener after a call and whitespace: markup
    CALL + "\n\n<|tool_call>  ",          # an empty block after a call and whitespace
    CALL + " x <|tool_c",                 # not only whitespace between: text
    "<|channel>thought\nabc<channel|>  call:f{a:1}",  # a bare call after a thought
])
def test_what_follows_a_block_or_a_thought(text):
    for sizes in ([1], [2], [3, 1]):
        _same(_cut(text, sizes))


def test_a_long_block_in_one_character_chunks():
    text = "hi <|tool_call>call:write{content:" + D + "x = 1\n" * 400 + D + "}<tool_call|> bye"
    for limit in (4 * 1024 * 1024, 1000):
        _same(list(text), max_block_chars=limit)
