"""No export wider than the parser (issue 30, section 4): whatever a typed export accepts, strict
`parse_output(tools=)` accepts, unless `not_enforced()` says why not.

The property runs over random schemas at the edges of what a value can be (`schema_strategies.
edge_tools`: positions past `maxItems`, items and properties no value satisfies, `false` beside open
objects, `allOf` of open objects, merged enums of nested values), walked under llguidance's mask.
Then one test per family that broke it, each through every export: llguidance, GBNF (through
llguidance's own GBNF reader) and Lark (Python Lark, as the docs use it)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

pytest.importorskip("llguidance")
jsonschema_rs = pytest.importorskip("jsonschema_rs")

from constrain_helpers import Matcher, gbnf_as_llguidance, lark_parser  # noqa: E402
from schema_strategies import NO_VALUE_DEFS, NO_VALUE_SCHEMAS, edge_tools, nested_json  # noqa: E402

from gemma4_incremental import parse_output  # noqa: E402
from gemma4_lark import constrain  # noqa: E402
from gemma4_lark.constrain import _merge  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, not_enforced  # noqa: E402
from gemma4_lark.render.official import render_chat  # noqa: E402
from gemma4_lark.render.safety import UnsafeContentError  # noqa: E402
from gemma4_lark.tools import read_tools  # noqa: E402

D = '<|"|>'
# derandomized and small by default; HYPOTHESIS_PROFILE=explore or deep draws more (conftest.py)
EXAMPLES = 60 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else settings.default.max_examples
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def _tools(parameters):
    return [{"type": "function", "function": {"name": "t", "parameters": parameters}}]


def _call(body):
    return f"<|tool_call>call:t{{{body}}}<tool_call|>"


def _parser_accepts(text, tools) -> bool:
    out = parse_output(text, tools=tools, strict=True)
    return bool(out.calls) and not out.errors


class Exports:
    """The exports of one tool list, each asked whether it accepts a text."""

    def __init__(self, tools):
        self.llguidance = Matcher(constrain.grammar("llguidance", tools=tools))
        self.gbnf = Matcher(gbnf_as_llguidance(constrain.grammar("gbnf", tools=tools)))
        self.lark = lark_parser(constrain.grammar("lark", tools=tools))

    def accepting(self, text) -> dict:
        try:
            self.lark.parse(text)
            lark = True
        except Exception:  # noqa: BLE001 - Lark's several refusals
            lark = False
        return {"llguidance": self.llguidance.accepts(text), "gbnf": self.gbnf.accepts(text), "lark": lark}


def _agree(exports, tools, texts):
    """Every export accepts each text exactly when the parser does."""
    for text in texts:
        want = _parser_accepts(text, tools)
        assert exports.accepting(text) == dict.fromkeys(("llguidance", "gbnf", "lark"), want), (text, want)


# --- the property -----------------------------------------------------------------------------------
COUNTS = {"examples": 0, "refused": 0, "walks": 0, "checked": 0, "excused": 0}


@SETTINGS
@given(edge_tools(), st.integers(0, 2**32))
def test_what_a_typed_export_accepts_the_strict_parser_accepts(tools, seed):
    parsed = read_tools(tools)
    try:
        grammar = constrain.grammar("llguidance", tools=tools)
    except SchemaError as error:
        # no call satisfies the schema: the message says where (in the parameters or a definition)
        # and why, never "None"
        COUNTS["refused"] += 1
        assert str(error).startswith(("tool 't': parameters", "tool 't': #/")) and not str(error).endswith("None"), error
        return
    COUNTS["examples"] += 1
    excuses = not_enforced(parsed)
    matcher = Matcher(grammar)
    rng = random.Random(seed)
    for _ in range(4):
        text = matcher.random_walk(rng)
        if text is None:
            continue
        COUNTS["walks"] += 1
        if excuses:
            COUNTS["excused"] += 1
            continue
        COUNTS["checked"] += 1
        out = parse_output(text, tools=tools, strict=True)
        assert out.calls and not out.errors, (text, [e.error for e in out.errors], tools[0]["function"]["parameters"])


def test_the_property_ran_on_enough_examples():
    # hypothesis runs the property above first in this module; this records what it saw
    if COUNTS["examples"] == 0:
        pytest.skip("run with the property above")
    print(f"\nnever wider: {COUNTS}")
    assert COUNTS["checked"] >= EXAMPLES  # most walks are checked: the strategy stays enforced whole


# --- positions past maxItems ---------------------------------------------------------------------
# Before: `prefixItems` of 3 with `maxItems: 1` took `[1,2,3]` in every export; the parser refuses it.
_TUPLES = {f"p{m}_{high}_{low}_{int(tail)}": {"type": "array", "prefixItems": [{"type": "integer"}] * m,
                                               **({"maxItems": high} if high is not None else {}), "minItems": low,
                                               **({} if tail else {"items": False})}
           for m in (1, 3) for high in (None, 0, 1, 2) for low in (0, 1) for tail in (False, True)
           if high is None or low <= high}


def test_positions_past_max_items_are_never_written():
    tools = _tools({"type": "object", "properties": _TUPLES})
    exports = Exports(tools)
    texts = []
    for name, schema in _TUPLES.items():
        m = len(schema["prefixItems"])
        for k in range(m + 3):
            items = [str(i) for i in range(min(k, m))] + [f"{D}s{D}"] * max(0, k - m)
            texts.append(_call(f"{name}:[{','.join(items)}]"))
    _agree(exports, tools, texts)
    assert not_enforced(read_tools(tools)) == []


# --- a declared key no value satisfies, beside additional members -------------------------------
# Before: `a: false` (or a schema no value satisfies) beside `additionalProperties: true` or a schema
# was taken as an additional member `a:1`; validation holds `a` to its own schema and refuses it.
_NO_VALUE_PROPERTIES = {"a": False, "b": {"type": "integer", "const": "a"}, "c": {"$ref": "#/$defs/none"},
                        "d": {"allOf": [{"enum": [1]}, {"enum": [2]}]}, "e": {"type": "array", "minItems": 2, "maxItems": 1}}


# And `additionalProperties` no value satisfies is no additional member at all (it refused the tool).
@pytest.mark.parametrize("extra", [True, {}, {"type": "integer"}, {"type": "integer", "const": "a"}])
def test_a_key_with_no_value_is_no_additional_member(extra):
    tools = _tools({"type": "object", "properties": {**_NO_VALUE_PROPERTIES, "n": {"type": "integer"}},
                    "additionalProperties": extra, "$defs": NO_VALUE_DEFS})
    exports = Exports(tools)
    _agree(exports, tools, [_call(f"{key}:1") for key in _NO_VALUE_PROPERTIES]
           + [_call("n:1"), _call("zz:1"), _call("n:1,a:1"), _call("zz:1,n:1"), _call("a:1,n:1")])
    # the only declared key has no value: the object is still no free map
    alone = _tools({"type": "object", "properties": {"a": False}, "additionalProperties": extra})
    _agree(Exports(alone), alone, [_call("a:1"), _call("b:1"), _call("")])


# --- allOf of open objects ---------------------------------------------------------------------------
# Before: two objects that both said `additionalProperties: true` were merged closed.
_EXTRAS = {"true": True, "empty": {}, "absent": None, "false": False, "integer": {"type": "integer"}}


def _open_part(key, extra):
    part = {"type": "object", "properties": {key: {"type": "integer"}}}
    if extra is not None:
        part["additionalProperties"] = extra
    return part


def test_all_of_open_objects_stays_open():
    pairs = [(a, b) for a in _EXTRAS for b in _EXTRAS]
    tools = _tools({"type": "object", "properties": {
        f"{a}_{b}": {"allOf": [_open_part("a", _EXTRAS[a]), _open_part("b", _EXTRAS[b])]} for a, b in pairs}})
    exports = Exports(tools)
    for a, b in pairs:
        for members in ("a:1,b:2", "a:1,b:2,c:3", f"a:1,c:{D}x{D}", "c:3"):
            text = _call(f"{a}_{b}:{{{members}}}")
            accepted, want = exports.accepting(text), _parser_accepts(text, tools)
            assert not any(accepted.values()) or want, (text, accepted)  # never wider
            # and as wide as the schema says, where a side says so and none closes it (both absent:
            # `additionalProperties` absent beside `properties` is false, docs/constrained-decoding.md)
            explicit = (a, b) != ("absent", "absent")
            if want and explicit:
                assert all(accepted.values()), (text, accepted)


# --- merged enums of nested values ---------------------------------------------------------------
# Before: `allOf[{enum:[{a:true}]},{enum:[{a:1}]}]` kept `{a:true}`: nested, True was 1.
# a value's look-alikes: each leaf maybe swapped for one Python finds equal (True and 1, 0 and 0.0)
_LOOK_ALIKES = {True: [1, 1.0], False: [0, 0.0], 0: [False, 0.0], 1: [True, 1.0], 1.0: [True, 1]}


@st.composite
def _look_alike(draw, value):
    if isinstance(value, list):
        return [draw(_look_alike(v)) for v in value]
    if isinstance(value, dict):
        return {k: draw(_look_alike(v)) for k, v in value.items()}
    if isinstance(value, (bool, int, float)) and value in _LOOK_ALIKES and draw(st.booleans()):
        return draw(st.sampled_from(_LOOK_ALIKES[value]))
    return value


_PAIRS = nested_json.flatmap(lambda a: st.tuples(st.just(a), st.one_of(_look_alike(a), nested_json)))
# containers of the leaves that have look-alikes: where "True is 1" hid
_NESTED_NUMBERS = st.recursive(st.sampled_from([True, False, 0, 1, 1.0]),
                               lambda c: st.lists(c, min_size=1, max_size=2)
                               | st.dictionaries(st.sampled_from(["a", "b"]), c, min_size=1, max_size=2),
                               max_leaves=3).filter(lambda v: isinstance(v, (list, dict)))
_NESTED_PAIRS = _NESTED_NUMBERS.flatmap(lambda a: st.tuples(st.just(a), _look_alike(a)))


@settings(max_examples=300, deadline=None)
@given(_PAIRS)
def test_same_is_json_equality_at_every_level(pair):
    a, b = pair
    assert _merge.same_json(a, b) == jsonschema_rs.validator_for({"const": a}).is_valid(b)
    assert (_merge.same_key(a) == _merge.same_key(b)) == _merge.same_json(a, b)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_NESTED_PAIRS, min_size=1, max_size=3))
def test_merged_enums_take_only_values_both_hold(pairs):
    mine, theirs = [a for a, _ in pairs], [b for _, b in pairs]
    tools = _tools({"type": "object", "properties": {"x": {"allOf": [{"enum": mine}, {"enum": theirs}]}}})
    matcher = Matcher(constrain.grammar("llguidance", tools=tools))
    for value in mine + theirs:
        text = _rendered({"x": value})
        assume(text is not None)
        if matcher.accepts(text):
            assert _parser_accepts(text, tools), text


def test_merged_enums_nested_true_is_not_one():
    tools = _tools({"type": "object", "properties": {"x": {"allOf": [{"enum": [{"a": True}, [1]]}, {"enum": [{"a": 1}, [1.0]]}]}}})
    _agree(Exports(tools), tools, [_call("x:{a:true}"), _call("x:{a:1}"), _call("x:[1]"), _call("")])


def _rendered(arguments):
    try:
        text = render_chat([{"role": "assistant", "tool_calls": [{"function": {"name": "t", "arguments": arguments}}]}])
    except UnsafeContentError:
        return None
    return text[text.index("<|tool_call>"):text.index("<tool_call|>") + len("<tool_call|>")]


# --- items and positions no value satisfies ----------------------------------------------------
# Before: `items` no value satisfies dropped the optional property (and refused the tool when it
# was required), though `[]` is valid; a position no value satisfies did the same to `[]`, `[1]`.
def test_items_and_positions_with_no_value_leave_the_shorter_arrays():
    properties, required, texts = {}, [], []
    for i, none in enumerate(NO_VALUE_SCHEMAS):
        properties[f"i{i}"] = {"type": "array", "items": none}
        properties[f"p{i}"] = {"type": "array", "prefixItems": [{"type": "integer"}, none, {"type": "integer"}]}
        properties[f"r{i}"] = {"type": "array", "items": none}
        required.append(f"r{i}")
    tools = _tools({"type": "object", "properties": properties, "required": required, "$defs": NO_VALUE_DEFS})
    exports = Exports(tools)
    all_r = ",".join(f"r{i}:[]" for i in range(len(NO_VALUE_SCHEMAS)))
    for i in range(len(NO_VALUE_SCHEMAS)):
        for body in (f"i{i}:[]", f"i{i}:[1]", f"p{i}:[]", f"p{i}:[1]", f"p{i}:[1,2]", f"p{i}:[1,2,3]"):
            texts.append(_call(",".join(sorted([body, all_r], key=str.lower))))
    _agree(exports, tools, texts + [_call(all_r)])
    assert _parser_accepts(_call(f"i0:[],{all_r}"), tools)  # the agreement above includes acceptance


# --- a schema no value satisfies ---------------------------------------------------------------------
# Before: `{"type": "integer", "const": "a"}` required was refused with "... no value can be written;
# None"; as an optional property (or a union's option) `false` refused the whole tool; a `$ref` to a
# schema with no value, met a second time, was an empty rule.
@pytest.mark.parametrize("none", NO_VALUE_SCHEMAS, ids=lambda s: str(s)[:40])
def test_a_schema_with_no_value_is_refused_required_and_left_out_optional(none):
    required = _tools({"type": "object", "properties": {"x": none}, "required": ["x"], "$defs": NO_VALUE_DEFS})
    with pytest.raises(SchemaError) as error:
        constrain.grammar("llguidance", tools=required)
    message = str(error.value)
    assert message.startswith("tool 't': ") and not message.endswith("None"), message
    optional = _tools({"type": "object", "properties": {"x": none, "y": {"anyOf": [none, {"type": "integer"}]}},
                       "$defs": NO_VALUE_DEFS})
    matcher = Matcher(constrain.grammar("llguidance", tools=optional))
    assert matcher.accepts(_call("")) and matcher.accepts(_call("y:1"))
    assert not matcher.accepts(_call("y:"))  # (a `$ref` met again was an empty rule: `y:` passed)
    assert matcher.accepted_prefix(_call("x:1"))[1] == len("<|tool_call>call:t{")  # refused at the `x`


def test_the_message_names_the_const_and_the_type():
    tools = _tools({"type": "object", "properties": {"x": {"type": "integer", "const": "a"},
                                                     "y": {"type": "string", "enum": [1, True]}}, "required": ["x"]})
    with pytest.raises(SchemaError, match=r"^tool 't': parameters.properties.x: the const 'a' is not of the type 'integer'$"):
        constrain.grammar("llguidance", tools=tools)
    tools[0]["function"]["parameters"]["required"] = ["y"]
    with pytest.raises(SchemaError, match=r"properties.y.enum: no value of the enum is of the type 'string'$"):
        constrain.grammar("llguidance", tools=tools)


# --- an enum or const beside other keywords ---------------------------------------------------------
# Found by the property above: merging `allOf` puts an enum beside `minItems` (an additional property
# `c: {enum: [[]]}` of one object, `{minItems: 3, ...}` of the other); the export took `[]`, which
# validation refuses. The values are now checked against the keywords beside them.
def test_an_enum_beside_other_keywords_keeps_the_values_they_allow():
    tools = _tools({"type": "object", "properties": {
        "e": {"enum": [[], [1, 2, 3]], "minItems": 2},
        "k": {"const": {"a": 1}, "required": ["b"]},
        "o": {"enum": [{"a": 1}, {"a": 1, "b": 2}], "properties": {"b": {"type": "integer"}}, "additionalProperties": False},
        "m": {"allOf": [{"type": "object", "additionalProperties": {"type": "array", "minItems": 3}},
                        {"type": "object", "properties": {"c": {"enum": [[], [1, 2, 3]]}}, "additionalProperties": True}]}}})
    _agree(Exports(tools), tools, [_call(body) for body in (
        "e:[]", "e:[1,2,3]", "k:{a:1}", "o:{a:1}", "o:{a:1,b:2}", "m:{c:[]}", "m:{c:[1,2,3]}", "m:{}")])
    assert not_enforced(read_tools(tools)) == []
