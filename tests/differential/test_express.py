"""parse_output's express path (incremental/express.py) against StreamParser.

Differential: for every output the express path takes, its events are exactly the events of a
StreamParser fed the whole output and flushed (types, texts, spans, names, arguments, raw,
diagnostics, call ids from the same factory); when it does not take an output, it asked the id
factory for nothing. It must also take the usual outputs (or it is dead code). The path is called
by name (`read_whole`), so with GEMMA4_LARK_ACCELERATORS=0 it is compared with the plain stream.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gemma4_incremental import StreamParser, express, parse_output
from gemma4_incremental.output import collect
from gemma4_lark import strategies, tokens
from gemma4_lark.possessive import POSSESSIVE
from timing import Guard, guard_tests

D = tokens.STRING_DELIMITER
CALL = "<|tool_call>call:get_weather{location:" + D + "Tokyo, JP" + D + ",days:3,tags:[" + D + "a" + D + "]}<tool_call|>"
THOUGHT = "<|channel>thought\nThe user wants the weather.<channel|>"

pytestmark = pytest.mark.skipif(not POSSESSIVE, reason="no express path before Python 3.11 (no possessive regex)")


def _counter():
    ids = itertools.count()
    asked = []

    def new_id():
        asked.append(1)
        return f"call_{next(ids)}"
    return new_id, asked


def _streamed(text: str, **options) -> list:
    new_id, _ = _counter()
    parser = StreamParser(id_factory=new_id, **options)
    return parser.feed(text) + parser.flush()


def _express(text: str, **options):
    new_id, asked = _counter()
    out = express.read_whole(StreamParser(id_factory=new_id, **options), text)
    if out is None:
        assert not asked, "ids asked for an output the express path did not take"
    return out


def _check(text: str, **options) -> bool:
    """Whether the express path took `text`; fails when it gave other events than the stream."""
    got = _express(text, **options)
    if got is None:
        return False
    assert got == _streamed(text, **options), text
    return True


# --- it takes the usual outputs -------------------------------------------------------------
USUAL = [
    "Just an answer, with <b>markup</b> and a < b.",
    CALL,
    THOUGHT + "Let me check." + CALL + "\n" + CALL,
    THOUGHT + CALL,
    "Text " + CALL + " more text " + CALL + " end",
    "<|tool_call>call:write{path:" + D + "a.py" + D + ",content:" + D + ("x = 1 < 2\n" * 3000) + D + "}<tool_call|>",
    "<|channel>thought\n" + "a <|\"|> b" + "<channel|>Done.",
    "answer<turn|>",                                                     # stop markers in text
    THOUGHT + CALL + "<eos>",
    CALL + "<|tool_response>",
    "a<turn|>b<eos>",
    "<|tool_call>call:f{a:.5}<tool_call|>",   # not JSON's: the block decision's LALR path, as the stream's
]


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("text", USUAL)
def test_it_takes_the_usual_outputs(text, strict):
    assert _check(text, strict=strict), text


# --- what it leaves to the stream -----------------------------------------------------------
LEFT = [
    "call:get_weather{city:" + D + "Paris" + D + "}",                   # a bare call at the start
    THOUGHT + "  call:f{a:1}",                                           # ... or after a thought
    THOUGHT,                                                             # on guard to the end
    "<|channel>thought\nunclosed",                                       # an unclosed thought
    "<|channel>thought\nx" + CALL,                                       # a call inside a thought
    "<|channel>stray" + "<channel|>",                                    # an unlabelled channel
    "text <channel|> more",                                              # stray markup
    "text <tool_call|> more",
    "<|channel>thought\nx<turn|>",                                      # a stop marker in a thought
    "<|tool_call>call:f{a:1,a:2}<tool_call|>",                           # a repeated key: LALR reports it
    "<|tool_call>call:f{a:1}",                                           # unclosed
    "<|tool_call>call:f{a:1<turn|>",
    "<|tool_call>call:f{a:b<escape>c}<tool_call|>",                       # FunctionGemma's delimiter
    "text then a cut marker <|tool_c",                                   # a marker's prefix, held back
    "text <",
]


@pytest.mark.parametrize("text", LEFT)
def test_it_leaves_the_rest_to_the_stream(text):
    assert _express(text) is None
    parsed = parse_output(text, id_factory=_counter()[0])
    assert parsed.events == _streamed(text)


def test_an_option_of_an_unexpected_shape_is_the_streams_to_judge():
    """`max_depth=None` made the fast path raise; the stream turns a decoder's failure into a
    tool_call_error (`internal`), and parse_output does the same."""
    for options in ({"max_depth": None},):
        new_id, _ = _counter()
        assert parse_output(CALL, id_factory=new_id, **options).events == _streamed(CALL, **options)


def test_options_it_does_not_serve():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    for options in ({"tools": tools}, {"tool_choice": "required"}, {"tool_choice": "none"}, {"parse_thinking": False},
                    {"start_in_thinking": True}, {"max_block_chars": 40}):
        assert _express(THOUGHT + CALL, **options) is None, options
        new_id, _ = _counter()
        assert parse_output(THOUGHT + CALL, id_factory=new_id, **options).events == _streamed(THOUGHT + CALL, **options)


# --- differential fuzzing -------------------------------------------------------------------
_PIECES = [D, "<|tool_call>", "<tool_call|>", "<turn|>", "<eos>", "<|tool_response>", "<|channel>thought\n",
           "<|channel>thought", "<|channel>", "<channel|>", "<", "<|", "<tool_call", "<|tool_c", "call:", "call:f{",
           "{", "}", "[", "]", ",", ":", " ", "\n", "\t", "a", "b c", "1", "x<y", "é", "<escape>", CALL, THOUGHT,
           "<|tool_call>call:f{", "a:" + D, "1" + D, D + "}", "}<tool_call|>", "k:1,", "None", "a:1,a:2"]
_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(text=strategies.canonical_streams(), strict=st.booleans())
def test_canonical_outputs(text, strict):
    _check(text, strict=strict)


@_SETTINGS
@given(data=st.data(), strict=st.booleans())
def test_mutated_outputs(data, strict):
    text = data.draw(strategies.canonical_streams())
    _check(data.draw(strategies.mutated(text)), strict=strict)


@_SETTINGS
@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=40), strict=st.booleans())
def test_outputs_of_markup_pieces(pieces, strict):
    _check("".join(pieces), strict=strict)


@_SETTINGS
@given(pieces=st.lists(st.sampled_from([CALL, THOUGHT, " ", "\n", "text", "a < b", "<b>"]), max_size=12))
def test_outputs_of_usual_pieces_are_taken(pieces):
    """Text, thoughts and canonical calls in any order: taken, unless a thought comes where the
    stream guesses a bare call or stays on guard (nothing but whitespace after it)."""
    text = "".join(pieces)
    taken = _check(text)
    ends_after_thought = text.rstrip(" \n").endswith(tokens.CHANNEL_CLOSE) or not text.strip(" \n")
    assert taken or ends_after_thought, text


def test_parse_output_is_the_streams_on_both_paths():
    for text in USUAL + LEFT:
        new_id, _ = _counter()
        parsed = parse_output(text, id_factory=new_id)
        assert parsed == collect(_streamed(text)), text


# --- linear in every shape ------------------------------------------------------------------
# A thought before each call: the stream's guess of a bare call after a thought copied the rest
# of the output each time (both paths), quadratic in the thoughts; unlabelled channels likewise.
def _parse(text):
    parse_output(text)


def _stream_whole(text):
    parser = StreamParser()
    parser.feed(text)
    parser.flush()


_PROSE = "x" * 2000  # long text after each thought: what was copied again at each
_GUARDS = [
    Guard("parse_output, a thought before each call", _parse, lambda n: (THOUGHT + _PROSE + CALL) * n, 4, 2048),
    Guard("stream, a thought before each call", _stream_whole, lambda n: (THOUGHT + _PROSE + CALL) * n, 4, 2048),
    Guard("stream, unlabelled channels", _stream_whole, lambda n: ("<|channel>x<channel|>" + _PROSE) * n, 4, 2048),
    Guard("parse_output, text and stops", _parse, lambda n: ("a <b> c" + CALL + "<turn|>") * n, 8, 4096),
]
test_time_grows_linearly, test_each_guard_can_fail = guard_tests(_GUARDS, twins=_GUARDS[:1])
