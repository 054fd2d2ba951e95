"""The differential: the hand-written oracle (`gemma4_lark.reference.ReferenceScanner`) against
`StreamParser(strict=True)`, event for event (`gemma4_lark.fuzz.comparable`), on every family of
streams the fuzz strategies draw, each at several chunkings: whole, one character at a time, cut
at random points, in pieces of a fixed small size. docs/fuzzing.md says what it proves.

The counts here keep the file short; `make fuzz` runs the same property (`agreement.ReferenceScanner`)
for as long as it is given.
"""

import itertools
import sys

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser
from gemma4_lark import fuzz, strategies, tokens
from gemma4_lark.reference import ReferenceScanner

from conftest import shared_cases, REPO

sys.path.insert(0, str(REPO))  # fuzz/ is a tool of the repo
from fuzz import strategies as hostile  # noqa: E402
from fuzz.properties import check_reference_agrees, reference_options  # noqa: E402


DEFAULTS = {"strict": True, "parse_thinking": True, "start_in_thinking": False, "max_block_chars": 4 * 1024 * 1024,
            "max_depth": 512}


def events(cls, chunks, options):
    numbers = itertools.count()
    parser = cls(id_factory=lambda: f"call_{next(numbers)}", **options)
    out = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    out.extend(parser.flush())
    return out


def chunkings(text):
    """Whole, 1-character chunks, and a drawn chunking (random cuts or a fixed small size)."""
    return st.tuples(st.just([text]), st.just(list(text) or [""]), hostile.chunkings(text))


def assert_agree(text, data, small=False):
    options = data.draw(reference_options(small))
    for chunks in data.draw(chunkings(text)):
        check_reference_agrees((text, chunks, options))


@settings(max_examples=40)
@given(strategies.canonical_streams(), st.data())
def test_canonical_streams(text, data):
    assert_agree(text, data)


@settings(max_examples=60)
@given(strategies.edge_streams(), st.data())
def test_edge_streams(text, data):
    assert_agree(text, data)


@settings(max_examples=50)
@given(strategies.canonical_streams().flatmap(strategies.mutated), st.data())
def test_mutated_streams(text, data):
    assert_agree(text, data)


@settings(max_examples=50)
@given(hostile.hostile_streams(), st.data())
def test_hostile_streams(text, data):
    assert_agree(text, data)


@settings(max_examples=60)
@given(strategies.bounded_streams(), st.data())
def test_streams_at_their_bounds(text, data):
    """Few small blocks against small `max_block_chars` and `max_depth`: `too-large` and
    `too-deep` at and around the limits."""
    assert_agree(text, data, small=True)


@pytest.mark.parametrize("case", shared_cases("realworld-cases.jsonl"), ids=lambda c: c["id"] if c else "absent")
def test_real_world_outputs(case):
    text = case["raw"]
    for chunks in ([text], list(text)):
        for thinking in (False, True):
            check_reference_agrees((text, chunks, {**DEFAULTS, "start_in_thinking": thinking}))


# Streams where the two could part: each at every cut into two chunks, and in 1-character chunks.
CUT_EVERYWHERE = [
    "<|channel>t<tool_call|>hought\nx<channel|>",
    "\n\n<|tool_call><tool_call|>call:run_cmd{}<tool_call|>",
    "<|tool_call>call:f{a:1,a:2}<tool_call|>",
    "<|tool_call>call:f{a:x<escape>y}<tool_call|><|tool_call>call:g{a:<|\"|>}<tool_call|><|\"|>}<tool_call|>",
    "<|channel>thought<|channel>thought\n<|channel><channel|><channel|><|channel>x<tool_call|>",
    "a<|tool_call>call:f{a:1}<turn|>b<|tool_call>call:g{}<eos><|tool_response><|tool_c",
    "<|tool_call>call:f{a:\ud800}<tool_call|>\udfff<|channel>thought\ud83d<channel|>",
    "<|tool_call>call:" + " " * 237 + "f{}<tool_call|><|tool_call>call:" + " " * 238 + "f{}<tool_call|>",
]


@pytest.mark.parametrize("text", CUT_EVERYWHERE)
def test_every_cut(text):
    for options in ({}, {"start_in_thinking": True}, {"parse_thinking": False}, {"max_block_chars": 30, "max_depth": 1}):
        options = {**DEFAULTS, **options}
        check_reference_agrees((text, list(text), options))
        for cut in range(len(text) + 1):
            check_reference_agrees((text, [text[:cut], text[cut:]], options))


def test_the_differential_can_fail():
    """The comparison is not vacuous: it sees a wrong argument type, a wrong code, a missed stray
    marker and a shifted span."""
    base = events(StreamParser, ["<|tool_call>call:f{a:1}<tool_call|>x<channel|>"], {"strict": True})
    assert fuzz.comparable(base) == fuzz.comparable(
        events(ReferenceScanner, ["<|tool_call>call:f{a:1}<tool_call|>x<channel|>"], {}))
    end = base[1]
    for changed in (
        [base[0], type(end)(end.id, end.index, end.name, {"a": 1.0}, end.raw, end.diagnostics, end.recovered, end.span)],
        [base[0], type(end)(end.id, end.index, end.name, {"a": True}, end.raw, end.diagnostics, end.recovered, end.span)],
        base[:2] + [type(base[2])("x<channel|>", (base[2].span[0], base[2].span[1] + 11))],
        base[:3] + [type(base[3])(base[3].markup, (base[3].span[0] + 1, base[3].span[1]))],
    ):
        assert fuzz.comparable(changed) != fuzz.comparable(base)


# --- where the two disagreed: StreamParser was wrong, and is fixed ----------------------------------
@pytest.mark.parametrize("text", [tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_OPEN + tokens.TURN_CLOSE])
def test_a_lone_opener_longer_than_the_limit_is_too_large(text):
    """docs/streaming.md, "Bounds and cost": a block over `max_block_chars` is a `tool_call_error`
    (`too-large`, docs/schema.md: "exceeds max_block_chars"), whose raw holds the first
    `max_block_chars` characters. `<|tool_call>` alone is 12."""
    [error] = [e for e in events(StreamParser, [text], {"strict": True, "max_block_chars": 5})
               if e.type == "tool_call_error"]
    assert (error.code, error.raw) == ("too-large", tokens.TOOL_CALL_OPEN[:5])
