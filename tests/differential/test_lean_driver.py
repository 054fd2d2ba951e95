"""The lean LALR driver (gemma4_lark/lalr.py) against Lark's own LALR parser, on the values built.

Differential: the driver and Lark's parser (`LeanLALR.parse_with_lark`: Lark's lexer, loop and
parse-tree builder, calling the same builder) run the same tables; on every input, generated from
the grammar, canonical, mutated or hostile, they must build the same value (same types, floats to
the bit, keys' and scalars' positions, the duplicate keys reported) or fail the same way (the same
Lark exception at the same place with the same expected terminals, or the same limit reached at
the same place). Both builders: `Build` and the lossless one that decoding against tools uses.
Independent of the accelerators' switch: both paths are called by name.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import lark
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gemma4_lark import grammar, strategies, tokens
from gemma4_lark.parser import DEFAULT_MAX_DEPTH, block_parser, document_parser, lossless_parser
from gemma4_lark.values import DepthExceeded, IntegerTooLong, NumberOutOfRange, ParseState, current

D = tokens.STRING_DELIMITER
_LIMITS = (DepthExceeded, IntegerTooLong, NumberOutOfRange)


def _shape(value):
    """`value` as plain data in which equal means built the same: each object's type, floats to
    the bit, the position a located string or scalar carries."""
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    if isinstance(value, str):
        return (type(value).__name__, str(value), getattr(value, "pos", None))
    if value is None or isinstance(value, (bool, int)):
        return (type(value).__name__, value)
    if isinstance(value, dict):
        return ("dict", [(_shape(k), _shape(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_shape(v) for v in value])
    if dataclasses.is_dataclass(value):
        return (type(value).__name__, [(f.name, _shape(getattr(value, f.name))) for f in dataclasses.fields(value)])
    slots = getattr(type(value), "__slots__", None)
    if slots:
        return (type(value).__name__, [(name, _shape(getattr(value, name))) for name in slots])
    return ("unexpected", type(value).__name__, repr(value))  # a Lark Tree or Token: never equal to a value


def _error(exc: lark.exceptions.UnexpectedInput):
    token = getattr(exc, "token", None)
    return (type(exc).__name__, exc.pos_in_stream, exc.line, exc.column, getattr(exc, "state", None),
            sorted(getattr(exc, "expected", None) or ()), sorted(getattr(exc, "allowed", None) or ()),
            getattr(exc, "char", None),
            None if token is None else (token.type, str(token), token.start_pos))


def _outcome(run, text: str, start: str, pos: int, max_depth: int):
    """What `run` (a driver's parse) makes of text[pos:]: a value, a rejection or a limit, with
    the duplicate keys it reported and the depth it ended at."""
    state = ParseState(max_depth=max_depth)
    token = current.set(state)
    try:
        result = ("value", _shape(run(text, start, pos)))
    except lark.exceptions.UnexpectedInput as exc:
        result = ("rejected", _error(exc))
    except _LIMITS as exc:
        result = ("limit", type(exc).__name__, sorted(vars(exc).items()))
    finally:
        current.reset(token)
    return result, state.duplicates, state.depth if result[0] == "value" else None


def _parsers(start: str):
    if start == "call_block":
        return (block_parser(), lossless_parser(True))
    return (block_parser(),) if start in grammar.BLOCK_STARTS else (document_parser(),)


def _check(text: str, start: str, *, before: str = "", max_depth: int = DEFAULT_MAX_DEPTH) -> str:
    """The driver and Lark's parser on `text` as `start` (read from after `before`): the same
    outcome. Returns its kind."""
    whole, pos = before + text, len(before)
    for parser in _parsers(start):
        lean = _outcome(parser.parse, whole, start, pos, max_depth)
        plain = _outcome(parser.parse_with_lark, whole, start, pos, max_depth)
        assert lean == plain, (type(parser.builder).__name__, start, whole, pos)
    return lean[0][0]


_SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.lru_cache(maxsize=None)
def _generated(start: str) -> st.SearchStrategy:
    return strategies.grammar_text(start)  # (builds the grammar: once per start rule, not per example)


@pytest.mark.parametrize("start", grammar.BLOCK_STARTS + grammar.DOCUMENT_STARTS)
@settings(_SETTINGS, max_examples=100)
@given(data=st.data())
def test_grammar_generated_input(start, data):
    text = data.draw(_generated(start))
    _check(text, start, before=data.draw(st.sampled_from(["", "x", "\n\n<|tool_call>"])))
    if data.draw(st.booleans()):  # and the same text, mutated: mostly rejected, somewhere
        _check(data.draw(strategies.mutated(text)), start)


@_SETTINGS
@given(call=strategies.calls(), max_depth=st.sampled_from([1, 2, 3, DEFAULT_MAX_DEPTH]))
def test_canonical_calls(call, max_depth):
    text = strategies.canonical_call(*call)
    _check(text, "call_block", max_depth=max_depth)
    _check(text[len(tokens.TOOL_CALL_OPEN) + len(tokens.CALL_KEYWORD) + len(call[0]):-len(tokens.TOOL_CALL_CLOSE)],
           "value_document", max_depth=max_depth)


@settings(_SETTINGS, max_examples=300)
@given(data=st.data())
def test_mutated_calls_and_outputs(data):
    if data.draw(st.booleans()):
        text, start = strategies.canonical_call(*data.draw(strategies.calls())), "call_block"
    else:
        text, start = data.draw(strategies.canonical_streams()), "model_output"
    _check(data.draw(strategies.mutated(text)), start, max_depth=data.draw(st.sampled_from([2, DEFAULT_MAX_DEPTH])))


# The characters where the lexers' states, the keywords and the limits part ways.
_HOSTILE = ["{", "}", "[", "]", ",", ":", " ", "\n", "a", "b c", "k", "1", "-1", "-0.0", "007", ".5", "1.", "1e5",
            "1e400", "9" * 700, "true", "false", "null", "None", "none", "True", D, D + "s" + D, "<", "<x", "<|",
            "<tool_call|>", "<|tool_call>", "<|x|>", "<eos>", "é", "\\", '"', "'", "k:1,k:2"]


@settings(_SETTINGS, max_examples=500)
@given(pieces=st.lists(st.sampled_from(_HOSTILE), max_size=24), depth=st.sampled_from([1, 2, 4, DEFAULT_MAX_DEPTH]))
def test_hostile_blocks(pieces, depth):
    body = "".join(pieces)
    _check("<|tool_call>call:f{" + body + "}<tool_call|>", "call_block", max_depth=depth)
    _check(body, "value_document", max_depth=depth)


@pytest.mark.parametrize("text, start, kind", [
    ('<|tool_call>call:f{a:<|"|>x<|"|>,b:[1,2.5,-0.0,true,None,w x],c:{d:e},a:3}<tool_call|>', "call_block", "value"),
    ("<|tool_call>call:f{a:1,}<tool_call|>", "call_block", "rejected"),
    ("<|tool_call>call:f{a:[[[1]]]}<tool_call|>", "call_block", "limit"),        # deeper than 3
    ("<|tool_call>call:f{a:1e400}<tool_call|>", "call_block", "limit"),          # beyond a double
    ("<|tool_call>call:f{a:" + "9" * 5000 + "}<tool_call|>", "call_block", "limit"),  # too many digits
    ('hi <|channel>thought\nhmm<channel|><|tool_call>call:f{}<tool_call|><turn|>', "model_output", "value"),
    ("<|tool_call>call:f{}", "call_block", "rejected"),                          # cut off: Lark's end of input
])
def test_each_kind_of_outcome(text, start, kind):
    """Every kind the comparison tells apart comes up (a comparison of two Nones proves nothing)."""
    assert _check(text, start, before="x\n", max_depth=3) == kind
