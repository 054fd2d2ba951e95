"""One error base: every exception class the two packages define derives from
`gemma4_lark.Gemma4Error`, and keeps the built-in base it had, so `except ValueError` written
before the base existed still catches what it caught; and the messages say what and where."""

import ast
import importlib
import pathlib
import re

import pytest

import gemma4_incremental
import gemma4_lark
from gemma4_lark import constrain
from gemma4_lark.error_base import Gemma4Error
from gemma4_lark.render.official import render_chat
from gemma4_lark.schema import registry

# The public errors, by class name (wherever their module moves), and the built-in bases each had
# before `Gemma4Error`: a new public error is added here, with the built-in base a caller would
# catch it by.
BUILT_IN_BASES = {
    "GemmaSyntaxError": (ValueError,),
    "PromptError": (ValueError,),
    "ShapeError": (ValueError, TypeError),
    "ArgumentsError": (ValueError, TypeError),
    "UnsafeContentError": (ValueError,),
    "WrongModelFamilyError": (ValueError,),
    "SchemaError": (ValueError,),
    "NoValue": (ValueError,),  # a SchemaError: a schema none of whose values can be written
    "CannotDerive": (ValueError,),
    "ProtocolError": (ValueError,),
    "DocsError": (Exception,),
    "CommandError": (Exception,),
    "NotUTF8": (Exception,),
    "Abandon": (Exception,),  # the lenient decoder's control flow: a block beyond recovery
    "ReaderGone": (Exception,),  # the command line's control flow: stdout's reader left
    "OutputFailed": (Exception,),  # stdout cannot be written
    "NumberOutOfRange": (Exception,),
    "IntegerTooLong": (Exception,),
    "DepthExceeded": (Exception,),
    "TargetDoesNotRun": (Exception,),
}

# Modules that import a server the test environment does not have: read as text only.
_NEEDS_A_SERVER = {"gemma4_incremental.integrations.vllm", "gemma4_incremental.integrations.sglang"}
_EXCEPTION_NAMES = ("Error", "Exception", "Exit", "Interrupt", "Warning")


def _modules():
    """(module name, source path) of every module of the two packages."""
    for package in (gemma4_lark, gemma4_incremental):
        root = pathlib.Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join([package.__name__, *parts]), path


def _exception_classes():
    """Every class a module of the packages defines that is an exception: (qualified name, class,
    or None for a module read as text only)."""
    for name, path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        if name in _NEEDS_A_SERVER or name.endswith("__main__"):
            for node in classes:
                bases = [ast.unparse(base) for base in node.bases]
                if any(base.endswith(_EXCEPTION_NAMES) for base in bases):
                    yield f"{name}.{node.name}", None
            continue
        module = importlib.import_module(name)
        for node in classes:
            cls = getattr(module, node.name, None)
            if cls is None:  # a class inside a function: judged by what it derives from
                if any(ast.unparse(base).endswith(_EXCEPTION_NAMES) for base in node.bases):
                    yield f"{name}.{node.name}", None
            elif isinstance(cls, type) and issubclass(cls, BaseException) and cls.__module__ == name:
                yield f"{name}.{node.name}", cls


def test_the_walk_finds_the_known_errors():
    found = {name.rsplit(".", 1)[1] for name, _ in _exception_classes()}
    assert set(BUILT_IN_BASES) <= found, set(BUILT_IN_BASES) - found
    assert len(found) > len(BUILT_IN_BASES)  # and the private ones (the fast path's refusal, ...)


def test_every_exception_class_derives_from_the_one_base():
    classes = list(_exception_classes())
    unreadable = [name for name, cls in classes if cls is None]
    assert not unreadable, f"exception classes the test cannot import to check: {unreadable}"
    outside = [name for name, cls in classes if not issubclass(cls, Gemma4Error)]
    assert not outside, f"not derived from Gemma4Error: {outside}"


def test_every_public_error_keeps_its_built_in_base():
    classes = {name.rsplit(".", 1)[1]: cls for name, cls in _exception_classes()}
    public = {name for name in classes if not name.startswith("_")} - {"Gemma4Error"}
    assert public == set(BUILT_IN_BASES), "a public error without its built-in bases listed here"
    for name, bases in BUILT_IN_BASES.items():
        for base in bases:
            assert issubclass(classes[name], base), (name, base)


def test_the_base_is_exported_and_imports_nothing():
    assert gemma4_lark.Gemma4Error is Gemma4Error and issubclass(Gemma4Error, Exception)
    assert "Gemma4Error" in gemma4_lark.__all__
    # the lowest layer: every module may derive its errors from it without an import cycle
    tree = ast.parse(pathlib.Path(importlib.import_module("gemma4_lark.error_base").__file__).read_text())
    assert not [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_one_except_catches_the_refusals_of_each_layer():
    refusals = [
        lambda: gemma4_lark.parse_call("<|tool_call>call:f{a:1,}<tool_call|>"),
        lambda: render_chat([{"role": "user", "content": "<turn|>"}]),
        lambda: render_chat([{"role": "user", "content": 3}]),
        lambda: render_chat([{"role": "assistant", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}]}]),
        lambda: constrain.grammar("lark", tools=[_tool({"type": "integer", "const": "a"})]),
        lambda: gemma4_incremental.StreamParser.for_prompt("<bos><|turn>user\nHi<turn|>\n"),
        lambda: gemma4_incremental.StreamParser.for_prompt("<bos><|turn>model\n<|tool_call>call:f{a:"),
        lambda: gemma4_lark.read_omp("<bos><|turn>model\n<|channel>thought\n<channel|>Hi<turn|>\n"),
        lambda: gemma4_incremental.StreamParser.for_tokenizer(_NotGemma()),
    ]
    for refuse in refusals:
        with pytest.raises(Gemma4Error) as info:
            refuse()
        assert isinstance(info.value, ValueError)  # the built-in base callers caught before


class _NotGemma:
    """A tokenizer of another family: every token is its unknown token."""

    def convert_tokens_to_ids(self, token):
        return 0

    def decode(self, ids, skip_special_tokens=False):
        return "<unk>"


def _called(arguments):
    return [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                  "function": {"name": "f", "arguments": arguments}}]}]


@pytest.mark.parametrize("arguments, built_in, what", [
    ({"a": {1, 2}}, TypeError, ".arguments.a: set has no text in the value language"),
    ({"a": b"x"}, TypeError, ".arguments.a: bytes has no text in the value language"),
    ({1: 2}, TypeError, ".arguments: object keys must be str, not int"),
    ({"a": [[[[]]]]}, ValueError, ".arguments.a[0][0]: the value nests deeper than 3 levels once rendered"),
])
def test_a_value_the_renderers_cannot_write_is_refused_with_its_path(arguments, built_in, what):
    # these were a bare TypeError or ValueError, the path at the end; now a ShapeError, path first
    for render in (lambda: render_chat(_called(arguments), max_depth=3),
                   lambda: gemma4_lark.omp.render_tool_call("f", arguments, max_depth=3)):
        with pytest.raises(Gemma4Error) as info:
            render()
        assert isinstance(info.value, built_in) and what in str(info.value), str(info.value)


def _tool(schema):
    return {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": schema}, "required": ["a"]}}}


# Schemas no value satisfies, or whose only values the format cannot write.
_UNSATISFIABLE = [
    {"type": "integer", "const": "a"},
    {"type": ["integer", "boolean"], "const": "a"},
    {"type": "null", "const": 1},
    {"type": "array", "const": {}},
    {"allOf": [{"const": 1}, {"const": 2}]},
    {"allOf": [{"enum": [1, 2]}, {"enum": [3]}]},
    {"allOf": [{"type": "string"}, {"type": "integer"}]},
    {"type": "string", "enum": [1, 2]},
    {"enum": ["<|tool_call>"]},
    {"const": "<turn|>"},
    {"const": float("nan")},
    {"enum": [float("inf"), float("-inf")]},
    {"anyOf": [{"const": "<eos>"}, {"enum": ["<turn|>"]}]},
    {"type": "array", "items": {"const": "<eos>"}, "minItems": 1},
    {"type": "array", "maxItems": 1, "minItems": 2},
    {"type": "object", "properties": {"x": {"const": "<eos>"}}, "required": ["x"]},
    {"type": "object", "properties": {"x": False}, "required": ["x"]},
    {"const": [1], "minItems": 2},
    False,
]


@pytest.mark.parametrize("schema", _UNSATISFIABLE, ids=repr)
@pytest.mark.parametrize("export", ["grammar", "structural_tag"])
def test_an_unsatisfiable_schema_is_refused_with_what_and_where(schema, export):
    tools = [_tool(schema)]
    with pytest.raises(Gemma4Error) as info:
        constrain.grammar("lark", tools=tools) if export == "grammar" else constrain.structural_tag(tools)
    message = str(info.value)
    assert "SchemaError" in [cls.__name__ for cls in type(info.value).__mro__] and isinstance(info.value, ValueError)
    assert message.startswith("tool 'f': parameters.properties.a"), message  # where
    assert "None" not in message and not re.search(r"\{[a-z_]+\}", message), message  # no placeholder left
    assert len(message.split(": ", 2)[-1]) > 10, message  # what


def test_a_schema_refused_for_decoding_says_where():
    with pytest.raises(Gemma4Error) as info:
        registry.compile_tools([_tool({"$ref": "https://example.com/other.json"})])
    assert isinstance(info.value, ValueError) and str(info.value).startswith("tools[f].parameters: ")
