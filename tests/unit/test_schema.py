"""Decoding against the declared tools (docs/schema.md): lossless scalars typed by the schema,
validation, unknown tools, tool_choice, error codes, and the schema-gated string run."""

import ast
import re
import sys

import pytest

import gemma4_lark as g
from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.openai import OpenAIStream, to_openai_message
from gemma4_lark.events import TOOL_CALL_ERROR_CODES, ToolCallEnd, ToolCallError, ToolCallStart
from gemma4_lark.reference import ReferenceScanner
from gemma4_lark.schema import registry
from gemma4_lark.tools import ShapeError

from stream_helpers import counter_ids
from conftest import REPO

D = '<|"|>'


def tool(name, properties, **extra):
    return {"type": "function", "function": {"name": name, "description": "d",
                                             "parameters": {"type": "object", "properties": properties, **extra}}}


WEATHER = tool("weather", {
    "zip": {"type": "string"}, "version": {"type": "string"}, "count": {"type": "string"},
    "unit": {"type": "string"}, "detailed": {"type": "boolean"}, "days": {"type": "integer", "minimum": 1,
                                                                          "maximum": 14},
    "ratio": {"type": "number"}, "ids": {"type": "array", "items": {"type": "string"}},
    "place": {"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}},
})
TOOLS = [WEATHER, tool("search", {"query": {"type": "string"}, "limit": {"type": "integer"}})]


def call(body, name="weather"):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def one_call(text, **options):
    parsed = parse_output(text, tools=options.pop("tools", TOOLS), **options)
    assert not parsed.errors, parsed.errors
    (found,) = parsed.calls
    return found


def codes(event):
    return [d.code for d in event.diagnostics]


# --- lossless scalars, typed by the schema --------------------------------------------------------
@pytest.mark.parametrize("body, key, expected", [
    ("zip:02134", "zip", "02134"), ("version:1.10", "version", "1.10"), ("count:42", "count", "42"),
    ("unit:true", "unit", "true"), ("unit:null", "unit", "null"), ("unit:-0.50", "unit", "-0.50"),
    ("detailed:True", "detailed", True), ("detailed:False", "detailed", False),
    ("days:3.0", "days", 3), ("days:3e1", "days", 30),
])
def test_a_bare_scalar_takes_the_type_the_schema_gives_it_from_its_text(body, key, expected):
    found = one_call(call(body))
    assert found.arguments[key] == expected and type(found.arguments[key]) is type(expected)
    (note,) = [d for d in found.diagnostics if d.code == "coerced"]
    assert note.severity == "warning" and found.raw[note.pos:note.end] == body.split(":", 1)[1]
    assert f'"/{key}"' in note.message


@pytest.mark.parametrize("body, key, expected", [
    ("unit:celsius", "unit", "celsius"), ("detailed:true", "detailed", True), ("days:3", "days", 3),
    ("ratio:1.10", "ratio", 1.1), ("ratio:2", "ratio", 2), (f"zip:{D}02134{D}", "zip", "02134"),
])
def test_a_scalar_whose_natural_reading_the_schema_takes_is_not_coerced(body, key, expected):
    found = one_call(call(body))
    assert found.arguments == {key: expected} and type(found.arguments[key]) is type(expected)
    assert found.diagnostics == []


def test_without_tools_nothing_changes():
    parsed = parse_output(call("zip:02134,detailed:True,version:1.10"))
    assert parsed.calls[0].arguments == {"zip": 2134, "detailed": "True", "version": 1.1}
    assert parsed.calls[0].diagnostics == [] and parsed.diagnostics == []


def test_integers_stay_exact():
    digits = "9" * 400
    assert one_call(call(f"days:{digits}")).arguments["days"] == int(digits)
    assert one_call(call(f"zip:{digits}")).arguments["zip"] == digits


def test_arrays_and_nested_objects_are_typed_item_by_item():
    found = one_call(call("ids:[01,02,3,abc],place:{code:007,n:5}"))
    assert found.arguments == {"ids": ["01", "02", "3", "abc"], "place": {"code": "007", "n": 5}}
    pointers = [re.search(r'"(/[^"]*)"', d.message).group(1) for d in found.diagnostics if d.code == "coerced"]
    assert pointers == ["/ids/0", "/ids/1", "/ids/2", "/place/code"]


def test_a_delimited_string_is_never_retyped():
    found = one_call(call(f"days:{D}3{D}"))
    assert found.arguments == {"days": "3"}
    assert codes(found) == ["schema"] and '"/days"' in found.diagnostics[0].message


def test_a_value_no_reading_of_which_fits_stays_as_read_and_is_reported():
    found = one_call(call("days:soon,detailed:1"))
    assert found.arguments == {"days": "soon", "detailed": 1}  # 1 is not made a boolean
    assert sorted(codes(found)) == ["schema", "schema"]


@pytest.mark.parametrize("schema, lexeme, expected, coerced", [
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "02134", 2134, False),
    ({"anyOf": [{"type": "boolean"}, {"type": "string"}]}, "True", "True", False),
    ({"oneOf": [{"type": "boolean"}, {"type": "integer"}]}, "True", True, True),
    ({"enum": ["1", "2"]}, "1", "1", True),
    ({"enum": [1, 2]}, "1", 1, False),
    ({"type": "string", "enum": ["yes", "no"]}, "no", "no", False),
    ({"type": ["string", "null"]}, "null", None, False),
    ({"type": "string"}, "None", "None", True),
    ({"type": "string", "nullable": True}, "null", None, False),
    ({"type": "string"}, "null", "null", True),
    ({"type": "null"}, "None", None, False),
    ({"const": "42"}, "42", "42", True),
    ({"$ref": "#/$defs/zip"}, "02134", "02134", True),
    ({"$ref": "#/definitions/flag"}, "False", False, True),
    ({"allOf": [{"type": "string"}, {"minLength": 1}]}, "12", "12", True),
])
def test_unions_enums_nullable_and_refs(schema, lexeme, expected, coerced):
    declared = tool("t", {"v": schema}, **{"$defs": {"zip": {"type": "string"}},
                                           "definitions": {"flag": {"type": "boolean"}}})
    found = one_call(call(f"v:{lexeme}", "t"), tools=[declared])
    assert found.arguments == {"v": expected} and type(found.arguments["v"]) is type(expected)
    assert ("coerced" in codes(found)) == coerced
    assert "schema" not in codes(found)


def test_the_lenient_decoder_keeps_lexemes_too():
    # not closed by <tool_call|> before <turn|>: the grammar rejects it, the lenient decoder reads it
    parsed = parse_output("<|tool_call>call:weather{zip:02134,ids:[01]}<turn|>", tools=TOOLS)
    (found,) = parsed.calls
    assert found.recovered and found.arguments == {"zip": "02134", "ids": ["01"]}
    notes = [d for d in found.diagnostics if d.code == "coerced"]
    assert [found.raw[d.pos:d.end] for d in notes] == ["02134", "01"]


def test_positions_are_relative_to_each_call_of_a_block():
    parsed = parse_output("<|tool_call>call:weather{zip:01}call:search{query:007}<tool_call|>", tools=TOOLS)
    assert [c.arguments for c in parsed.calls] == [{"zip": "01"}, {"query": "007"}]
    for found in parsed.calls:
        (note,) = [d for d in found.diagnostics if d.code == "coerced"]
        assert found.raw[note.pos:note.end] in ("01", "007")


# --- validation -----------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, body, pointer, words", [
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, "", "", "required"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, "a:x", "/a", "not of type"),
    ({"type": "object", "properties": {"a": {"enum": ["x", "y"]}}}, "a:z", "/a", "not one of"),
    ({"type": "object", "properties": {}, "additionalProperties": False}, "b:1", "", "Additional properties"),
    ({"type": "object", "properties": {"a": {"type": "integer", "minimum": 2}}}, "a:1", "/a", "minimum"),
    ({"type": "object", "properties": {"a": {"type": "integer", "maximum": 2}}}, "a:3", "/a", "maximum"),
    ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}, "a:[1,x]", "/a/1",
     "not of type"),
])
def test_violations_are_schema_diagnostics_with_a_json_pointer(schema, body, pointer, words):
    declared = {"name": "t", "parameters": schema}
    found = one_call(call(body, "t"), tools=[declared])
    (violation,) = [d for d in found.diagnostics if d.code == "schema"]
    assert violation.severity == "error" and f'"{pointer}"' in violation.message and words in violation.message
    strict = parse_output(call(body, "t"), tools=[declared], strict=True)
    assert not strict.calls and [e.code for e in strict.errors] == ["schema"]
    assert strict.errors[0].name == "t"


def test_a_valid_call_has_no_schema_diagnostic_in_either_mode():
    for strict in (False, True):
        found = one_call(call(f"zip:{D}02134{D},days:3,ids:[{D}a{D}]"), strict=strict)
        assert found.diagnostics == []


def test_tool_call_end_to_openai_lists_schema_findings():
    found = one_call(call("zip:02134,days:0"))
    entry = found.to_openai()
    assert "recovered" not in entry and {d["code"] for d in entry["diagnostics"]} == {"coerced", "schema"}


def test_a_tool_without_parameters_takes_any_arguments():
    found = one_call(call("a:01", "bare"), tools=[{"name": "bare"}])
    assert found.arguments == {"a": 1} and found.diagnostics == []


def test_compiled_once_per_tool_list_content():
    first = registry.compile_tools(TOOLS)
    assert registry.compile_tools([dict(t) for t in TOOLS]) is first
    assert registry.compile_tools(TOOLS[:1]) is not first


def test_an_invalid_schema_is_a_shape_error():
    with pytest.raises(ShapeError, match="not a valid JSON schema"):
        StreamParser(tools=[{"name": "t", "parameters": {"type": "nope"}}])
    with pytest.raises(ShapeError):
        parse_output("x", tools=[{"nameless": 1}])


def test_a_remote_ref_is_never_fetched():
    with pytest.raises(ShapeError, match="not a valid JSON schema"):
        StreamParser(tools=[{"name": "t", "parameters": {"$ref": "http://127.0.0.1:9/x.json"}}])


def test_a_clear_error_when_jsonschema_rs_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema_rs", None)
    registry._compile.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install 'jsonschema-rs"):
            parse_output("x", tools=[{"name": "fresh"}])
    finally:
        registry._compile.cache_clear()


# --- unknown tools --------------------------------------------------------------------------------
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("text", [
    "<|tool_call>call:wether{zip:1}<tool_call|>",        # never remapped to `weather`
    "<|tool_call>call:wether{zip:1,}<tool_call|>",       # lenient reads it; still refused
    "call:rm_rf{path:/}",                                 # a bare call
])
def test_a_call_to_an_undeclared_tool_is_refused_and_never_started(text, strict):
    events = list(StreamParser(tools=TOOLS, strict=strict).feed(text)) + []
    parser = StreamParser(tools=TOOLS, strict=strict)
    events = parser.feed(text) + parser.flush()
    assert not any(isinstance(e, (ToolCallStart, ToolCallEnd)) for e in events)
    errors = [e for e in events if isinstance(e, ToolCallError)]
    if strict and text.startswith("call:"):
        assert errors == []  # a bare call is prose in strict mode
        return
    if strict and text.endswith(",}<tool_call|>"):
        assert [e.code for e in errors] == ["syntax"]
        return
    assert [e.code for e in errors] == ["unknown-tool"] and "not one of the declared tools" in errors[0].error


def test_an_unknown_call_is_refused_one_by_one_in_a_block():
    parsed = parse_output("<|tool_call>call:search{query:a}call:nope{}<tool_call|>", tools=TOOLS)
    assert [c.name for c in parsed.calls] == ["search"]
    assert [(e.name, e.code) for e in parsed.errors] == [("nope", "unknown-tool")]


def test_an_empty_tool_list_declares_nothing():
    parsed = parse_output(call("zip:1"), tools=[])
    assert [e.code for e in parsed.errors] == ["unknown-tool"]


def test_openai_stream_sends_nothing_callable_for_a_refused_call():
    text = "Hi <|tool_call>call:wether{zip:1}<tool_call|>"
    for stream_arguments in (True, False):
        stream = OpenAIStream(StreamParser(tools=TOOLS, id_factory=counter_ids()), stream_arguments=stream_arguments)
        chunks = []
        for i in range(0, len(text), 3):
            chunks += stream.feed(text[i:i + 3])
        chunks += stream.flush()
        deltas = [c["choices"][0]["delta"] for c in chunks]
        assert not any("tool_calls" in d for d in deltas)
        assert [e["code"] for d in deltas for e in d.get("tool_call_errors", ())] == ["unknown-tool"]
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    message = to_openai_message(parse_output(text, tools=TOOLS))
    assert "tool_calls" not in message and message["tool_call_errors"][0]["code"] == "unknown-tool"


def test_for_prompt_passes_the_tools_on():
    prompt = "<|turn>user\nhi<turn|>\n<|turn>model\n"
    parser = StreamParser.for_prompt(prompt, tools=TOOLS, tool_choice="required")
    events = parser.feed(call("zip:02134")) + parser.flush()
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert end.arguments == {"zip": "02134"} and parser.diagnostics == []


# --- tool_choice ----------------------------------------------------------------------------------
def test_tool_choice_none_refuses_every_call():
    parsed = parse_output("text " + call("zip:1"), tools=TOOLS, tool_choice="none")
    assert not parsed.calls and [e.code for e in parsed.errors] == ["tool-choice"]
    assert not any(isinstance(e, ToolCallStart) for e in parsed.events)
    assert parse_output("just text", tool_choice="none").diagnostics == []


def test_tool_choice_required_reports_an_output_without_a_call():
    parsed = parse_output("no call here", tools=TOOLS, tool_choice="required")
    (finding,) = parsed.diagnostics
    assert finding.code == "missing-call" and finding.severity == "error" and finding.pos == len("no call here")
    assert parse_output(call("zip:1"), tools=TOOLS, tool_choice="required").diagnostics == []
    refused = parse_output(call("zip:1", "nope"), tools=TOOLS, tool_choice="required")
    assert [d.code for d in refused.diagnostics] == ["missing-call"]  # a refused call is no call


def test_tool_choice_naming_a_function_refuses_the_others():
    choice = {"type": "function", "function": {"name": "search"}}
    parsed = parse_output(call("zip:1") + call("query:x", "search"), tools=TOOLS, tool_choice=choice)
    assert [c.name for c in parsed.calls] == ["search"] and [e.code for e in parsed.errors] == ["tool-choice"]
    assert parsed.diagnostics == []
    missing = parse_output(call("zip:1"), tools=TOOLS, tool_choice=choice)
    assert [d.code for d in missing.diagnostics] == ["missing-call"]
    with pytest.raises(ShapeError):
        StreamParser(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "undeclared"}})


def test_tool_choice_auto_is_the_default():
    assert parse_output("no call", tools=TOOLS, tool_choice="auto").diagnostics == []
    assert parse_output("no call", tools=TOOLS).diagnostics == []


# --- error codes ----------------------------------------------------------------------------------
# Where each error class takes its code: ToolCallError (the event) and BlockError (a block's
# outcome, gemma4_lark.blocks), by keyword or by position.
_CODE_AT = {"ToolCallError": 8, "BlockError": 2}


def _tool_call_error_constructions():
    for path in list((REPO / "gemma4_lark").rglob("*.py")) + list((REPO / "incremental").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in _CODE_AT:
                yield path.name, node


def test_every_construction_of_a_tool_call_error_sets_a_code():
    found = list(_tool_call_error_constructions())
    assert len(found) >= 10
    for name, node in found:
        at = _CODE_AT[node.func.id]
        keyword = [k.value for k in node.keywords if k.arg == "code"]
        given = keyword[0] if keyword else (node.args[at] if len(node.args) > at else None)
        assert given is not None, f"{name}:{node.lineno}: ToolCallError without a code"
        if isinstance(given, ast.Constant):
            assert given.value in TOOL_CALL_ERROR_CODES, f"{name}:{node.lineno}: {given.value!r}"


def test_the_documented_codes_are_the_codes():
    text = (REPO / "docs" / "schema.md").read_text(encoding="utf-8")
    section = text.split("## Error codes", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, re.M))
    assert documented == TOOL_CALL_ERROR_CODES


@pytest.mark.parametrize("text, options, code", [
    (call("zip:1,,}"), {"strict": True}, "syntax"),
    ("<|tool_call>call:weather{zip:1", {}, "unclosed"),
    ("<|tool_call>call:weather{zip:1}<turn|>", {"strict": True}, "unclosed"),
    (call("zip:" + "x" * 100), {"max_block_chars": 50}, "too-large"),
    (call("ids:" + "[" * 20 + "]" * 20), {"max_depth": 5}, "too-deep"),
    (call("zip:" + "[" * 20 + "]" * 20), {"max_depth": 5, "strict": True}, "too-deep"),
    (call("zip:1", "nope"), {"tools": TOOLS}, "unknown-tool"),
    (call("days:0"), {"tools": TOOLS, "strict": True}, "schema"),
    (call("zip:1"), {"tool_choice": "none"}, "tool-choice"),
    ("<|tool_call>call:{}<tool_call|>", {}, "syntax"),
])
def test_each_failure_has_its_code(text, options, code):
    parsed = parse_output(text, **options)
    assert [e.code for e in parsed.errors] == [code]
    if "tools" not in options and "tool_choice" not in options and options.get("strict"):
        scanner = ReferenceScanner(**options)  # the oracle reads strictly only
        events = scanner.feed(text) + scanner.flush()
        assert [e.code for e in events if isinstance(e, ToolCallError)] == [code]


# --- validate(text, tools=...) --------------------------------------------------------------------
def test_validate_checks_calls_against_the_tools():
    text = "hi " + call("zip:02134,days:0") + call("q:1", "nope")
    found = g.validate(text, tools=TOOLS)
    assert [d.code for d in found] == ["coerced", "schema", "unknown-tool"]
    assert text[found[0].pos:found[0].end] == "02134" and text[found[2].pos:found[2].end] == "nope"
    assert g.validate(text) == []


def test_validate_checks_calls_in_a_transcript():
    text = "<|turn>model\n" + call("days:99") + "<turn|>"
    (finding,) = g.validate(text, tools=TOOLS)
    assert finding.code == "schema" and finding.line == 2 and "maximum" in finding.message


# --- the schema-gated string run (lenient only) ---------------------------------------------------
def test_an_undelimited_string_with_commas_runs_to_the_next_declared_key():
    found = one_call(call("query:hello, world,limit:3", "search"))
    assert found.arguments == {"query": "hello, world", "limit": 3} and "string-run" in codes(found)
    (run,) = [d for d in found.diagnostics if d.code == "string-run"]
    assert found.raw[run.pos:run.end] == "hello, world"


def test_a_string_run_to_the_closing_brace_may_hold_brackets_and_lines():
    found = one_call(call("limit:3,query:a [draft] note,\nsecond line", "search"))
    assert found.arguments == {"limit": 3, "query": "a [draft] note,\nsecond line"}


@pytest.mark.parametrize("options", [{"strict": True}, {}])
def test_no_string_run_in_strict_mode_or_without_tools(options):
    text = call("query:hello, world,limit:3", "search")
    if options:
        assert [e.code for e in parse_output(text, tools=TOOLS, **options).errors] == ["syntax"]
    else:  # without tools the word goes on past its comma, as a word (`comma-in-word`), not a run
        [found] = parse_output(text).calls
        assert found.arguments["query"] == "hello, world" and "string-run" not in codes(found)
        assert "comma-in-word" in codes(found)


def test_no_string_run_where_the_schema_allows_more_than_a_string():
    union = tool("t", {"v": {"type": ["string", "integer"]}, "w": {"type": "integer"}})
    # (the words are kept whole, as without tools: `comma-in-word`; only a string key runs further)
    found = one_call(call("v:a, b,w:1", "t"), tools=[union])
    assert found.arguments["v"] == "a, b" and "string-run" not in codes(found)
    found = one_call(call("w:a, b,v:1", "t"), tools=[union])
    assert found.arguments["w"] == "a, b" and "string-run" not in codes(found)


def test_a_string_run_never_swallows_a_member_the_schema_allows():
    open_tool = tool("t", {"q": {"type": "string"}})
    found = one_call(call("q:a, b,other:1,", "t"), tools=[open_tool])
    assert found.arguments == {"q": "a, b", "other": 1}
    closed_tool = tool("t", {"q": {"type": "string"}}, additionalProperties=False)
    found = one_call(call("q:a, b,other:1,", "t"), tools=[closed_tool])
    assert found.arguments == {"q": "a, b,other:1,"} or found.arguments == {"q": "a, b,other:1"}


def test_chunking_does_not_change_what_tools_decide():
    text = "a " + call("zip:02134,days:0") + call("q:1", "nope") + "<|tool_call>call:search{query:x, y,limit:2}"
    whole = parse_output(text, tools=TOOLS, id_factory=counter_ids())
    parser = StreamParser(tools=TOOLS, id_factory=counter_ids())
    events = []
    for ch in text:
        events += parser.feed(ch)
    events += parser.flush()
    from gemma4_incremental.output import merge_deltas
    assert merge_deltas(events) == merge_deltas(whole.events)


def test_a_compiled_tool_list_can_be_passed_as_tools():
    compiled = registry.compile_tools(TOOLS)
    assert registry.compile_tools(compiled) is compiled
    assert one_call(call("zip:02134"), tools=compiled).arguments == {"zip": "02134"}
    assert [d.code for d in g.validate(call("zip:1", "nope"), tools=compiled)] == ["unknown-tool"]


def test_a_container_under_a_union_takes_the_branch_it_fits():
    union = tool("t", {"v": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                        {"type": "array", "items": {"type": "integer"}}]}})
    assert one_call(call("v:[0,1]", "t"), tools=[union]).arguments == {"v": [0, 1]}
    assert one_call(call("v:[a,1]", "t"), tools=[union]).arguments == {"v": ["a", "1"]}
