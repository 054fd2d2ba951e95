"""Value semantics (docs/README.md, "Values in Python") through the public API, and the canonical round trip."""

import json
import math

import pytest
from hypothesis import given, strategies as st

import gemma4_lark as g
from gemma4_lark.render.values import dump_value

from conftest import needs_accelerators, same


def test_big_integers_are_exact():
    n = 2**200 + 1
    assert g.parse_value(str(n)) == n
    assert g.parse_value(str(-n)) == -n


def test_negative_zero_keeps_its_sign():
    value = g.parse_value("-0.0")
    assert value == 0.0 and math.copysign(1, value) == -1


@pytest.mark.parametrize("text", ["null", "None", "none"])
def test_all_nulls(text):
    assert g.parse_value(text) is None


def test_ten_thousand_deep_list_does_not_recurse():
    depth = 10_000
    value = g.parse_value("[" * depth + "]" * depth, max_depth=depth)
    for _ in range(depth - 1):
        assert len(value) == 1
        value = value[0]
    assert value == []


def test_max_depth_gives_a_syntax_error():
    with pytest.raises(g.GemmaSyntaxError) as info:
        g.parse_value("[" * 600 + "]" * 600)
    assert "nesting deeper than 512" in info.value.message
    assert info.value.pos == 512
    # exactly at the limit is fine
    g.parse_value("[" * 512 + "]" * 512)
    with pytest.raises(g.GemmaSyntaxError):
        g.parse_call("<|tool_call>call:f{a:" + "{a:" * 3 + "1" + "}" * 3 + "}<tool_call|>", max_depth=3)


def test_depth_counts_per_parse():
    # a previous failed parse leaves no depth behind
    with pytest.raises(g.GemmaSyntaxError):
        g.parse_value("[[[[", max_depth=3)
    assert g.parse_value("[[[]]]", max_depth=3) == [[[]]]


def test_non_str_input_is_a_type_error():
    with pytest.raises(TypeError):
        g.parse_value(b"1")


# --- hypothesis: any JSON-like value written canonically parses back equal --------------------
_strings = st.text().filter(lambda s: '<|"|>' not in s)
_floats = st.floats(allow_nan=False, allow_infinity=False)
_scalars = st.none() | st.booleans() | st.integers() | st.integers(min_value=-10**40, max_value=10**40) | _floats | _strings
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_strings, inner, max_size=5),
    max_leaves=30,
)


@given(_values)
def test_canonical_round_trip(value):
    text = dump_value(value, unsafe="allow")
    assert same(g.parse_value(text), value)


@given(_values)
def test_canonical_text_is_a_fixed_point(value):
    text = dump_value(value, unsafe="allow")
    assert dump_value(g.parse_value(text), unsafe="allow") == text


@given(st.dictionaries(_strings, _values, max_size=4), st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:-]{0,20}", fullmatch=True))
def test_call_round_trip(arguments, name):
    parsed = g.parse_call("<|tool_call>call:" + name + dump_value(arguments, unsafe="allow") + "<tool_call|>")
    assert parsed.name == name and same(parsed.arguments, arguments)


def test_integers_up_to_the_bound_are_exact_and_printable():
    # 4,300 digits: CPython's default int/str limit, so what is decoded can be printed and sent as JSON
    for digits in (641, 4_300):
        value = g.parse_value("1" + "0" * (digits - 1))
        assert value == 10 ** (digits - 1) and json.dumps(value) == "1" + "0" * (digits - 1)
        assert g.parse_value("-" + "9" * digits) == -(10**digits - 1)


def test_a_lower_interpreter_limit_is_the_bound(monkeypatch):
    import sys

    if not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("this interpreter has no int/str digit limit")
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 1000)
    assert g.parse_value("7" * 1000) % 10 == 7
    with pytest.raises(g.GemmaSyntaxError, match="integer too long: 1,001 digits \\(the limit is 1,000\\)"):
        g.parse_value("7" * 1001)


def test_integer_beyond_the_bound_is_a_positioned_syntax_error():
    from gemma4_lark.values import MAX_INTEGER_DIGITS

    text = "<|tool_call>call:f{a:1,b:-" + "7" * (MAX_INTEGER_DIGITS + 1) + "}<tool_call|>"
    with pytest.raises(g.GemmaSyntaxError) as info:
        g.parse_call(text)
    assert info.value.pos == text.index("-") and "integer too long" in info.value.message
    [diagnostic] = g.validate(text)
    assert (diagnostic.code, diagnostic.pos) == ("syntax", text.index("-"))
    assert g.parse_value("7" * MAX_INTEGER_DIGITS) % 10**9 == 777_777_777
    for digits in (MAX_INTEGER_DIGITS + 1, 100_000):  # never Python's own ValueError
        with pytest.raises(g.GemmaSyntaxError, match="integer too long"):
            g.parse_value("1" * digits)


@needs_accelerators("Lark's parse-tree builder copies a list once into its parent (8 bytes an item): "
                    "the lean driver grows it in place")
def test_a_long_list_is_built_without_copies():
    # The list grows in place as the parser reduces it and the array keeps that list: no copy of
    # it as arguments, no slice. (It peaked at about 50 bytes a character.)
    import tracemalloc

    text = "[" + "1," * 100_000 + "1]"
    g.parse_value("[1,2]")
    tracemalloc.start()
    try:
        value = g.parse_value(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(value) == 100_001 and type(value) is list
    assert peak < 20 * len(text), peak / len(text)
