"""The scan's one-step read of a whole call block (`_block_rest` in incremental/parser.py), against
the scan that reads a block delimiter by delimiter.

Differential: for every output and every chunking, the events with the one-step read are the
events without it (same types, texts, spans, names, arguments, diagnostics). It must also be
taken on the common blocks (or it is dead code), and stay linear where it fails to match.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_incremental.parser as stream
from gemma4_incremental import StreamParser
from gemma4_lark import fuzz, tokens
from gemma4_lark.possessive import POSSESSIVE
from timing import Guard, guard_tests

D = tokens.STRING_DELIMITER
CALL = '<|tool_call>call:get_weather{location:' + D + 'Tokyo, JP' + D + ',days:3,tags:[' + D + 'a' + D + ']}<tool_call|>'


def _events(text: str, *, jump: bool, sizes=None, **options):
    ids = itertools.count()
    parser = StreamParser(id_factory=lambda: f"call_{next(ids)}", **options)
    saved = stream._BLOCK_JUMP_MIN
    stream._BLOCK_JUMP_MIN = 0 if jump else 10**18  # (0: tried on short chunks too)
    try:
        events = []
        if sizes is None:
            events += parser.feed(text)
        else:
            at = 0
            for size in itertools.cycle(sizes):
                if at >= len(text):
                    break
                events += parser.feed(text[at:at + size])
                at += size
        events += parser.flush()
    finally:
        stream._BLOCK_JUMP_MIN = saved
    return [repr(e) for e in events]


def _same(text: str, sizes=None, **options) -> None:
    assert _events(text, jump=True, sizes=sizes, **options) == _events(text, jump=False, sizes=sizes, **options), text


# The pieces where the one-step read and the scan could part ways: every marker, a delimiter
# after a value start and after none, whitespace between, the characters a string may follow.
_PIECES = [D, D, D, "<|tool_call>", "<tool_call|>", "<turn|>", "<eos>", "<|tool_response>", "<|channel>thought\n",
           "<channel|>", "<", "<|", "|>", "<tool_call", "call:f{", "{", "}", "[", "]", ",", ":", "(", "=", " ",
           "\n", "\t", "a", "b c", "1", "x<y", "<|x|>", "<|\"|", "é",
           # and what a block is made of, so that whole blocks come up often
           "<|tool_call>call:f{", "a:" + D, "1" + D, D + "}", D + ",", "}<tool_call|>", "k:1,"]


@settings(max_examples=600)
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=40), strict=st.booleans(),
       sizes=st.none() | st.lists(st.integers(1, 80), min_size=1, max_size=4),
       max_block_chars=st.sampled_from([4 * 1024 * 1024, 40, 64]))
def test_hostile_outputs(pieces, strict, sizes, max_block_chars):
    _same("".join(pieces), sizes, strict=strict, max_block_chars=max_block_chars)


_INSIDE = [D, D, "1", "a", ":", ",", "{", "}", "[", "]", " ", "\n", "<tool_call|>", "<turn|>", "<|tool_call>", "x<y", "<"]
_BLOCKS = st.lists(st.tuples(st.sampled_from(["", "hi ", "\n", "<|channel>thought\nt<channel|>"]),
                             st.lists(st.sampled_from(_INSIDE), max_size=16),
                             st.sampled_from(["}<tool_call|>", "<tool_call|>", "}", ""])),
                   min_size=1, max_size=4)


@settings(max_examples=600)
@given(blocks=_BLOCKS, sizes=st.lists(st.integers(1, 80), min_size=1, max_size=3))
def test_blocks_of_block_pieces(blocks, sizes):
    text = "".join(before + "<|tool_call>call:f{" + "".join(inside) + end for before, inside, end in blocks)
    _same(text)  # whole, where the one-step read is tried on every block
    _same(text, strict=True)
    _same(text, sizes)


@settings(max_examples=300)
@given(data=st.data(), strict=st.booleans())
def test_canonical_and_mutated_streams(data, strict):
    text = data.draw(fuzz.canonical_streams())
    if data.draw(st.booleans()):
        text = data.draw(fuzz.mutated(text))
    sizes = data.draw(st.none() | st.lists(st.integers(1, 200), min_size=1, max_size=3))
    _same(text, sizes, strict=strict)


@settings(max_examples=150)
@given(text=fuzz.grammar_text("model_output"))
def test_grammar_generated_outputs(text):
    _same(text)
    _same(text, strict=True)


@pytest.mark.parametrize("text", [
    "hi " + CALL + " and " + CALL,
    CALL.replace("location:", "location: \n"),  # whitespace between the value start and the string
    CALL.replace("location:", "location:" + " " * 5),  # more than the one-step read looks back over
    CALL.replace(",days:3", ",days:3" + D + "x" + D),  # a stray delimiter: the scan's, not the jump's
    "<|tool_call>call:f{a:1" + D + "}<tool_call|>after" + D + "}<tool_call|>",  # one that would hide a closer
    CALL.replace("<tool_call|>", "<turn|>"),  # ended unclosed
    CALL[:-3],  # cut off
    "<|tool_call>call:f{a:" + D + "<tool_call|><turn|>" + D + "}<tool_call|>",  # markers inside a string
])
@pytest.mark.parametrize("strict", [False, True])
def test_edges(text, strict):
    _same(text, strict=strict)
    _same(text, [7], strict=strict)
    _same(text, [33, 1], strict=strict)


@pytest.mark.skipif(not POSSESSIVE, reason="Python 3.10's re has no possessive quantifiers: the scan reads every block")
def test_a_whole_block_is_read_in_one_step(monkeypatch):
    markers = []
    real = StreamParser._on_marker
    monkeypatch.setattr(StreamParser, "_on_marker", lambda self, m, *a: markers.append(m) or real(self, m, *a))
    StreamParser().feed("hi " + CALL + CALL)
    assert markers == ["<|tool_call>", "<|tool_call>"]  # the openers only: not the 10 delimiters and closers


def _failing_block(n: int) -> str:
    """One block of n strings that the one-step read gives up on at its end (a stray delimiter)."""
    return "<|tool_call>call:f{" + ",".join(f"k{i}:{D}v{D}" for i in range(n)) + f"x{D}}}<tool_call|>"


def _closed_block(n: int) -> str:
    return "<|tool_call>call:f{" + ",".join(f"k{i}:{D}v{D}" for i in range(n)) + "}<tool_call|>"


def _unclosed_blocks(n: int) -> str:
    """n blocks, each ended by `<turn|>` before its closer; one closed block at the end."""
    return ("<|tool_call>call:f{a:" + D + "v" + D + ",b:1<turn|>") * n + CALL


def _spaced(n: int) -> str:
    """Long whitespace before each delimiter, none after a value start: read back at each."""
    return "<|tool_call>call:f{a" + (" " * 50 + D + "v" + D) * n + "}<tool_call|>"


_GUARDS = [
    Guard("a block given up at its end", lambda text: StreamParser().feed(text), _failing_block, 256),
    Guard("unclosed blocks, one closed at the end", lambda text: StreamParser().feed(text), _unclosed_blocks, 64),
    Guard("whitespace before stray delimiters", lambda text: StreamParser().feed(text), _spaced, 64),
    Guard("a block given up at its end, strict", lambda text: StreamParser(strict=True).feed(text),
          lambda n: _failing_block(n).replace("}<tool_call|>", "<turn|>"), 256),
    Guard("a closed block of many strings", lambda text: StreamParser().feed(text), _closed_block, 256),
]
test_time_grows_linearly, test_each_guard_can_fail = guard_tests(_GUARDS, twins=_GUARDS[:1])
