"""The scan's one-step read of a whole call block (`block_rest` in incremental/_block_jump.py), against
the scan that reads a block delimiter by delimiter.

Differential: for every output and every chunking, the events with the one-step read are the
events without it (same types, texts, spans, names, arguments, diagnostics). It must also be
taken on the common blocks (or it is dead code), and stay linear where it fails to match. The
jump is asked for by name, so with GEMMA4_LARK_ACCELERATORS=0 it is compared with the plain scan.
"""

from __future__ import annotations

import contextlib
import itertools

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_incremental._block_jump as stream
from gemma4_incremental._machine import StreamMachine
from gemma4_incremental import StreamParser
from gemma4_lark import fastpath, strategies, tokens
from gemma4_lark.possessive import POSSESSIVE
from conftest import needs_accelerators
from timing import Guard, guard_tests

D = tokens.STRING_DELIMITER
CALL = '<|tool_call>call:get_weather{location:' + D + 'Tokyo, JP' + D + ',days:3,tags:[' + D + 'a' + D + ']}<tool_call|>'


def _events(text: str, *, jump: bool, sizes=None, **options):
    ids = itertools.count()
    parser = StreamParser(id_factory=lambda: f"call_{next(ids)}", **options)
    if jump:  # (the parser leaves it out when the accelerators are off)
        parser._machine.block_rest = stream.block_rest(options.get("strict", False))
    saved = stream.BLOCK_JUMP_MIN
    stream.BLOCK_JUMP_MIN = 0 if jump else 10**18  # (0: tried on short chunks too)
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
        stream.BLOCK_JUMP_MIN = saved
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
    text = data.draw(strategies.canonical_streams())
    if data.draw(st.booleans()):
        text = data.draw(strategies.mutated(text))
    sizes = data.draw(st.none() | st.lists(st.integers(1, 200), min_size=1, max_size=3))
    _same(text, sizes, strict=strict)


@settings(max_examples=150)
@given(text=strategies.grammar_text("model_output"))
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
@needs_accelerators("the stream does not jump")
def test_a_whole_block_is_read_in_one_step(monkeypatch):
    markers = []
    real = StreamMachine.transition
    monkeypatch.setattr(StreamMachine, "transition", lambda self, m, *a: markers.append(m) or real(self, m, *a))
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


# ------------------------------------------------------------ the long rest, found by memchr ----
# A rest of marker_search.SHORT characters or more is read by `block_rest_end`'s loop (the `<`s
# one by one) until it is no longer ahead, then by the pattern: both must give the pattern's end.
_LONG = ["x" * 300, "y<" * 40, "é" * 200, ":" + D + "x" * 300 + D, "[ " + D + "y<" * 40 + D + "]", "a" + D + "é" * 200 + D]


@contextlib.contextmanager
def _short(size: int):
    saved = stream.marker_search.SHORT
    stream.marker_search.SHORT = size
    try:
        yield
    finally:
        stream.marker_search.SHORT = saved


# A block's rest as members: a key, a value start, blanks (more than the look-behind reads, at
# times), a string of long or hostile content, or a stray piece; closed or not.
_CONTENT = st.lists(st.sampled_from(["x" * 300, "é" * 200, "y<" * 40, "<", "<tool_call|>", "<turn|>", "<|tool_call>", "a",
                                      "\n", "b" * 1000]), max_size=4)
_MEMBER = st.tuples(st.sampled_from(["", "k", "k:", "k:[", "k:{a:", "("]), st.sampled_from([""] * 4 + [" ", "\n\t", " " * 4, " " * 5]),
                    _CONTENT, st.sampled_from([""] * 12 + ["1", "x<y", "<eos>", D, "<|tool_response>"]))
_RESTS = st.lists(_MEMBER, max_size=12).map(
    lambda members: ",".join(key + blanks + D + "".join(content) + D + stray for key, blanks, content, stray in members))


def _loop_against_pattern(text: str, i: int, strict: bool, every_text: bool) -> None:
    pattern = stream.block_rest(strict)
    expected = pattern.match(text, i)
    with _short(0 if every_text else stream.marker_search.SHORT):
        end, delimiters = stream.block_rest_end(pattern, strict, text, i)
    assert end == (expected.end() if expected is not None else -1), (text, i)
    if delimiters is not None:  # handed on only with an end, and then every delimiter before it
        assert end != -1
        found, at = [], text.find(D, i, end)
        while at != -1:
            found.append(at)
            at = text.find(D, at + len(D), end)
        assert delimiters == found, text


@pytest.mark.skipif(not POSSESSIVE, reason="Python 3.10's re has no possessive quantifiers: the scan reads every block")
@settings(max_examples=400)
@given(pieces=st.lists(st.sampled_from(_PIECES + _INSIDE + _LONG), max_size=60), strict=st.booleans(),
       data=st.data(), every_text=st.booleans())
def test_the_loop_ends_where_the_pattern_ends(pieces, strict, data, every_text):
    text = "".join(pieces)
    _loop_against_pattern(text, data.draw(st.integers(0, len(text))), strict, every_text)


@pytest.mark.skipif(not POSSESSIVE, reason="Python 3.10's re has no possessive quantifiers: the scan reads every block")
@settings(max_examples=400)
@given(rest=_RESTS, strict=st.booleans(), every_text=st.booleans(), closed=st.sampled_from([True] * 4 + [False]))
def test_the_loop_ends_where_the_pattern_ends_on_block_rests(rest, strict, every_text, closed):
    text = "call:f{" + rest + ("}<tool_call|>" if closed else "")
    _loop_against_pattern(text, len("call:f{"), strict, every_text)


@pytest.mark.skipif(not POSSESSIVE, reason="Python 3.10's re has no possessive quantifiers: the scan reads every block")
@settings(max_examples=300)
@given(blocks=_BLOCKS, sizes=st.none() | st.lists(st.integers(1, 400), min_size=1, max_size=3), strict=st.booleans(),
       long=st.lists(st.sampled_from(_LONG), max_size=3))
def test_blocks_read_by_the_loop(blocks, sizes, strict, long):
    """Every block read by the loop (SHORT = 0), its delimiters handed to the decoders: the same
    events as the scan's."""
    text = "".join(before + "<|tool_call>call:f{a:" + D + "".join(long) + D + "," + "".join(inside) + end
                   for before, inside, end in blocks)
    with _short(0):
        _same(text, sizes, strict=strict)


@needs_accelerators("the stream does not jump, nor take the fast path")
def test_a_long_block_hands_its_delimiters_to_the_fast_path(monkeypatch):
    """A 20 KB call in one chunk: read by the loop, decoded by the fast path at the delimiters
    the scan found (the block is not split again), to the same call."""
    seen = []
    real = fastpath.parse_call
    monkeypatch.setattr(fastpath, "parse_call", lambda *a, **k: seen.append(k.get("delimiters")) or real(*a, **k))
    code = ("def f(x):\n    return x > 3 and {'a': [x]}\n" * 25 + "# x < y\n") * 16  # a `<` a KB: the loop's
    text = "hi <|tool_call>call:write{path:" + D + "a.py" + D + ",content:" + D + code + D + ",n:2}<tool_call|> bye"
    [call] = [e for e in StreamParser().feed(text) if e.type == "tool_call_end"]
    assert call.arguments == {"path": "a.py", "content": code, "n": 2}
    opener = text.index("<|tool_call>")
    assert seen == [[k - opener for k in range(len(text)) if text.startswith(D, k)]]


@pytest.mark.parametrize("where", ["bare word", "string", "both", "last word"])
def test_functiongemma_escape_in_a_long_block(where):
    """`<escape>` in a bare word is reported (`functiongemma-escape`), in a string it is text:
    the same whether the block's delimiters came from the loop or not."""
    long = "x" * 2000
    word = "ab<escape>cd" if where in ("bare word", "both") else "abcd"
    inside = "<escape>" if where in ("string", "both") else ""
    last = "z<escape>" if where == "last word" else "z"
    text = ("<|tool_call>call:f{a:" + D + long + inside + D + ",b:" + word + ",c:" + D + long + D + ",d:" + last
            + "}<tool_call|>")
    [call] = [e for e in StreamParser().feed(text) if e.type == "tool_call_end"]
    codes = [d.code for d in call.diagnostics]
    assert codes == (["functiongemma-escape"] if where != "string" else []), codes
    _same(text)
    with _short(0):
        _same(text)
