"""The declared tools compiled for decoding: each tool's schema, its validator, the hints of the
lenient decoder, and the check of one decoded call against them.

`compile_tools(tools)` reads the tools with `gemma4_lark.tools.read_tools` and compiles each tool's
`parameters` once; the result is cached by content, so a server that builds a parser per request
with the same tool list compiles them once per process. Validation is jsonschema-rs (a dependency): docs/schema.md has the measurement that chose it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Sequence

from ..diagnostics import Diagnostic, LineIndex
from ..tools import ShapeError, Tool, read_tools
from .coerce import Typing, declared_types, pointer_text, resolve
from .lexeme import Scalar
from .normal import normalize

# Validation findings kept per call; the rest are counted in the last one's message.
MAX_SCHEMA_ERRORS = 100
_CACHE_SIZE = 64
# A tool list whose JSON text is longer than this is compiled afresh each time, not cached: the
# cache's memory stays bounded (64 lists of at most this much text, and their validators) whatever
# lists requests send. A server with so large a fixed list passes it compiled (`compile_tools`).
_CACHE_MAX_CHARS = 256 * 1024


def _load_validator_factory():
    try:
        import jsonschema_rs
    except ImportError:
        raise ImportError(
            "decoding against tools validates with jsonschema-rs, a dependency of gemma4-lark that is"
            " missing here (installed with --no-deps?): pip install 'jsonschema-rs>=0.30'") from None
    return jsonschema_rs


def _no_remote(uri: str):
    raise ValueError(f"{uri}: a tool's schema may only refer within itself")


@dataclass(frozen=True)
class StringHints:
    """For the lenient decoder's schema-gated recovery: the root object's declared keys, those
    whose schema allows only a string (where an undelimited value may run to the next key), and
    whether other keys are allowed (`additionalProperties` is not false: then any `,KEY:` ends
    the run too, so a member the schema allows is never swallowed into a string)."""

    keys: frozenset
    string_keys: frozenset
    open: bool


class ToolSchema:
    """One declared tool, compiled: `tool`, `root` (its parameters, for typing), `validator`."""

    def __init__(self, tool: Tool, validator_factory):
        self.tool = tool
        # the one reading of the schema the grammar and typing use too (`normal.normalize`)
        self.root = normalize(tool.parameters)
        try:
            self.validator = validator_factory.validator_for(self.root, retriever=_no_remote)
        except Exception as exc:  # noqa: BLE001 - jsonschema-rs raises its own types
            first = str(exc).split("\n", 1)[0]
            raise ShapeError(f"tools[{tool.name}].parameters", f"is not a valid JSON schema: {first}") from None
        self.hints = _string_hints(self.root)

    def check(self, arguments: Any, lines: LineIndex, fallback_pos: int = 0):
        """Type the lossless `arguments` by the schema and validate them: (plain arguments,
        `coerced` diagnostics, `schema` diagnostics). Positions are those of the decoded text
        that `lines` indexes; a violation with no scalar to point at is at `fallback_pos`."""
        typing = Typing(self.root, lines)
        typed = typing.run(arguments)
        violations = []
        validator = self.validator
        try:
            valid = validator.is_valid(typed)
            errors = [] if valid else list(_first(validator.iter_errors(typed), MAX_SCHEMA_ERRORS + 1))
        except Exception as exc:  # noqa: BLE001 - a value the validator cannot take is a finding
            errors = [exc]
        for number, error in enumerate(errors[:MAX_SCHEMA_ERRORS]):
            path = list(getattr(error, "instance_path", ()))
            where = pointer_text(_chain(path))
            message = getattr(error, "message", None) or str(error).split("\n", 1)[0]
            if number == MAX_SCHEMA_ERRORS - 1 and len(errors) > MAX_SCHEMA_ERRORS:
                message += " (and more violations, not listed)"
            pos, end = _position(arguments, path, fallback_pos)
            line, column = lines.line_and_column(pos)
            violations.append(Diagnostic("error", "schema", f"at \"{where}\": {message}", line, column, pos, end))
        return typed, typing.diagnostics, violations


def _first(iterator, count):
    for number, item in enumerate(iterator):
        if number >= count:
            return
        yield item


def _chain(path: list):
    pointer = None
    for segment in path:
        pointer = (pointer, segment)
    return pointer


def _position(arguments: Any, path: list, fallback: int) -> tuple[int, int]:
    """Where the value at `path` of the lossless arguments was written: its scalar's text, else
    (a container, or a key that is missing) `fallback`."""
    node = arguments
    for segment in path:
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
            node = node[segment]
        else:
            break
    if type(node) is Scalar:
        return node.pos, node.pos + (len(node.lexeme) if node.lexeme is not None else 0)
    return fallback, fallback


def _string_hints(parameters: Any) -> StringHints | None:
    root = resolve(parameters, parameters)
    if root is None:
        return None
    properties = root.get("properties")
    if not isinstance(properties, dict) or not properties:
        return None
    strings = set()
    for key, schema in properties.items():
        s = resolve(schema, parameters)
        if s is not None and declared_types(s) == {"string"} and not any(k in s for k in ("anyOf", "oneOf", "enum", "const")):
            strings.add(key)
    closed = root.get("additionalProperties") is False and not root.get("patternProperties")
    return StringHints(frozenset(properties), frozenset(strings), not closed)


class ToolRegistry:
    """The declared tools of one request, compiled: `get(name)` (None for an undeclared name)."""

    def __init__(self, tools: tuple[Tool, ...]):
        factory = _load_validator_factory()
        self.tools = tools
        self._by_name = {tool.name: ToolSchema(tool, factory) for tool in tools}

    def get(self, name: str) -> ToolSchema | None:
        return self._by_name.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def hints(self, name: str) -> StringHints | None:
        schema = self._by_name.get(name)
        return schema.hints if schema is not None else None


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(key: str) -> ToolRegistry:
    return ToolRegistry(read_tools(json.loads(key)))


def compile_tools(tools: Sequence[Any] | None) -> ToolRegistry | None:
    """`tools` (an OpenAI tool list or bare function schemas) compiled; None for None, and a
    `ToolRegistry` as it is. Cached by content (a JSON dump of the list: on a hit, that dump is
    the whole cost; a server with a large fixed list passes the registry instead). Raises `ShapeError`
    for a malformed tool or an invalid schema, `ImportError` (saying what to install) when
    jsonschema-rs, a dependency, is missing."""
    if tools is None or isinstance(tools, ToolRegistry):
        return tools  # compiled already: a server may compile its tool list once and pass that
    try:
        key = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        read_tools(tools)  # a shape error names the field, when there is one
        raise ShapeError("tools", "must be JSON data (str, numbers, bool, None, lists, dicts)") from None
    except RecursionError:
        key = None
    try:
        if key is not None:
            # a list too long for the cache is compiled afresh: see _CACHE_MAX_CHARS
            return _compile.__wrapped__(key) if len(key) > _CACHE_MAX_CHARS else _compile(key)
    except RecursionError:
        pass
    # json.dumps and json.loads recurse: a list nested this deep is no schema a validator takes
    raise ShapeError("tools", "nest too deeply to be read as JSON schemas")
