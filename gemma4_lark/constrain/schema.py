"""The declared tools' JSON schemas as grammar rules: one call block whose name is a declared tool
and whose arguments follow that tool's schema, written the way the format writes them.

`tool_call_rules(tools, choice)` builds an `ir.Grammar` whose start rule is one complete block
`<|tool_call>call:NAME{...}<tool_call|>`; every rule it makes is named `tool_...`, so the rules can
sit beside the format's own in one exported grammar. `not_enforced(tools)` lists what the schemas
ask for that the rules leave to validation.

What "the way the format writes them" means here (docs/constrained-decoding.md):

- Canonical text only: no whitespace between tokens, strings always between `<|"|>` delimiters
  (never bare words), numbers as the grammar's INTEGER and FLOAT terminals read them, `true`,
  `false`, `null`; keys bare when the grammar's KEY terminal takes them, else delimited strings
  (the renderers' rule, `render.values.key_bare_if_possible`).
- Property order: the official chat template writes arguments with `dictsort`, keys sorted
  case-insensitively at every level, and that is what the model learned to write. So by default
  an object's declared properties come in that order (`order="sorted"`); `order="declared"`
  keeps the schema's own order (what the OMP profile writes when its caller built the arguments
  in schema order). Either way each property is a fixed position that is present or skipped,
  which costs a rule or two per property: never the factorial number of orders.
- Additional members, where a schema allows them, take bare keys that are none of the declared
  keys (so no member can repeat a declared key) and may stand anywhere after a member or first;
  an object that declares no properties (a map) takes any key, bare or quoted.
  A missing `additionalProperties` is `false` when the object declares `properties` (what strict
  tool calling means in every engine), and any member when it declares none (a free-form map).

Lexical pieces come from the grammar's terminals (`gemma4_lark.grammar`), translated from their
regular expressions: a string's content is STRING's (anything without the delimiter: STRING reads
up to the first one), numbers are INTEGER's and FLOAT's, keys are KEY's. Nothing here re-states
them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..grammar import terminal_pattern
from ..tools import Tool, ToolChoice
from ..schema import normal
from . import ir
from ._emit import grammar_of, productive_rules, pruned
from ._errors import SchemaError
from ._lexical import fixed_literal, marks_apart, shared_pieces
from ._read import MAX_ENFORCED_ITEMS, ToolCompiler
# the limits the rules keep, read here by callers (and by `not_enforced`)
from ._read import MAX_EXCLUDED_KEY_CHARS, MAX_SCHEMA_DEPTH  # noqa: F401


__all__ = ["tool_call_rules", "argument_rules", "not_enforced", "SchemaError", "ORDERS"]


ORDERS = ("sorted", "declared")


# The keywords each kind of schema may carry that the rules do not enforce (validation does).
_UNENFORCED = {
    "string": ("pattern", "minLength", "maxLength", "format", "contentEncoding", "contentMediaType"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "array": ("uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"),
    "object": ("patternProperties", "propertyNames", "minProperties", "maxProperties",
               "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"),
    "any": ("not", "if", "then", "else"),
}


def argument_rules(tools: Sequence[Tool], *, order: str = "sorted",
                   balanced: bool = False) -> tuple[dict[str, ir.Expr], dict[str, str]]:
    """The rules for every tool's arguments: (rules, {tool name: its arguments rule}). The shared
    lexical rules (`tool_string`, `tool_key`, ...) are included. `balanced`: an object's members
    as a balanced tree of rules (`MemberTree`), not a chain of one rule per member."""
    rules, names, _ = _compile(tools, order, balanced)
    return rules, names


def _compile(tools: Sequence[Tool], order: str,
             balanced: bool = False) -> tuple[dict[str, ir.Expr], dict[str, str], list[str]]:
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    pieces = shared_pieces()
    rules: dict[str, ir.Expr] = dict(pieces.rules)
    names = {}
    notes: list[str] = []
    places: dict[str, tuple[str, str]] = {}
    name_pattern = terminal_pattern("NAME")
    for index, tool in enumerate(tools):
        if not name_pattern.fullmatch(tool.name):
            raise SchemaError(f"tool {tool.name!r}: the format cannot write this name (the grammar's NAME)")
        compiler = ToolCompiler(tool, index, order, rules, pieces, balanced)
        names[tool.name] = compiler.arguments()
        notes.extend(compiler.notes)
        places.update((rule, (tool.name, where)) for rule, where in compiler.places.items())
    productive = productive_rules(rules)
    for tool_name, rule in names.items():
        if rule not in productive:
            # name the innermost place with no finite value: a definition, else an object
            stuck = [where for r, (t, where) in places.items() if t == tool_name and r not in productive]
            where = next((w for w in stuck if w.startswith("#")), stuck[-1] if stuck else "parameters")
            raise SchemaError(f"tool {tool_name!r}: {where}: no finite value satisfies this schema (it refers"
                              " to itself on every way out, as an array of itself with minItems 1 does)")
    return pruned(rules, productive), names, notes


def tool_call_rules(tools: Sequence[Tool], choice: ToolChoice, *, order: str = "sorted",
                    balanced: bool = False) -> ir.Grammar:
    """One call block `<|tool_call>call:NAME{...}<tool_call|>` of a declared tool (the named one
    under a function `tool_choice`), its arguments following the tool's schema (see the module's
    documentation for what that enforces). Start rule `tool_call`; every rule is named `tool_...`.

    Raises `ValueError` when no call is possible (no tools, or `tool_choice` "none") and
    `SchemaError` (a ValueError) for a schema no call can satisfy or that cannot be read."""
    if choice.mode == "none":
        raise ValueError("tool_choice 'none' allows no call block")
    if choice.mode == "function":
        tools = [tool for tool in tools if tool.name == choice.name]
        if not tools:
            raise ValueError(f"tool_choice names {choice.name!r}, which is not a declared tool")
    if not tools:
        raise ValueError("no tools declared: a call block needs at least one")
    rules, arguments = argument_rules(tools, order=order, balanced=balanced)
    calls = [ir.seq(marks_apart(name), ir.Ref(rule)) for name, rule in arguments.items()]
    rules["tool_call"] = ir.seq(ir.Special(fixed_literal("TOOL_CALL_OPEN")), marks_apart(fixed_literal("CALL_KEYWORD")),
                                ir.choice(*calls), ir.Special(fixed_literal("TOOL_CALL_CLOSE")))
    return grammar_of(rules, "tool_call")


def not_enforced(tools: Sequence[Tool], *, order: str = "sorted") -> list[str]:
    """What the tools' schemas ask for that `tool_call_rules` leaves to validation, one line per
    keyword and place: `"get_weather: parameters.properties.days.maximum"`. Empty when the rules
    enforce everything. Places are in the schema as `normalize` reads it (docs/schema.md)."""
    found: list[str] = []
    try:
        found.extend(_compile(tools, order)[2])
    except SchemaError:
        pass  # no rules to speak of: tool_call_rules raises
    for tool in tools:
        _walk_unenforced(tool.name, normal.normalize(tool.parameters), "parameters", found)
    return found


def _walk_unenforced(tool: str, schema: Any, where: str, found: list[str]) -> None:
    stack = [(schema, where)]
    while stack:
        node, at = stack.pop()
        if not isinstance(node, Mapping):
            continue
        for keywords in _UNENFORCED.values():
            for keyword in keywords:
                if keyword in node:
                    found.append(f"{tool}: {at}.{keyword}")
        if "oneOf" in node:
            found.append(f"{tool}: {at}.oneOf (only one option matching: the rules take any)")
        for bound in ("minItems", "maxItems"):
            value = node.get(bound)
            if isinstance(value, int) and value > MAX_ENFORCED_ITEMS:
                found.append(f"{tool}: {at}.{bound} (over {MAX_ENFORCED_ITEMS})")
        for keyword in ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas"):
            if isinstance(node.get(keyword), Mapping):
                for key, sub in node[keyword].items():
                    stack.append((sub, f"{at}.{keyword}.{key}"))
        for keyword in ("items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains"):
            if isinstance(node.get(keyword), Mapping):
                stack.append((node[keyword], f"{at}.{keyword}"))
        for keyword in ("anyOf", "oneOf", "allOf", "prefixItems", "items"):
            if isinstance(node.get(keyword), list):
                for i, sub in enumerate(node[keyword]):
                    stack.append((sub, f"{at}.{keyword}[{i}]"))

