"""The tool-schema properties of tests/properties/test_constrain_tools_llguidance.py, run by
`xgrammar.GrammarMatcher` on `constrain.grammar("xgrammar", tools=...)` and on
`constrain.structural_tag(...)` compiled by xgrammar itself; and how xgrammar's built-in
`gemma_4` structural tag differs on the same tools (compare_builtin.py prints a summary)."""

import copy
import random

import jsonschema
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schema_strategies import _distinct_case, as_json_schema, rendered, tools_with_schemas, values
from xgr_harness import accepts, compiled, compiled_tag, random_walk

from gemma4_lark import GemmaSyntaxError, constrain, parse_call
from gemma4_lark.render.safety import UnsafeContentError

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])


@SETTINGS
@given(tools_with_schemas(), st.data())
def test_rendered_calls_are_accepted(tools, data):
    assume(_distinct_case(tools))
    grammar = compiled(constrain.grammar("xgrammar", tools=tools))
    tag = compiled_tag(constrain.structural_tag(tools, thinking=False))
    for tool in tools:
        function = tool["function"]
        arguments = data.draw(values(function["parameters"], function["parameters"]))
        try:
            text = rendered(function["name"], arguments)
        except UnsafeContentError:
            continue
        assert accepts(grammar, text), text
        assert accepts(tag, "Calling." + text + " Done.", complete=False), text


@SETTINGS
@given(tools_with_schemas(), st.data())
def test_calls_wrong_in_one_place_are_refused(tools, data):
    assume(_distinct_case(tools))
    grammar = compiled(constrain.grammar("xgrammar", tools=tools))
    function = data.draw(st.sampled_from(tools))["function"]
    parameters = function["parameters"]
    arguments = data.draw(values(parameters, parameters))
    try:
        good = rendered(function["name"], arguments)
    except UnsafeContentError:
        assume(False)
    wrong = [good.replace("call:" + function["name"] + "{", "call:" + function["name"] + "x{", 1),
             rendered(function["name"], {**arguments, "zz_undeclared": 1})]
    for key in parameters["required"]:
        wrong.append(rendered(function["name"], {k: v for k, v in arguments.items() if k != key}))
    for text in wrong:
        assert not accepts(grammar, text), text


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tools_with_schemas(), st.integers(0, 2**32))
def test_random_walks_parse_and_validate(tools, seed):
    assume(_distinct_case(tools))
    grammar = compiled(constrain.grammar("xgrammar", tools=tools))
    rng = random.Random(seed)
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for _ in range(3):
        text = random_walk(grammar, rng)
        if text is None:
            continue
        try:
            block = parse_call(text)
        except GemmaSyntaxError as error:
            assert "beyond a double" in str(error), (text, error)
            continue
        jsonschema.validate(block.arguments, as_json_schema(copy.deepcopy(by_name[block.name])))


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]}, "location": {"type": "string"}},
    "required": ["location"]}}}
D = '<|"|>'


def test_builtin_gemma_4_tag_differences():
    """What xgrammar's own `gemma_4` tag does with the same tool, pinned so that a release that
    changes it is noticed (docs/constrained-decoding.md, "Structural tags and servers")."""
    import xgrammar as xgr

    builtin = compiled_tag(xgr.get_model_structural_tag("gemma_4", tools=[WEATHER], reasoning=False).model_dump())
    ours = compiled_tag(constrain.structural_tag([WEATHER], thinking=False))
    sorted_keys = f"<|tool_call>call:get_weather{{location:{D}Paris{D},unit:{D}c{D}}}<tool_call|>"  # the template's
    schema_order = f"<|tool_call>call:get_weather{{unit:{D}c{D},location:{D}Paris{D}}}<tool_call|>"
    spaced = f"<|tool_call>call:get_weather{{location: {D}Paris{D}}}<tool_call|>"
    for text in (sorted_keys, schema_order, spaced):
        parse_call(text)
    assert accepts(ours, sorted_keys, complete=False) and not accepts(builtin, sorted_keys, complete=False)
    assert accepts(builtin, schema_order, complete=False) and not accepts(ours, schema_order, complete=False)
    assert accepts(builtin, spaced, complete=False) and not accepts(ours, spaced, complete=False)
    # with reasoning, the built-in makes the thought compulsory; ours makes it optional
    with_thought = xgr.get_model_structural_tag("gemma_4", tools=[WEATHER]).model_dump()["format"]["elements"][0]
    assert with_thought["type"] == "tag"
    assert constrain.structural_tag([WEATHER])["format"]["elements"][0]["type"] == "optional"
