"""Properties of the tool-schema rules, run by llguidance's matcher over random schemas:

1. every call the official renderer writes from schema-conforming arguments is accepted;
2. a call made wrong in one place (undeclared name, a required member dropped, an undeclared
   member, a value of the wrong type) is refused;
3. random walks under the token mask end in blocks that `parse_call` reads and whose arguments
   pass jsonschema's validation of the tool's schema.
"""

import copy
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("llguidance")
jsonschema = pytest.importorskip("jsonschema")

from constrain_llg import accepts, matcher, random_walk, to_lark  # noqa: E402
from schema_strategies import (  # noqa: E402
    _distinct_case, _object, as_json_schema, compound, leaf_schemas, rendered, tools_with_schemas, values,
)

from gemma4_lark import GemmaSyntaxError, parse_call  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, not_enforced, tool_call_rules  # noqa: E402
from gemma4_lark.render.safety import UnsafeContentError  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402


def lark_of(tools):
    parsed = read_tools(tools)
    assert not_enforced(parsed) == []  # the strategies only make schemas the rules enforce whole
    try:
        return to_lark(tool_call_rules(parsed, read_tool_choice("auto", parsed), balanced=True))  # (what grammar() gives llguidance)
    except SchemaError as error:  # e.g. a required const holding a control token: no call can be written
        assume("no value can be written" not in str(error))
        raise


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


@SETTINGS
@given(tools_with_schemas(), st.data())
def test_rendered_calls_are_accepted(tools, data):
    assume(_distinct_case(tools))
    lark = lark_of(tools)
    for tool in tools:
        function = tool["function"]
        arguments = data.draw(values(function["parameters"], function["parameters"]))
        try:
            text = rendered(function["name"], arguments)
        except UnsafeContentError:
            continue  # a string the renderer refuses (a control token in it): no call to check
        assert accepts(lark, text), text


@SETTINGS
@given(tools_with_schemas(), st.data())
def test_calls_wrong_in_one_place_are_refused(tools, data):
    assume(_distinct_case(tools))
    lark = lark_of(tools)
    function = data.draw(st.sampled_from(tools))["function"]
    parameters = function["parameters"]
    arguments = data.draw(values(parameters, parameters))
    try:
        good = rendered(function["name"], arguments)
    except UnsafeContentError:
        assume(False)
    wrong = []
    wrong.append(good.replace("call:" + function["name"] + "{", "call:" + function["name"] + "x{", 1))
    for key in parameters["required"]:
        wrong.append(rendered(function["name"], {k: v for k, v in arguments.items() if k != key}))
    undeclared = dict(arguments)
    undeclared["zz_undeclared"] = 1  # additionalProperties is absent at the top: false
    wrong.append(rendered(function["name"], undeclared))
    for key, sub in parameters["properties"].items():
        if key in arguments and isinstance(sub, dict) and sub.get("type") in ("integer", "boolean", "null"):
            retyped = dict(arguments)
            retyped[key] = "text"
            wrong.append(rendered(function["name"], retyped))
    for text in wrong:
        assert not accepts(lark, text), text


def _requires_a_key_among_open_ones(schema):
    if isinstance(schema, list):
        return any(_requires_a_key_among_open_ones(s) for s in schema)
    if not isinstance(schema, dict):
        return False
    if schema.get("required") and schema.get("additionalProperties") not in (None, False):
        return True
    return any(_requires_a_key_among_open_ones(s) for s in schema.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tools_with_schemas(), st.integers(0, 2**32))
def test_random_walks_parse_and_validate(tools, seed):
    assume(_distinct_case(tools))
    lark = lark_of(tools)
    rng = random.Random(seed)
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    finished = 0
    for _ in range(4):
        text = random_walk(matcher(lark), rng)
        if text is None:
            continue
        finished += 1
        try:
            block = parse_call(text)
        except GemmaSyntaxError as error:
            # the one thing the grammar's FLOAT takes that the decoder refuses: beyond a double
            assert "beyond a double" in str(error), (text, error)
            continue
        assert block.name in by_name
        jsonschema.validate(block.arguments, as_json_schema(copy.deepcopy(by_name[block.name])))
    # Walks end, unless the schema is large, or an object takes undeclared keys and requires one:
    # once a walk writes an undeclared key first, it ends only by spelling the required key's name
    # exactly, which random bytes seldom do.
    assert finished or len(lark) > 2000 or _requires_a_key_among_open_ones(tools)


# --- unions of objects ----------------------------------------------------------------------
# An option that is one regular rule (a closed object of scalar members, `{a:2,b:1}`) beside one
# that is not (`{a: any value}`): llguidance's greedy lexer, offered the whole first option as one
# lexeme, ran it past the other's `{`, `a` and `:` and refused `{a:3}`. Structure is never one
# lexeme now (`ir.Grammar.structure`); these failed before, each valid call refused.
_CLOSED = {"type": "object", "properties": {"a": {"const": 2}, "b": {"const": 1}}, "required": ["a", "b"],
           "additionalProperties": False}
_D = '<|"|>'


@pytest.mark.parametrize("a, bodies", [
    ({}, ["{a:2}", "{a:3}", "{a:[1]}", "{a:{b:1}}", "{a:" + _D + "s" + _D + "}"]),
    ({"type": "array"}, ["{a:[1]}", "{a:[]}"]),
    ({"type": "object"}, ["{a:{}}", "{a:{a:2}}"]),
    ({"anyOf": [{"type": "string"}, {"type": "object"}]}, ["{a:" + _D + "s" + _D + "}", "{a:{a:2,b:1}}"]),
    ({"$ref": "#"}, ["{a:{x:{a:2,b:1}}}", "{a:{x:{a:{x:{a:2,b:1}}}}}"]),
])
def test_a_union_beside_a_closed_object_takes_its_other_option(a, bodies):
    parameters = {"type": "object", "properties": {"x": {"anyOf": [_CLOSED, {"type": "object", "properties": {"a": a},
                                                                               "required": ["a"]}]}},
                  "required": ["x"]}
    lark = lark_of([{"type": "function", "function": {"name": "f", "parameters": parameters}}])
    assert accepts(lark, "<|tool_call>call:f{x:{a:2,b:1}}<tool_call|>")
    for body in bodies:
        assert accepts(lark, "<|tool_call>call:f{x:" + body + "}<tool_call|>"), body
    assert not accepts(lark, "<|tool_call>call:f{x:{b:1}}<tool_call|>")  # in no option


# A constant (or an enum) that is an object or an array, beside a schema of the same shape: its
# text was one literal lexeme (`{a:1}` beside `{`), which the lexer followed past the other's
# `{`, `a` and `:`; found by a review of the change above. Each mark is a literal of its own now.
@pytest.mark.parametrize("x, bodies", [
    ({"anyOf": [{"const": {"a": 1}}, {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]},
     ["{a:1}", "{a:2}", "{a:12}"]),
    ({"anyOf": [{"const": [1, 2]}, {"type": "array", "items": {"const": 1}}]}, ["[1,2]", "[1]", "[1,1]"]),
    ({"anyOf": [{"const": [1, 2]}, {"type": "array", "items": {"enum": [1, 3]}}]}, ["[1,2]", "[1,3]"]),
    ({"anyOf": [{"const": {"a": "s"}}, {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}]},
     ["{a:" + _D + "s" + _D + "}", "{a:" + _D + "t" + _D + "}"]),
    ({"type": "array", "items": {"anyOf": [{"enum": [{"a": 1}, [1]]}, {"type": "object"}, {"type": "array"}]}},
     ["[{a:1},[1],{a:2},[2],{}]"]),
])
def test_a_constant_object_or_array_beside_its_shape_takes_both(x, bodies):
    lark = lark_of([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": x}, "required": ["x"]}}}])
    for body in bodies:
        assert accepts(lark, "<|tool_call>call:f{x:" + body + "}<tool_call|>"), body


# options that share keys (`a`, `ab`), with scalar, constant and open members, closed or not, and
# constants and enums that are objects or arrays
_SHARED_KEYS = st.sampled_from(["a", "ab", "b"])
_CONSTANTS = st.recursive(st.integers(-20, 20) | st.sampled_from(["s", "a,b", True, None]),
                          lambda c: st.lists(c, max_size=2) | st.dictionaries(_SHARED_KEYS, c, max_size=2), max_leaves=4)
_MEMBERS = st.one_of(leaf_schemas, st.just({}), compound(leaf_schemas), _CONSTANTS.map(lambda v: {"const": v}))
_OBJECTS = st.builds(_object, st.dictionaries(_SHARED_KEYS, _MEMBERS, min_size=1, max_size=3),
                     st.lists(st.booleans(), min_size=4, max_size=4), st.sampled_from(["absent", False, True]))
_OPTIONS = _OBJECTS | _CONSTANTS.map(lambda v: {"const": v}) | st.lists(_CONSTANTS, min_size=1, max_size=3).map(
    lambda v: {"enum": v}) | st.just({"type": "array"}) | st.just({"type": "object"})


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(options=st.lists(_OPTIONS, min_size=2, max_size=3), nested=st.booleans(), data=st.data())
def test_every_option_of_a_union_of_objects_is_accepted(options, nested, data):
    union = {"anyOf": options}
    x = {"type": "array", "items": union} if nested else union
    parameters = {"type": "object", "properties": {"x": x}, "required": ["x"]}
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    assume(_distinct_case(tools))
    lark = lark_of(tools)
    arguments = data.draw(values(parameters, parameters))
    try:
        text = rendered("f", arguments)
    except UnsafeContentError:
        assume(False)
    assert accepts(lark, text), text
