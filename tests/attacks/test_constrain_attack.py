"""`constrain.grammar` and `constrain.structural_tag` under odd and hostile tools: a clear
ValueError naming the place, or an export llguidance compiles; never a traceback of another
kind; and the tools' lexical rules are the grammar's terminals as `translate` derives them."""

from __future__ import annotations

import itertools

import pytest

from gemma4_lark import constrain
from gemma4_lark.constrain import _translate as translate, ir, schema
from gemma4_lark.grammar import BLOCK_STARTS
from gemma4_lark.tools import read_tools

from constrain_helpers import Matcher  # noqa: E402  (skips without llguidance)
from timing import Guard, guard_tests  # noqa: E402


def fn(name="f", parameters=None, **extra):
    function = {"name": name, **extra}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def obj(properties=None, **extra):
    return {"type": "object", **({"properties": properties} if properties is not None else {}), **extra}


def test_tool_lexical_rules_are_translates_derivation():
    rules, _ = schema.argument_rules(read_tools([fn(parameters=obj({"a": {"type": "number"}}))]))
    for rule, terminal in (("tool_integer", "INTEGER"), ("tool_float", "FLOAT"), ("tool_key", "KEY")):
        assert rules[rule] == translate.terminal_text(terminal, BLOCK_STARTS)[1], rule
    head, content, tail = translate.terminal_text("STRING", BLOCK_STARTS)
    assert rules["tool_string_content"] == content
    assert rules["tool_string"] == ir.seq(ir.Special(head), ir.Ref("tool_string_content"), ir.Special(tail))


DEEP = {"type": "integer"}
for _ in range(300):
    DEEP = {"type": "array", "items": DEEP}

HOSTILE = {
    "name with a space": [fn("get weather", obj({}))],
    "empty name": [fn("", obj({}))],
    "marker as name": [fn("<|tool_call>", obj({}))],
    "name not a string": [fn(3, obj({}))],
    "names twice": [fn("a", obj({})), fn("a", obj({}))],
    "names prefixes of others": [fn("get", obj({})), fn("get_weather", obj({})), fn("get.x", obj({}))],
    "huge enum": [fn(parameters=obj({"e": {"enum": [f"v{i}" for i in range(2000)]}}))],
    "mixed enum": [fn(parameters=obj({"e": {"enum": ["a", 1, 2.5, True, None, [1], {"k": "v"}]}}))],
    "enum of a marker only": [fn(parameters=obj({"e": {"enum": ['<|"|>']}}, required=["e"]))],
    "empty enum": [fn(parameters=obj({"e": {"enum": []}}))],
    "recursive $ref": [fn(parameters=obj({"a": {"$ref": "#/$defs/n"}}, **{"$defs": {"n": {
        "type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}}))],
    "$ref loop": [fn(parameters=obj({"a": {"$ref": "#/$defs/x"}}, **{"$defs": {"x": {"$ref": "#/$defs/y"},
                                                                           "y": {"$ref": "#/$defs/x"}}}))],
    "$ref to nothing": [fn(parameters=obj({"a": {"$ref": "#/$defs/none"}}))],
    "$ref outside": [fn(parameters=obj({"a": {"$ref": "http://example.com/s.json"}}))],
    "boolean schemas": [fn(parameters=obj({"a": True, "b": False}))],
    "required false": [fn(parameters=obj({"a": False}, required=["a"]))],
    "parameters true": [fn(parameters=True)],
    "unknown type": [fn(parameters=obj({"a": {"type": "uuid"}}))],
    "type not a string": [fn(parameters=obj({"a": {"type": 5}}))],
    "type list": [fn(parameters=obj({"a": {"type": ["string", "null", "integer"]}}))],
    "empty properties": [fn(parameters=obj({}))],
    "properties a list": [fn(parameters=obj([1, 2]))],
    "required a string": [fn(parameters=obj({"a": {}}, required="a"))],
    "odd keys": [fn(parameters=obj({"a b": {}, "": {"type": "string"}, "ü": {"type": "integer"}}))],
    "marker key": [fn(parameters=obj({"<turn|>": {"type": "string"}}))],
    "minItems over maxItems": [fn(parameters=obj({"a": {"type": "array", "minItems": 5, "maxItems": 2}}))],
    "anyOf of non-schemas": [fn(parameters=obj({"a": {"anyOf": [1, "x"]}}))],
    "nested 300 deep": [fn(parameters=obj({"a": DEEP}))],
    "400 properties": [fn(parameters=obj({f"p{i}": {"type": "integer"} for i in range(400)}, additionalProperties=True))],
    "120 tools": [fn(f"t{i}", obj({"a": {"type": "string"}, "b": {"type": "integer"}}, required=["a"]))
                  for i in range(120)],
    "tools an object": {"a": 1},
    "tool an integer": [1],
}
CHOICES = ["auto", "required", "none", {"type": "function", "function": {"name": "f"}}, "bogus", 5]


@pytest.mark.parametrize("label", sorted(HOSTILE))
def test_hostile_tools_get_an_export_or_a_clear_error(label):
    tools = HOSTILE[label]
    for fmt, scope, choice, thinking in itertools.product(constrain.FORMATS, constrain.SCOPES, CHOICES, (True, False)):
        try:
            text = constrain.grammar(fmt, scope=scope, tools=tools, tool_choice=choice, thinking=thinking)
        except ValueError as error:  # ShapeError and SchemaError are ValueErrors
            assert str(error) and "\n" not in str(error), (label, error)
            continue
        if fmt == "llguidance" and thinking and choice == "auto":
            Matcher(text)  # llguidance compiles it
    for choice in CHOICES:
        try:
            constrain.structural_tag(tools, tool_choice=choice)
        except ValueError as error:
            assert str(error), label


def test_a_schema_nested_too_deeply_is_refused_with_its_place():
    with pytest.raises(schema.SchemaError, match=r"parameters\.properties\.a(\.items)+: the schema nests more than"):
        constrain.grammar("gbnf", tools=HOSTILE["nested 300 deep"])
    nested = {"type": "integer"}
    for _ in range(schema.MAX_SCHEMA_DEPTH - 2):
        nested = {"type": "array", "items": nested}
    Matcher(constrain.grammar("llguidance", tools=[fn(parameters=obj({"a": nested}))]))


def test_names_the_format_cannot_write_are_refused_by_name():
    with pytest.raises(ValueError, match="'get weather'"):
        constrain.grammar("llguidance", tools=HOSTILE["name with a space"])
    with pytest.raises(ValueError, match=r"tools\[1\]\.function\.name"):
        constrain.structural_tag(HOSTILE["names twice"])




def _many_tools(n):
    return [fn(f"t{i}", obj({"a": {"type": "string"}, "b": {"type": "integer"}}, required=["a"])) for i in range(n)]


def _many_optional_properties(n):
    return [fn(parameters=obj({f"p{i}": {"type": "integer"} for i in range(n)}, additionalProperties=True))]


def _export(declared):
    constrain.grammar("llguidance", scope="output", tools=declared)


# A whole-turn llguidance export. Many optional properties beside any other key: the greedy-lexer
# check grew with the square of the keys (2.9 s at 2,048); the tools' rules are no longer checked
# (`ir.Grammar.marks_apart`), so the doubling goes on to thousands (bench/schema_shapes_bench.py).
_BUILD_GUARDS = [Guard(f"llguidance export of {name}", _export, make, 8, 8192)
                 for name, make in (("many tools", _many_tools), ("many optional properties", _many_optional_properties))]
test_building_is_linear_in_tools_and_properties, test_each_building_guard_can_fail = guard_tests(
    _BUILD_GUARDS, twins=_BUILD_GUARDS[:1])


@pytest.mark.parametrize("content, needle", [
    ("[" * 100_000 + "]" * 100_000, "nests 100000 levels deep"),
    ("", "not JSON"),
    (b"\xff\xfe", "not UTF-8"),
    ('{"a": 1}', "must be a JSON array of objects"),
    ('[{"type": "function", "function": {"name": "a b"}}]', "'a b'"),
])
def test_cli_grammar_bad_tool_files_are_one_clear_line(tmp_path, capsys, content, needle):
    from gemma4_lark.cli import main

    path = tmp_path / "tools.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["grammar", "--format", "gbnf", "--tools", str(path)]) == 1
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "internal error" not in err, err


def test_cli_grammar_deep_tool_choice(capsys):
    from gemma4_lark.cli import main

    deep = '{"a":' * 5000 + "1" + "}" * 5000
    assert main(["grammar", "--format", "gbnf", "--tool-choice", deep]) == 1
    err = capsys.readouterr().err
    assert "nests 5000 levels deep" in err and "internal error" not in err, err


def test_cli_grammar_closed_and_full_output():
    import subprocess
    import sys

    argv = [sys.executable, "-m", "gemma4_lark", "grammar", "--format", "llguidance", "--scope", "output"]
    closed = subprocess.run(["sh", "-c", '"$@" >&-', "sh", *argv], capture_output=True, text=True, timeout=120)
    assert closed.returncode == 2 and "Traceback" not in closed.stderr and "closed" in closed.stderr
    gone = subprocess.run(["sh", "-c", '"$@" | head -c 10 >/dev/null; exit "$(echo $?)"', "sh", *argv],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in gone.stderr, gone.stderr
