"""Properties of decoding against the declared tools, for random schemas and values.

* A value that satisfies its schema, rendered canonically (`render_tool_call`), decodes with the
  tools to the same value, with no `schema` finding, in both modes.
* A string value written without delimiters comes back as the original string; a `coerced`
  finding covers it exactly when its natural reading is not that string.
* Lenient: an undelimited string with commas for a string field comes back whole (`string-run`).
"""

import math

from hypothesis import HealthCheck, given, settings, strategies as st

from gemma4_incremental import parse_output
from gemma4_lark.render.omp import render_tool_call
from gemma4_lark.schema.coerce import json_type

D = '<|"|>'
KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True)
LEAVES = st.sampled_from([
    {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
    {"type": ["string", "null"]}, {"type": "string", "nullable": True}, {"type": "integer", "minimum": 0},
    {"enum": ["a", "b", 1, None]}, {"type": "string", "enum": ["x", "y"]}, {"$ref": "#/$defs/word"},
])
DEFS = {"word": {"type": "string"}}


def _containers(inner):
    return st.one_of(
        inner.map(lambda items: {"type": "array", "items": items}),
        st.dictionaries(KEYS, inner, max_size=4).map(
            lambda props: {"type": "object", "properties": props, "required": sorted(props),
                           "additionalProperties": False}),
        st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
    )


SCHEMAS = st.recursive(LEAVES, _containers, max_leaves=12)
TEXT = st.text(st.sampled_from("abcxyz019 ._-!?\n"), max_size=12)


def values_for(schema):
    """Values that satisfy `schema` (as its keywords above define it)."""
    if "$ref" in schema:
        return TEXT
    if "anyOf" in schema:
        return st.one_of([values_for(b) for b in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema["type"]
    if kind == ["string", "null"] or schema.get("nullable"):
        return st.one_of(TEXT, st.none())
    if kind == "string":
        return TEXT
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -10**12), max_value=10**12)
    if kind == "number":
        return st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**6, 10**6))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(values_for(schema["items"]), max_size=4)
    return st.fixed_dictionaries({k: values_for(s) for k, s in schema["properties"].items()})


def same(a, b) -> bool:
    """JSON equality: types agree (an int and a float of one value agree: a number)."""
    numbers = ("integer", "number")
    if json_type(a) != json_type(b) and not (json_type(a) in numbers and json_type(b) in numbers):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or a == b
    return a == b


@st.composite
def calls(draw):
    properties = draw(st.dictionaries(KEYS, SCHEMAS, min_size=1, max_size=5))
    parameters = {"type": "object", "properties": properties, "required": sorted(properties),
                  "additionalProperties": False, "$defs": DEFS}
    arguments = draw(st.fixed_dictionaries({k: values_for(s) for k, s in properties.items()}))
    return parameters, arguments


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls(), st.booleans())
def test_a_valid_value_rendered_canonically_decodes_to_itself(case, strict):
    parameters, arguments = case
    text = render_tool_call("t", arguments)
    parsed = parse_output(text, tools=[{"name": "t", "parameters": parameters}], strict=strict)
    assert not parsed.errors, parsed.errors
    (found,) = parsed.calls
    assert same(found.arguments, arguments), (found.arguments, arguments)
    assert not [d for d in found.diagnostics if d.code == "schema"], found.diagnostics


SCALAR_LOOKING = st.one_of(
    st.integers(0, 10**6).map(str), st.integers(0, 999).map(lambda n: "0" + str(n)),
    st.sampled_from(["1.10", "-0.50", "3e2", "true", "false", "True", "False", "null", "None", "none", "42"]),
)
BARE_WORDS = st.from_regex(r"[a-z][a-z ]{0,8}[a-z]", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, st.tuples(st.one_of(SCALAR_LOOKING, BARE_WORDS), st.booleans()), min_size=1,
                       max_size=6), st.booleans())
def test_undelimited_strings_come_back_as_written(members, strict):
    parameters = {"type": "object", "properties": {k: {"type": "string"} for k in members}}
    body = ",".join(f"{k}:{v}" if bare else f"{k}:{D}{v}{D}" for k, (v, bare) in members.items())
    text = f"<|tool_call>call:t{{{body}}}<tool_call|>"
    parsed = parse_output(text, tools=[{"name": "t", "parameters": parameters}], strict=strict)
    (found,) = parsed.calls
    assert found.arguments == {k: v for k, (v, _) in members.items()}
    coerced = sorted(found.raw[d.pos:d.end] for d in found.diagnostics if d.code == "coerced")
    natural = parse_output(text).calls[0].arguments
    expected = sorted(v for k, (v, bare) in members.items() if bare and natural[k] != v or
                      bare and type(natural[k]) is not str)
    assert coerced == expected
    assert [d.code for d in found.diagnostics if d.code != "coerced"] == []


RUN_TEXT = st.from_regex(r"[a-z0-9][a-z0-9 ,.!?\n-]{0,20}[a-z0-9.!?]", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, RUN_TEXT, min_size=1, max_size=5), st.booleans())
def test_lenient_string_runs_bring_back_undelimited_strings_with_commas(members, closed):
    parameters = {"type": "object", "properties": {k: {"type": "string"} for k in members}}
    if closed:
        parameters["additionalProperties"] = False
    body = ",".join(f"{k}:{v}" for k, v in members.items())
    text = f"<|tool_call>call:t{{{body}}}<tool_call|>"
    parsed = parse_output(text, tools=[{"name": "t", "parameters": parameters}])
    (found,) = parsed.calls
    assert found.arguments == members
    runs = sorted(found.raw[d.pos:d.end] for d in found.diagnostics if d.code == "string-run")
    assert runs == sorted(v for v in members.values() if "," in v)


PIECES = [
    "Sure. ", "<|channel>thought\nthink<channel|>", '<|tool_call>call:t{a:02134,b:True}<tool_call|>',
    "<|tool_call>call:nope{a:1}<tool_call|>", "<|tool_call>call:t{a:hello, world,b:false}<tool_call|>",
    "<|tool_call>call:t{a:1,}<tool_call|>", "call:t{a:7}", "<|tool_call>call:t{b:x}", "<turn|>", "text < more",
]
TOOL = {"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                                    "required": ["a"]}}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=6), st.lists(st.integers(1, 9), min_size=1, max_size=40),
       st.booleans(), st.sampled_from(["auto", "required", "none"]))
def test_decoding_against_tools_does_not_depend_on_the_chunking(pieces, cuts, strict, choice):
    from gemma4_incremental import StreamParser
    from gemma4_incremental.output import merge_deltas
    from stream_helpers import counter_ids

    text = "".join(pieces)
    whole = parse_output(text, tools=[TOOL], tool_choice=choice, strict=strict, id_factory=counter_ids())
    parser = StreamParser(tools=[TOOL], tool_choice=choice, strict=strict, id_factory=counter_ids())
    events, i, k = [], 0, 0
    while i < len(text):
        step = cuts[k % len(cuts)]
        events += parser.feed(text[i:i + step])
        i, k = i + step, k + 1
    events += parser.flush()
    assert merge_deltas(events) == merge_deltas(whole.events)
    assert parser.diagnostics == whole.diagnostics
    spans = [e.span for e in events]
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:])) and (not spans or spans[-1][1] == len(text))
    for event in events:
        if event.type == "tool_call_error":
            assert event.code in ("syntax", "unclosed", "lossy", "unknown-tool", "tool-choice", "schema")
        if event.type in ("tool_call_start", "tool_call_end"):
            assert event.name == "t" and choice != "none"
