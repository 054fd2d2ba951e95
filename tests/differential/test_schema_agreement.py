"""One meaning of JSON Schema for the grammar, typing and validation (issue 17, section 2).

The property, over random schemas in every dialect the readers meet (nullable beside a union, `$ref`
with siblings, `allOf`, a type beside an enum, integral-float bounds, upper-case Gemma types, "at
least one of these arguments"): a call the typed grammar accepts (walked under llguidance's mask)
is valid for the validator, unless `not_enforced()` says why not. And one test per family."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

pytest.importorskip("llguidance")
pytest.importorskip("jsonschema_rs")

from constrain_helpers import Matcher  # noqa: E402
from schema_strategies import _distinct_case, schemas  # noqa: E402

from gemma4_incremental import parse_output  # noqa: E402
from gemma4_lark.constrain.dialects import to_llguidance  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, not_enforced, tool_call_rules  # noqa: E402
from gemma4_lark.schema.normal import normalize  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402

D = '<|"|>'
SETTINGS = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _upper(schema):
    """Gemma's spelling: upper-case type names."""
    if isinstance(schema, dict):
        out = {k: _upper(v) for k, v in schema.items()}
        if isinstance(out.get("type"), str):
            out["type"] = out["type"].upper()
        return out
    if isinstance(schema, list):
        return [_upper(s) for s in schema]
    return schema


def _dialects(children):
    """The shapes the three readers used to read three ways."""
    return st.one_of(
        st.builds(lambda options: {"nullable": True, "anyOf": options}, st.lists(children, min_size=2, max_size=3)),
        st.builds(lambda a, b: {"allOf": [a, b]}, children, children),
        st.builds(lambda s: {"allOf": [s]}, children),
        st.builds(lambda kind, values: {"type": kind, "enum": values}, st.sampled_from(["string", "integer", "boolean"]),
                  st.lists(st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b"])),
                           min_size=1, max_size=4)),
        st.builds(lambda items, high: {"type": "array", "items": items, "maxItems": high, "minItems": 1.0},
                  children, st.sampled_from([1.0, 2.0, 3])),
        children.map(_upper),
        st.builds(lambda props, extra: {"type": "object", "properties": {"a": props, "b": {"type": "integer"}},
                                        "required": extra, "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
                                        "additionalProperties": False},
                  children, st.sampled_from([[], ["b"]])),
        st.builds(lambda options: {"type": "object", "required": ["k"], "properties": {"k": {"type": "string"}},
                                   "anyOf": options, "additionalProperties": False},
                  st.lists(st.builds(lambda v: {"properties": {"k": {"const": v}}}, st.sampled_from(["x", "y", "z"])),
                           min_size=2, max_size=3)),
    )


hostile = st.recursive(schemas, _dialects, max_leaves=6)


@st.composite
def hostile_tools(draw):
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "c", "zz", "k"]), hostile, max_size=3))
    parameters = {"type": "object", "properties": props, "required": [k for k in props if draw(st.booleans())]}
    if draw(st.booleans()):
        # a definition used by reference with siblings (an intersection), possibly recursive
        parameters["$defs"] = {"node": {"type": "object", "properties": {
            "v": draw(hostile), "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}}
        props["linked"] = {"$ref": "#/$defs/node", "required": ["v"], "description": "a list"}
    return [{"type": "function", "function": {"name": "t", "parameters": parameters}}]


COUNTS = {"examples": 0, "calls": 0, "checked": 0, "excused": 0}


@SETTINGS
@given(hostile_tools(), st.integers(0, 2**32))
def test_what_the_typed_grammar_accepts_the_validator_accepts(tools, seed):
    assume(_distinct_case(tools))
    parsed = read_tools(tools)
    try:
        grammar = tool_call_rules(parsed, read_tool_choice("auto", parsed), balanced=True)
    except SchemaError:
        return  # no call satisfies the schema, as the error says (a family tested below)
    COUNTS["examples"] += 1
    excuses = not_enforced(parsed)
    matcher = Matcher(to_llguidance(grammar))
    rng = random.Random(seed)
    for _ in range(3):
        text = matcher.random_walk(rng)
        if text is None:
            continue
        COUNTS["calls"] += 1
        out = parse_output(text, tools=tools, strict=True)
        # strict: a call that fails validation is a `schema` error; anything else is a bug
        assert all(e.code == "schema" for e in out.errors), (text, out.errors)
        problems = [e.diagnostics for e in out.errors]
        if excuses:
            COUNTS["excused"] += 1
            continue
        COUNTS["checked"] += 1
        assert not problems, (text, problems, normalize(tools[0]["function"]["parameters"]))


def test_the_property_ran_on_enough_examples():
    # hypothesis runs the property above first in this module; this records what it saw
    if COUNTS["examples"] == 0:
        pytest.skip("run with the property above")
    print(f"\nagreement: {COUNTS}")
    assert COUNTS["checked"] > 0


# --- one test per family ------------------------------------------------------------------------
def _typed(tools):
    parsed = read_tools(tools)
    return Matcher(to_llguidance(tool_call_rules(parsed, read_tool_choice("auto", parsed), balanced=True)))


def _tool(parameters, name="t"):
    return [{"type": "function", "function": {"name": name, "parameters": parameters}}]


def _call(body, name="t"):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def _errors(text, tools):
    out = parse_output(text, tools=tools)
    assert not out.errors, out.errors
    return [d.code for d in out.calls[0].diagnostics if d.severity == "error"]


def test_nullable_beside_anyof_is_null_for_all_three():
    tools = _tool({"type": "object", "properties": {"n": {"nullable": True, "anyOf": [{"type": "integer"}, {"type": "boolean"}]}}})
    assert _typed(tools).accepts(_call("n:null"))
    out = parse_output(_call("n:null"), tools=tools, strict=True)
    assert out.calls[0].arguments == {"n": None} and out.calls[0].diagnostics == []


def test_siblings_are_an_intersection_not_a_shallow_merge():
    tools = _tool({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a"], "anyOf": [{"required": ["b"]}, {"properties": {"c": {"type": "string"}}}],
                   "additionalProperties": False})
    m = _typed(tools)
    assert not m.accepts(_call("b:1"))  # the outer `required` holds in every option
    assert m.accepts(_call("a:1,b:1"))
    assert m.accepts(_call("a:2"))  # the second option (a union of objects: structure is never one lexeme)
    # `c` is an additional property where the outer object takes none:
    assert not m.accepts(_call("a:2,c:" + D + "x" + D))
    assert _errors(_call("a:2,c:" + D + "x" + D), tools) == ["schema"]
    single = _tool({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                    "allOf": [{"properties": {"b": {"type": "integer"}}}]})
    assert not _typed(single).accepts(_call("b:1"))


def test_all_of_two_objects_allows_the_keys_both_allow():
    # found by the agreement property above: `A0`, a property of one part, is an additional
    # property of the other, which takes none
    tools = _tool({"type": "object", "properties": {"a": {"allOf": [
        {"type": "object", "properties": {"A0": {"type": "string"}, "n": {"type": "integer"}}},
        {"type": "object", "properties": {"ab": {"type": "string"}, "n": {"minimum": 0}}, "required": ["ab"],
         "additionalProperties": False}]}}})
    m = _typed(tools)
    assert m.accepts(_call("a:{ab:" + D + "x" + D + "}")) and m.accepts(_call("a:{ab:" + D + "x" + D + ",n:1}"))
    assert not m.accepts(_call("a:{A0:" + D + "y" + D + ",ab:" + D + "x" + D + "}"))
    assert not m.accepts(_call("a:{ab:" + D + "x" + D + ",n:" + D + "1" + D + "}"))  # n: both schemas hold
    closed = _tool({"type": "object", "required": ["a"], "properties": {"a": {"allOf": [
        {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
        {"type": "object", "additionalProperties": False}]}}})
    with pytest.raises(SchemaError, match="`k` is required"):
        tool_call_rules(read_tools(closed), read_tool_choice("auto", read_tools(closed)))


def test_ref_siblings_type_beside_enum_and_float_bounds_are_enforced_or_listed():
    tools = _tool({"type": "object", "properties": {
        "r": {"$ref": "#/$defs/p", "required": ["x"]},
        "e": {"type": "string", "enum": ["a", 1, None]},
        "l": {"type": "array", "items": {"type": "integer"}, "maxItems": 2.0}},
        "$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}}})
    m = _typed(tools)
    assert not m.accepts(_call("r:{}")) and m.accepts(_call("r:{x:1}"))
    assert not m.accepts(_call("e:1")) and not m.accepts(_call("e:null")) and m.accepts(_call(f"e:{D}a{D}"))
    assert not m.accepts(_call("l:[1,2,3]")) and m.accepts(_call("l:[1,2]"))
    assert not_enforced(read_tools(tools)) == []
    assert _errors(_call("r:{x:1},e:" + D + "a" + D + ",l:[1,2]"), tools) == []


def test_an_unproductive_ref_cycle_is_refused_with_its_place():
    tools = _tool({"type": "object", "properties": {"t": {"$ref": "#/$defs/t"}}, "required": ["t"],
                   "$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}, "minItems": 1}}})
    parsed = read_tools(tools)
    with pytest.raises(SchemaError, match=r"#/\$defs/t.*no finite value"):
        tool_call_rules(parsed, read_tool_choice("auto", parsed))
    # optional: the property is pruned, the rest is kept
    optional = _tool({"type": "object", "properties": {"t": {"$ref": "#/$defs/t"}, "u": {"type": "integer"}},
                      "$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}, "minItems": 1}}})
    m = _typed(optional)
    assert m.accepts(_call("u:1")) and not m.accepts(_call("t:[[")) and not m.accepts(_call("t:[]"))


def test_gemma_upper_case_types_are_read_alike_by_the_parser_and_the_exports():
    tools = _tool({"type": "OBJECT", "properties": {"s": {"type": "STRING"}, "n": {"type": "INTEGER"}}, "required": ["s"]})
    assert _typed(tools).accepts(_call(f"n:2,s:{D}x{D}")) and not _typed(tools).accepts(_call("n:2"))
    assert _errors(_call(f"n:2,s:{D}x{D}"), tools) == []
    assert _errors(_call("n:2"), tools) == ["schema"]


def test_integral_float_for_an_integer_and_no_parameters():
    tools = _tool({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert _typed(tools).accepts(_call("n:3.0")) and not _typed(tools).accepts(_call("n:3.5"))
    assert parse_output(_call("n:3.0"), tools=tools, strict=True).calls[0].arguments == {"n": 3}
    # no parameters: any arguments, for the grammar as for the parser
    bare = [{"type": "function", "function": {"name": "t"}}]
    assert _typed(bare).accepts(_call("")) and _typed(bare).accepts(_call(f"a:1,{D}b c{D}:[null]"))
    assert _errors(_call(""), bare) == [] and _errors(_call("a:1"), bare) == []


def test_at_least_one_argument_is_enforced_in_linear_size():
    def tools(n):
        keys = [f"p{i}" for i in range(n)]
        return read_tools(_tool({"type": "object", "properties": {k: {"type": "string"} for k in keys},
                                 "anyOf": [{"required": [k]} for k in keys]}))
    small, large = (tool_call_rules(tools(n), read_tool_choice("auto", tools(n))) for n in (8, 128))
    assert len(large.rules) < 17 * len(small.rules)  # 16x the keys: linear, never 256x
    m = Matcher(to_llguidance(small))
    assert not m.accepts(_call("")) and m.accepts(_call(f"p3:{D}x{D}")) and m.accepts(_call(f"p0:{D}x{D},p7:{D}y{D}"))


def test_anyof_with_a_sibling_oneof_nested_is_linear():
    def tools(depth):
        schema = {"type": "string"}
        for _ in range(depth):
            schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], "oneOf": [schema]}
        return read_tools(_tool({"type": "object", "properties": {"a": schema}}))
    counts = []
    for depth in (4, 30):
        parsed = tools(depth)
        counts.append(len(tool_call_rules(parsed, read_tool_choice("auto", parsed)).rules))
    assert counts[1] <= 8 * counts[0]  # 2^30 before; a constant per level now
