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
from schema_strategies import _distinct_case, as_json_schema, rendered, tools_with_schemas, values  # noqa: E402

from gemma4_lark import GemmaSyntaxError, parse_call  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, not_enforced, tool_call_rules  # noqa: E402
from gemma4_lark.render.safety import UnsafeContentError  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402


def lark_of(tools):
    parsed = read_tools(tools)
    assert not_enforced(parsed) == []  # the strategies only make schemas the rules enforce whole
    try:
        return to_lark(tool_call_rules(parsed, read_tool_choice("auto", parsed)))
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
