"""Decoding against the declared tools, attacked: hostile schemas (unions sharing branches through
`$ref`s, huge enums, deep nesting, anchors), a JSON-quoted key after a string run, and the bounds
of the compiled-tools cache. Complexity guards compare sizes within one run, never absolute times."""


import pytest

import gemma4_lark as g
from gemma4_incremental import parse_output
from gemma4_lark.schema import registry
from gemma4_lark.tools import ShapeError
from timing import best_cpu_seconds

D = "<|\"|>"
GROWTH = 4
MAX_RATIO = 8.0  # linear: about 4 (or 1 where the size does not matter); quadratic: 16; exponential: more


def _call(body, name="t"):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def _one(text, tools, **options):
    parsed = parse_output(text, tools=tools, **options)
    assert not parsed.errors, parsed.errors
    (found,) = parsed.calls
    return found


def _union_dag(depth: int, leaf: dict, key: str = "anyOf"):
    """`depth` unions, each of two `$ref`s to the next: a schema of `depth` nodes with 2**depth paths."""
    defs = {f"x{i}": {key: [{"$ref": f"#/$defs/x{i + 1}"}, {"$ref": f"#/$defs/x{i + 1}"}]} for i in range(depth)}
    defs[f"x{depth}"] = leaf
    return registry.compile_tools([{"name": "t", "parameters": {
        "type": "object", "properties": {"a": {"$ref": "#/$defs/x0"}}, "$defs": defs}}])


@pytest.mark.parametrize("key, leaf, body, expected", [
    ("anyOf", {"type": "string"}, "a:5", "5"),
    ("allOf", {"type": "string"}, "a:5", "5"),
    ("allOf", {"type": "object", "properties": {"b": {"type": "string"}}}, "a:{b:5}", {"b": "5"}),
])
def test_unions_sharing_branches_through_refs_are_read_once_per_schema_not_per_path(key, leaf, body, expected):
    small, large = _union_dag(6, leaf, key), _union_dag(14, leaf, key)  # 1.3x the schema, 256x the paths
    for tools in (small, large):
        found = _one(_call(body), tools)
        assert found.arguments == {"a": expected} and [d.code for d in found.diagnostics] == ["coerced"]
    small_time = best_cpu_seconds(lambda: parse_output(_call(body), tools=small))
    ratio = best_cpu_seconds(lambda: parse_output(_call(body), tools=large)) / max(small_time, 1e-3)
    assert ratio < MAX_RATIO, f"{key}: 256x the paths through the unions took {ratio:.1f}x the time"


def test_a_huge_enum_costs_once_per_call_not_once_per_value():
    # n bare integers against an enum of n strings: each is typed by the enum ("7"); the cost must
    # grow with n + n, not n * n
    def case(n):
        tools = registry.compile_tools([{"name": "t", "parameters": {"type": "object", "properties": {
            "a": {"type": "array", "items": {"enum": [str(i) for i in range(n)]}}}}}])
        return tools, _call("a:[" + ",".join(str(i) for i in range(n)) + "]")

    size = 300
    small, large = case(size), case(size * GROWTH)
    found = _one(large[1], large[0])
    assert found.arguments["a"][:3] == ["0", "1", "2"] and "schema" not in [d.code for d in found.diagnostics]
    small_time = best_cpu_seconds(lambda: parse_output(small[1], tools=small[0]))
    ratio = best_cpu_seconds(lambda: parse_output(large[1], tools=large[0])) / max(small_time, 1e-3)
    assert ratio < MAX_RATIO, f"{GROWTH}x the values and the enum took {ratio:.1f}x the time"


@pytest.mark.parametrize("enum, lexeme, expected", [
    ([*map(str, range(20)), 1, True, None], "1", 1),  # the natural reading, in the enum
    ([*map(str, range(20)), True], "1", "1"),       # True is not 1
    ([*map(str, range(20)), 1.0], "1", 1),          # 1 is 1.0
    ([*map(str, range(20)), [1], {"a": 1}, True], "True", True),
    ([*map(str, range(20)), None], "None", None),
])
def test_a_long_enum_with_mixed_types_compares_as_json_does(enum, lexeme, expected):
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"a": {"enum": enum}}}}]
    found = _one(_call(f"a:{lexeme}"), tools)
    assert found.arguments == {"a": expected} and type(found.arguments["a"]) is type(expected)
    assert "schema" not in [d.code for d in found.diagnostics]


def test_a_ref_to_an_anchor_is_not_read_as_the_root():
    # `#item` names the schema whose $anchor is "item", not the root: its `n` is an integer, the
    # root's a string. Anchors are not resolved (docs/schema.md lists the local refs that are), so
    # the value keeps its natural reading, which is valid; never the root's typing.
    tools = [{"name": "t", "parameters": {
        "type": "object", "properties": {"a": {"$ref": "#item"}, "n": {"type": "string"}},
        "$defs": {"item": {"$anchor": "item", "type": "object", "properties": {"n": {"type": "integer"}}}}}}]
    found = _one(_call("a:{n:01}"), tools)
    assert found.arguments == {"a": {"n": 1}} and found.diagnostics == []


@pytest.mark.parametrize("quote", ['"', "'"])
@pytest.mark.parametrize("closed", [True, False])
def test_a_string_run_stops_at_a_quoted_declared_key(quote, closed):
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {
        "a": {"type": "string"}, "n": {"type": "integer"}}, "additionalProperties": closed}}]
    found = _one(_call(f"{quote}a{quote}:hello, world,{quote}n{quote}:2"), tools)
    assert found.arguments == {"a": "hello, world", "n": 2}
    assert "schema" not in [d.code for d in found.diagnostics]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_tools_nested_too_deeply_are_a_shape_error(depth):
    schema = {"type": "string"}
    for _ in range(depth):
        schema = {"anyOf": [schema]}
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"a": schema}}}]
    with pytest.raises(ShapeError, match="nest too deeply"):
        parse_output(_call("a:1"), tools=tools)
    with pytest.raises(ShapeError, match="nest too deeply"):
        g.validate(_call("a:1"), tools=tools)


def test_the_cache_keeps_no_huge_tool_list():
    small = [{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]
    huge = [{"name": "t", "description": "d" * (registry._CACHE_MAX_CHARS + 1)}]
    assert registry.compile_tools(small) is registry.compile_tools([dict(small[0])])
    first = registry.compile_tools(huge)
    assert registry.compile_tools(huge) is not first  # compiled afresh: the cache holds no such list
    assert registry._compile.cache_info().maxsize == registry._CACHE_SIZE


def test_a_tool_list_mutated_after_compiling_is_compiled_anew():
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]
    assert _one(_call("a:01"), tools).arguments == {"a": "01"}
    tools[0]["parameters"]["properties"]["a"]["type"] = "integer"
    assert _one(_call("a:01"), tools).arguments == {"a": 1}
    tools[0]["parameters"]["properties"]["a"]["type"] = "string"
    assert _one(_call("a:01"), tools).arguments == {"a": "01"}


def test_a_pattern_property_never_backtracks_without_bound():
    # `^(a+)+$` against `aaa...a-` backtracks exponentially in Python's `re`; typing matches keys
    # as the validator does (ECMA 262, bounded)
    tools = registry.compile_tools([{"name": "t", "parameters": {"type": "object", "patternProperties": {
        "^(a+)+$": {"type": "string"}, "^b": {"type": "string"}}}}])

    def text(n):
        return _call("a" * n + "-:1,b:02,aaa:03")

    for n in (14, 22):
        assert _one(text(n), tools).arguments == {"a" * n + "-": 1, "b": "02", "aaa": "03"}
    small_time = best_cpu_seconds(lambda: parse_output(text(14), tools=tools))
    ratio = best_cpu_seconds(lambda: parse_output(text(22), tools=tools)) / max(small_time, 1e-3)
    assert ratio < MAX_RATIO, f"8 more characters of key took {ratio:.1f}x the time"


def test_the_coerced_findings_kept_are_the_first_in_the_text():
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}}, "b": {"type": "string"}}}}]
    count = 1500
    found = _one(_call("b:01,a:[" + ",".join(map(str, range(count))) + "]"), tools)
    coerced = [d for d in found.diagnostics if d.code == "coerced"]
    (more,) = [d for d in found.diagnostics if d.code == "more-diagnostics"]
    assert len(coerced) == 1000 and found.raw[coerced[0].pos:coerced[0].end] == "01"
    assert [found.raw[d.pos:d.end] for d in coerced[1:4]] == ["0", "1", "2"]
    assert more.pos > coerced[-1].pos and found.raw[more.pos:more.end].startswith("999,")
    assert "501 more" in more.message


@pytest.mark.parametrize("strict", [False, True])
def test_what_the_decoders_refuse_stays_refused_whatever_the_schema(strict):
    # docs/schema.md: an integer over 4,300 digits is a syntax error even for a string field
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]
    parsed = parse_output(_call("a:" + "1" * 4301), tools=tools, strict=strict)
    assert not parsed.calls and [e.code for e in parsed.errors] == ["syntax"]
    beyond = parse_output(_call("a:1e400"), tools=tools, strict=strict)
    if strict:
        assert not beyond.calls and [e.code for e in beyond.errors] == ["syntax"]
    else:
        assert beyond.calls[0].arguments == {"a": "1e400"}
        # beyond a double there is no number reading (issue 17: not a 401-digit integer), for an
        # integer as for a number: the text as written, which validation reports
        for kind in ("integer", "number"):
            exact = parse_output(_call("a:1e400"), tools=[{"name": "t", "parameters": {
                "type": "object", "properties": {"a": {"type": kind}}}}])
            assert exact.calls[0].arguments == {"a": "1e400"}
            # the lenient reading says why (the strict error, the number it could not read) and
            # validation reports the text
            assert [d.code for d in exact.calls[0].diagnostics] == ["syntax", "malformed-number", "schema"]


@pytest.mark.parametrize("body, typed", [
    ("a:01,b:2", {"a": "01", "b": 2}),
    (f"s:{D}long text{D},b:3.0,a:x", {"s": "long text", "b": 3, "a": "x"}),
    ("b:2,a:[01,{c:True}]", {"b": 2, "a": ["01", {"c": True}]}),
])
def test_openai_stream_sends_typed_arguments_without_a_void_entry(body, typed):
    # streamed arguments stop before the first bare scalar of a typed call: what went out is a
    # prefix of the typed JSON, so the call is never voided and sent again for a coercion
    import json

    from gemma4_incremental import StreamParser
    from gemma4_incremental.openai import OpenAIStream

    tools = [{"name": "t", "parameters": {"type": "object", "properties": {
        "a": {"anyOf": [{"type": "string"}, {"type": "array", "items": {
            "anyOf": [{"type": "string"}, {"type": "object", "properties": {"c": {"type": "boolean"}}}]}}]},
        "b": {"type": "integer"}, "s": {"type": "string"}}}}]
    text = "Hi " + _call(body)
    stream = OpenAIStream(StreamParser(tools=tools), stream_arguments=True)
    chunks = []
    for i in range(len(text)):
        chunks += stream.feed(text[i])
    chunks += stream.flush()
    entries = [e for c in chunks for e in c["choices"][0]["delta"].get("tool_calls", ())]
    assert {e["index"] for e in entries} == {0} and not any("error" in e for e in entries)
    assert json.loads("".join(e["function"].get("arguments", "") for e in entries)) == typed
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    if body.startswith("s:"):  # a delimited string before the first bare scalar still streams
        before_last = "".join(e["function"].get("arguments", "") for e in entries[:-1])
        assert before_last.startswith('{"s": "long text", "b": ')


# --- docs/schema.md's claims, each checked -----------------------------------------------------------
DOC_TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"zip": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["zip"]}}}]


def test_the_opening_example_of_the_page():
    text = "<|tool_call>call:weather{zip:02134,days:3}<tool_call|>"
    (found,) = parse_output(text, tools=DOC_TOOLS).calls
    assert found.arguments == {"zip": "02134", "days": 3}
    assert parse_output(text).calls[0].arguments == {"zip": 2134, "days": 3}
    (note,) = found.diagnostics
    assert (note.severity, note.code, note.pos, note.end) == ("warning", "coerced", 29, 34)
    assert [d.code for d in g.validate(text, tools=DOC_TOOLS)] == ["coerced"]


def test_a_strict_schema_error_keeps_the_typed_arguments_in_partial():
    (error,) = parse_output(_call("zip:02134,days:0", "weather"), tools=DOC_TOOLS, strict=True).errors
    assert error.code == "schema" and error.partial == {"zip": "02134", "days": 0}
    assert error.error.startswith('at "/days": ')


def test_a_missing_required_key_is_reported_at_the_arguments_object():
    (found,) = parse_output(_call("days:2", "weather"), tools=DOC_TOOLS).calls
    (violation,) = found.diagnostics
    assert violation.code == "schema" and violation.message.startswith('at "": ')
    assert found.raw[violation.pos] == "{"


def test_formats_are_annotations():
    tools = [{"name": "t", "parameters": {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}}}]
    assert _one(_call(f"d:{D}not a date{D}"), tools, strict=True).diagnostics == []


def test_missing_call_is_at_the_end_with_line_and_column_zero():
    (finding,) = parse_output("one\ntwo", tools=DOC_TOOLS, tool_choice="required").diagnostics
    assert (finding.pos, finding.end, finding.line, finding.column) == (7, 7, 0, 0)
