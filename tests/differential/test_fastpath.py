"""The accept-only fast path for call blocks (gemma4_lark/fastpath.py), against the LALR path.
(With GEMMA4_LARK_ACCELERATORS=0 the LALR path is Lark's own parser, not the lean driver.)

Differential: every block the fast path takes must decode exactly as the LALR path decodes it
(same name, same values of the same types, floats to the bit); blocks it refuses are the LALR
path's to decide, so nothing about errors can differ. Canonical, mutated, hostile and
grammar-generated blocks; and the typical blocks must be taken, or the path is dead code.
"""

import contextlib
import math

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_lark as g
from gemma4_lark import fastpath, marker_search, strategies, tokens
from gemma4_lark.parser import DEFAULT_MAX_DEPTH, parse_from
from conftest import needs_accelerators
from timing import Guard, guard_tests

D = tokens.STRING_DELIMITER


def _typed(value):
    """`value` as data in which equal means the same to the bit (1 is not True, -0.0 not 0.0)."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, float):
        return ("float", math.copysign(1, value), value.hex())
    return (type(value).__name__, value)


def _lalr(text: str, max_depth: int, duplicates: list | None = None):
    """The LALR path's ToolCall, its duplicate-key report in `duplicates`: the fast path stood aside."""
    real = fastpath.parse_call
    fastpath.parse_call = lambda *args, **kwargs: None
    try:
        return parse_from(text, 0, "call_block", max_depth=max_depth, duplicates=duplicates)
    finally:
        fastpath.parse_call = real


def _delimiters(text: str) -> list[int]:
    """Where every string delimiter of `text` is: what `str.split` splits at."""
    found, at = [], text.find(D)
    while at != -1:
        found.append(at)
        at = text.find(D, at + len(D))
    return found


def _lalr_answer(text: str, max_depth: int):
    """(the LALR path's call or its GemmaSyntaxError, the repeated keys it reports)."""
    duplicates: list = []
    try:
        return _lalr(text, max_depth, duplicates), duplicates
    except g.GemmaSyntaxError as err:
        return err, duplicates


def _check(text: str, max_depth: int = DEFAULT_MAX_DEPTH, answers: dict | None = None) -> bool:
    """Whether the fast path took `text`; fails when what it gave differs from LALR's, or when it
    took, asked for unique keys, a block in which LALR reports a repeated key."""
    fast = fastpath.parse_call(text, max_depth)
    unique = fastpath.parse_call(text, max_depth, unique_keys=True)
    # Told where the delimiters are (as a stream's scan tells it), the same: the same call or None.
    told = fastpath.parse_call(text, max_depth, unique_keys=True, delimiters=_delimiters(text))
    assert (told is None) == (unique is None), text
    if told is not None:
        assert told.name == unique.name and _typed(told.arguments) == _typed(unique.arguments), text
    if fast is None:
        assert unique is None, text
        return False
    answers = {} if answers is None else answers  # the LALR answer, read once for every mode
    if "lalr" not in answers:
        answers["lalr"] = _lalr_answer(text, max_depth)
    slow, duplicates = answers["lalr"]
    if isinstance(slow, g.GemmaSyntaxError):
        pytest.fail(f"the fast path accepted what the grammar rejects ({slow.message}): {text!r}")
    assert fast.name == slow.name, text
    assert _typed(fast.arguments) == _typed(slow.arguments), text
    if duplicates:
        assert unique is None, f"taken with unique_keys, though LALR reports {duplicates}: {text!r}"
    else:
        assert unique is not None and _typed(unique.arguments) == _typed(fast.arguments), text
    return True


SHIPPED = {name: getattr(fastpath, name) for name in ("_LONG_STRINGS", "_LONG_STRING_AVERAGE")}


STRING_MODES = ["strings encoded", "strings put back", "split by memchr"]


@contextlib.contextmanager
def string_mode_set(mode: str):
    """The fast path's string handling forced to `mode`: the strings JSON-encoded into the
    template (short strings, the usual case), put back into the decoded value by token (what long
    strings take), or the block split at its delimiters by marker_search (what a long block takes)
    whatever its size."""
    saved = {name: getattr(fastpath, name) for name in SHIPPED}, marker_search.SHORT
    if mode == "strings put back":
        fastpath._LONG_STRINGS, fastpath._LONG_STRING_AVERAGE = -1, 0
    if mode == "split by memchr":
        marker_search.SHORT = 0
    try:
        yield mode
    finally:
        for name, value in saved[0].items():
            setattr(fastpath, name, value)
        marker_search.SHORT = saved[1]


@pytest.fixture(params=STRING_MODES)
def string_mode(request):
    """The example tests run three times, once in each string mode."""
    with string_mode_set(request.param):
        yield request.param


def _check_every_mode(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """`_check` in each string mode on the same block, the LALR answer read once: the property
    tests draw each example once and hold every mode to it (each mode sees every example)."""
    answers: dict = {}
    for mode in STRING_MODES:
        with string_mode_set(mode):
            _check(text, max_depth, answers)


TYPICAL = [
    '<|tool_call>call:get_weather{location:<|"|>Tokyo, JP<|"|>}<tool_call|>',
    '<|tool_call>call:ping{}<tool_call|>',
    '<|tool_call>call:github:create-issue{title:<|"|>Bug<|"|>,labels:[bug,ui]}<tool_call|>',
    '<|tool_call>call:get_current_weather{location:<|"|>San Francisco, CA<|"|>,unit:<|"|>celsius<|"|>,days:3}<tool_call|>',
    '<|tool_call>call:search{query:<|"|>gemma 4 "tool" calls, 50%<|"|>,limit:10,score:-0.5,exact:false,'
    'filters:{lang:en,since:null,tags:[a b,c-d]},page:None,cursor:none}<tool_call|>',
    '<|tool_call>call:f{<|"|>quoted key<|"|>:[],n:1e-07,u:https://example.com/a?b=c}<tool_call|>',
    '<|tool_call>call:write_file{path:<|"|>a.py<|"|>,content:<|"|>def f(x):\n    return x < 1 and "a\\n"\n<|"|>}<tool_call|>',
    '<|tool_call> call: spaced { a : 1 , b : [ 1 , 2 ] }<tool_call|>',
    '<|tool_call>call:f{a:<|"|><|"|>,b:<|"|>{x:1}<|"|>,c:<|"|><tool_call|><|"|>}<tool_call|>',
    '<|tool_call>call:f{a:{b:{c:[1,{d:2}]}},e:[[],[[]]]}<tool_call|>',
    '<|tool_call>call:f{k:1,k:2}<tool_call|>',  # a repeated key: the last wins, as in the grammar
    '<|tool_call>call:write_file{path:<|"|>a.py<|"|>,content:<|"|>' + "x < 1 %s %d '0 \"\\\n" * 500 + '<|"|>}<tool_call|>',
    '<|tool_call>call:f{<|"|>' + "k" * 3000 + '<|"|>:[<|"|>v<|"|>,{q:<|"|>\'1<|"|>}],z:<|"|>%s<|"|>}<tool_call|>',
]


@pytest.mark.usefixtures("string_mode")
@pytest.mark.parametrize("text", TYPICAL)
def test_typical_blocks_take_the_fast_path(text):
    assert _check(text), f"the fast path refused a typical block: {text!r}"


@pytest.mark.usefixtures("string_mode")
@pytest.mark.parametrize("text, why", [
    ('<|tool_call>call:f{a:.5}<tool_call|>', "a float JSON cannot read"),
    ('<|tool_call>call:f{a:007}<tool_call|>', "leading zeros"),
    ('<|tool_call>call:f{a:1e400}<tool_call|>', "beyond a double: the grammar's error"),
    ('<|tool_call>call:f{a:' + "9" * 700 + '}<tool_call|>', "near the digit limit"),
    ('<|tool_call>call:f{a:NaN,b:Infinity}<tool_call|>', "bare words (quoted), never JSON constants"),
    ('<|tool_call>call:f{a:1,}<tool_call|>', "a trailing comma: the grammar's error"),
    ('<|tool_call>call:f{a:C:\\dir}<tool_call|>', "a backslash in a bare word"),
    ('<|tool_call>call:f{a:it\'s}<tool_call|>', "a quote outside strings"),
    ('<|tool_call>call:f{a:<|"|>open}<tool_call|>', "an unclosed string"),
    ('<|tool_call>call:f{a:[x:y]}<tool_call|>', "a bare word with a colon in a list"),
    ('<|tool_call>call:f{a:b\tc}<tool_call|>', "a tab in a bare word"),
    ('<|tool_call>call:f{a:fa<|think|>lse}<tool_call|>', "a control token after a bare word"),
    (' <|tool_call>call:f{}<tool_call|>', "whitespace before the opener"),
    ('<|tool_call>call:f{a:1}\n<tool_call|>', "whitespace before the closer"),
    ('<|tool_call>call:f{a:1,<|"|>a<|"|>:2,b:<|"|>' + "x" * 3000 + '<|"|>}<tool_call|>',
     "a key repeated once its string is put back: LALR says which wins"),
])
def test_what_the_fast_path_refuses_gets_the_lalr_answer(text, why):
    fast = fastpath.parse_call(text, DEFAULT_MAX_DEPTH)
    if fast is not None:  # taken: then it must be exact
        assert _check(text), why
    try:
        expected = _typed(_lalr(text, DEFAULT_MAX_DEPTH).arguments)
    except g.GemmaSyntaxError as err:
        with pytest.raises(g.GemmaSyntaxError) as info:
            g.parse_call(text)
        assert (info.value.message, info.value.pos, info.value.code) == (err.message, err.pos, err.code)
    else:
        assert _typed(g.parse_call(text).arguments) == expected


@pytest.mark.usefixtures("string_mode")
@pytest.mark.parametrize("text", [
    "<|tool_call>call:f{a::None}<tool_call|>",      # a word that holds a null spelling: ':None'
    "<|tool_call>call:f{a:x None,b:[none, None]}<tool_call|>",
    "<|tool_call>call:f{None:None,none: none }<tool_call|>",
])
def test_null_spellings_are_null_only_as_the_lexers_whole_word(text):
    _check(text)  # found by test_hostile_blocks: `a::None` read as ':null'


@pytest.mark.usefixtures("string_mode")
def test_the_depth_limit_is_the_lalr_paths():
    for depth in (1, 5, 64):
        inside = "[" * depth + "]" * depth  # depth + 1 levels with the arguments' braces
        text = "<|tool_call>call:f{a:" + inside + "}<tool_call|>"
        assert fastpath.parse_call(text, depth + 1) is not None
        assert fastpath.parse_call(text, depth) is None
        with pytest.raises(g.GemmaSyntaxError) as info:
            g.parse_call(text, max_depth=depth)
        assert info.value.code == "too-deep"


@settings(max_examples=400)
@given(call=strategies.calls())
def test_canonical_blocks(call):
    _check_every_mode(strategies.canonical_call(*call))


@settings(max_examples=800)
@given(data=st.data())
def test_mutated_blocks(data):
    text = strategies.canonical_call(*data.draw(strategies.calls()))
    _check_every_mode(data.draw(strategies.mutated(text)), max_depth=data.draw(st.sampled_from([2, 3, DEFAULT_MAX_DEPTH])))


# The structure's tokens and the characters where JSON and the grammar part ways.
_HOSTILE = ["{", "}", "[", "]", ",", ":", " ", "\n", "\t", "a", "b c", "k", "1", "-1", "0", "007", ".5", "1.",
            "2.5", "1e5", "1E+5", "-0.0", "1e400", "true", "false", "null", "None", "none", "True", "NaN",
            "Infinity", "-Infinity", '"', "'", "\\", "\\n", "%", "%s", "<", "<x", "<|", "|>", D, D + "s" + D,
            "<tool_call|>", "<|tool_call>", "<|x|>", "é", "\x00", "\x7f", "\u2028", "\ud800", "$", "@", ".", "_",
            "https://x", "a:b", "u0041", "<|think|>", "fa", "<eos>"]


@settings(max_examples=1500)
@given(pieces=st.lists(st.sampled_from(_HOSTILE), max_size=24), name=st.sampled_from(["f", "a:b", "x.y-z"]),
       depth=st.sampled_from([1, 2, 4, DEFAULT_MAX_DEPTH]))
def test_hostile_blocks(pieces, name, depth):
    _check_every_mode("<|tool_call>call:" + name + "{" + "".join(pieces) + "}<tool_call|>", max_depth=depth)


@settings(max_examples=200)
@given(text=strategies.grammar_text("call_block"))
def test_grammar_generated_blocks(text):
    _check_every_mode(text)


@pytest.mark.usefixtures("string_mode")
@needs_accelerators("the fast path is not taken")
def test_parse_call_uses_the_fast_path_even_when_asked_for_repeated_keys(monkeypatch):
    taken = []
    real = fastpath.parse_call
    monkeypatch.setattr(fastpath, "parse_call", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    text = TYPICAL[0]
    assert g.parse_call(text) == _lalr(text, DEFAULT_MAX_DEPTH)
    duplicates: list = []
    assert g.parse_call(text, duplicates=duplicates) == _lalr(text, DEFAULT_MAX_DEPTH) and duplicates == []
    assert len(taken) == 2 and None not in taken
    repeated = '<|tool_call>call:f{k:1,o:{k:[{j:1,j:2}]},k:2}<tool_call|>'
    assert g.parse_call(repeated, duplicates=duplicates).arguments == {"k": 2, "o": {"k": [{"j": 2}]}}
    assert taken[-1] is None  # refused: the report comes from the LALR path, with each place
    assert duplicates == [("j", repeated.index("j:2")), ("k", repeated.index("k:2"))]


@pytest.mark.usefixtures("string_mode")
@needs_accelerators("the fast path is not taken")
def test_the_stream_parser_takes_the_fast_path(monkeypatch):
    import gemma4_incremental as gi
    taken = []
    real = fastpath.parse_call
    monkeypatch.setattr(fastpath, "parse_call", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    out = gi.parse_output("hi " + TYPICAL[3] + TYPICAL[4])
    assert [c.name for c in out.calls] == ["get_current_weather", "search"]
    assert len(taken) == 2 and None not in taken
    out = gi.parse_output('<|tool_call>call:f{k:1,k:2}<tool_call|>')
    assert out.calls[0].arguments == {"k": 2} and taken[-1] is None
    assert [d.code for d in out.calls[0].diagnostics] == ["duplicate-key"]


@pytest.mark.usefixtures("string_mode")
def test_big_blocks_take_the_path_that_keeps_memory_down(monkeypatch):
    """Blocks of any size are taken (no cliff between sizes), but a big one of many short strings
    goes to LALR: there each string costs this path about 100 bytes, LALR about 8."""
    for name, value in SHIPPED.items():  # whichever string mode the fixture set
        monkeypatch.setattr(fastpath, name, value)
    code = "<|tool_call>call:write_file{path:" + D + "a.py" + D + ",content:" + D + "x = [1, 2] < 3\n" * 2000 + D + "}<tool_call|>"
    ints = "<|tool_call>call:f{a:[" + ",".join(["1"] * 20_000) + "]}<tool_call|>"
    strings = "<|tool_call>call:f{a:[" + ",".join([D + "x" + D] * 3000) + "]}<tool_call|>"
    assert _check(code) and _check(ints)
    assert fastpath.parse_call(strings, DEFAULT_MAX_DEPTH) is None
    assert g.parse_call(strings).arguments == {"a": ["x"] * 3000}


def _colon_word(n: int, end: str) -> str:
    return "<|tool_call>call:f{a:" + "b:" * n + "b" + end + "}<tool_call|>"


# A bare word of n colons (BARE_WORD holds `:`), ending where a value can or cannot: the search
# for words read it again from each colon when it could not end (found by review: 8 s at 16 KB).
_GUARDS = [
    Guard("a colon-dense word that cannot end a value", lambda text: fastpath.parse_call(text, DEFAULT_MAX_DEPTH),
          lambda n: _colon_word(n, "[]"), 500),
    Guard("a colon-dense word that can", lambda text: fastpath.parse_call(text, DEFAULT_MAX_DEPTH),
          lambda n: _colon_word(n, ""), 500),
    Guard("a colon-dense word in a list, then a brace", lambda text: fastpath.parse_call(text, DEFAULT_MAX_DEPTH),
          lambda n: "<|tool_call>call:f{a:[" + "b:" * n + "b{]}<tool_call|>", 500),
]
test_time_grows_linearly, test_each_guard_can_fail = (
    pytest.mark.usefixtures("string_mode")(test) for test in guard_tests(_GUARDS, twins=_GUARDS[:1]))


@pytest.mark.usefixtures("string_mode")
def test_a_word_that_cannot_end_a_value_is_refused_at_once():
    assert fastpath.parse_call(_colon_word(3, "[]"), DEFAULT_MAX_DEPTH) is None
    assert fastpath.parse_call(_colon_word(3, ""), DEFAULT_MAX_DEPTH).arguments == {"a": "b:b:b:b"}
    with pytest.raises(g.GemmaSyntaxError):
        g.parse_call(_colon_word(3, "[]"))
