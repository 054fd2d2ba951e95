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

import functools
import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .. import tokens
from ..grammar import BLOCK_STARTS, terminal_literal, terminal_pattern
from ..render.values import ValueWriter, key_bare_if_possible, python_number
from ..tools import Tool, ToolChoice
from ..schema import normal
from . import ir, numbers, translate
from ..error_base import Gemma4Error


__all__ = ["tool_call_rules", "argument_rules", "not_enforced", "SchemaError", "ORDERS"]

ORDERS = ("sorted", "declared")

# Array bounds up to this many items are written out as repetitions; beyond it they are left to
# validation (a bound of a thousand would be a thousand copies in some engines).
MAX_ENFORCED_ITEMS = 16

# How deeply schemas may nest (arrays in arrays, objects in objects, anyOf in anyOf): deeper
# ones are refused with a SchemaError rather than compiled (no tool needs more, and each level
# costs stack in every engine's compiler as well as here).
MAX_SCHEMA_DEPTH = 64

# How long a declared key may be and still be kept out of "any other key" (`bare_key_except`):
# the rule for that is a chain as deep as the key is long, which every compiler walks. A longer
# key is left to "any other key" too, and `not_enforced` says so.
MAX_EXCLUDED_KEY_CHARS = 64

# The keywords each kind of schema may carry that the rules do not enforce (validation does).
_UNENFORCED = {
    "string": ("pattern", "minLength", "maxLength", "format", "contentEncoding", "contentMediaType"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "array": ("uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"),
    "object": ("patternProperties", "propertyNames", "minProperties", "maxProperties",
               "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"),
    "any": ("not", "if", "then", "else"),
}


class SchemaError(ValueError, Gemma4Error):
    """A tool's schema that no call could satisfy, or that the rules cannot read (an unknown
    `$ref`, a name the format cannot write); the message names the tool and the place."""


class _NoValue(SchemaError):
    """A schema none of whose values the format can write (an enum of strings holding control
    tokens): an optional property or an anyOf option with it is left out."""


# ------------------------------------------------------------------------ lexical pieces ----
# The strings, numbers and keys are the grammar's STRING, INTEGER, FLOAT and KEY as
# `translate.terminal_text` derives them (the one derivation every export uses), where a call
# block's parser expects them.


def _class_text(codes: Iterable[int]) -> str:
    """The inside of a character class for a set of code points."""
    return ir.char_class(ir.merge_ranges((c, c) for c in codes)).chars


def _literal(name: str) -> str:
    text = terminal_literal(name)
    if text is None:
        raise NotImplementedError(f"terminal {name} is no longer a fixed string")
    return text


@dataclass(frozen=True)
class _Pieces:
    """What every tool's rules share, built once from the grammar."""

    rules: Mapping[str, ir.Expr]
    lbrace: ir.Expr
    rbrace: ir.Expr
    lbracket: ir.Expr
    rbracket: ir.Expr
    comma: ir.Expr
    colon: ir.Expr
    key_chars: frozenset[int]  # KEY is one or more of these

    @property
    def punctuation_chars(self) -> frozenset[str]:
        """The characters of the format's punctuation: `{ } [ ] , :`, read from the grammar."""
        marks = (self.lbrace, self.rbrace, self.lbracket, self.rbracket, self.comma, self.colon)
        return frozenset("".join(text for mark in marks for text in _literal_text(mark)))


def _text_of(name: str) -> ir.Expr:
    """A terminal without markers: its language as IR."""
    head, body, tail = translate.terminal_text(name, BLOCK_STARTS)
    if head or tail:
        raise NotImplementedError(f"{name} now starts or ends with a marker")
    return body


@functools.lru_cache(maxsize=1)
def _pieces() -> _Pieces:
    punctuation = {n: ir.Literal(_literal(n)) for n in ("LBRACE", "RBRACE", "LBRACKET", "RBRACKET", "COMMA", "COLON")}
    opener, content, closer = translate.terminal_text("STRING", BLOCK_STARTS)
    if not (opener and closer):
        raise NotImplementedError("STRING is no longer a delimiter, content and a delimiter")
    rules: dict[str, ir.Expr] = {
        # the content as a rule of its own: a regular one, which a printer may make one lexeme
        "tool_string": ir.seq(ir.Special(opener), ir.Ref("tool_string_content"), ir.Special(closer)),
        "tool_string_content": content,
        "tool_integer": _text_of("INTEGER"),
        "tool_float": _text_of("FLOAT"),
        "tool_key": _text_of("KEY"),
    }
    rules["tool_number"] = ir.choice(ir.Ref("tool_integer"), ir.Ref("tool_float"))
    # an `integer` may be written as an integral float (`3.0`): JSON Schema's integers include
    # it, and the renderers write a float 3.0 so
    rules["tool_whole"] = ir.choice(ir.Ref("tool_integer"), numbers.integral_float(_text_of("INTEGER")))
    rules["tool_boolean"] = ir.choice(ir.Literal(_literal("TRUE")), ir.Literal(_literal("FALSE")))
    rules["tool_null"] = ir.Literal(_literal("NULL"))
    key_ranges = translate.terminal_chars("KEY", BLOCK_STARTS)
    if key_ranges is None:
        raise NotImplementedError("KEY is no longer one or more characters of one class")
    key_chars = frozenset(c for c in range(128) if any(lo <= c <= hi for lo, hi in key_ranges))
    p = punctuation
    # any value, as the format writes it (for schemas that allow anything)
    any_member = ir.seq(ir.choice(ir.Ref("tool_key"), ir.Ref("tool_string")), p["COLON"], ir.Ref("tool_any"))
    rules["tool_any_object"] = ir.seq(p["LBRACE"], ir.Repeat(ir.seq(any_member, ir.Repeat(ir.seq(p["COMMA"], any_member))), 0, 1), p["RBRACE"])
    rules["tool_any_array"] = ir.seq(p["LBRACKET"], ir.Repeat(ir.seq(ir.Ref("tool_any"), ir.Repeat(ir.seq(p["COMMA"], ir.Ref("tool_any")))), 0, 1), p["RBRACKET"])
    rules["tool_any"] = ir.choice(*(ir.Ref(n) for n in ("tool_string", "tool_number", "tool_boolean", "tool_null", "tool_any_object", "tool_any_array")))
    return _Pieces(rules, p["LBRACE"], p["RBRACE"], p["LBRACKET"], p["RBRACKET"], p["COMMA"], p["COLON"], key_chars)


# ------------------------------------------------------------------------ canonical text ----

# The official renderer's writer for arguments: keys sorted at every level, bare when KEY takes them.
_WRITER = ValueWriter(number=python_number, key=key_bare_if_possible, sort_keys=True, unsafe="error")


def _text(text: str) -> ir.Expr:
    """Rendered text as IR: the string delimiters as `Special`, the strings' texts literal, and
    the structure around them as `_marks_apart` writes it."""
    parts: list[ir.Expr] = []
    for i, piece in enumerate(text.split(tokens.STRING_DELIMITER)):
        if i:
            parts.append(ir.Special(tokens.STRING_DELIMITER))
        if piece:
            parts.append(ir.Literal(piece) if i % 2 else _marks_apart(piece))
    return ir.seq(*parts) if parts else ir.Seq(())


def _marks_apart(text: str) -> ir.Expr:
    """Text outside strings as IR: each of the format's punctuation marks (`{ } [ ] , :`) a literal
    of its own, the runs between them literals. So no literal of a tool's rules holds a mark
    beside other text: a greedy lexer offered `{a:1}` (a constant) beside `{` (an object) would
    follow the long literal and never come back (docs/constrained-decoding.md, How they are made)."""
    marks = _pieces().punctuation_chars
    parts: list[ir.Expr] = []
    run = ""
    for char in text:
        if char in marks:
            if run:
                parts.append(ir.Literal(run))
                run = ""
            parts.append(ir.Literal(char))
        else:
            run += char
    if run:
        parts.append(ir.Literal(run))
    return ir.seq(*parts) if parts else ir.Seq(())


# ------------------------------------------------------------------------------ schemas ----

_TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
_COMBINATORS = ("anyOf", "oneOf", "allOf")
_ANNOTATIONS = normal.ANNOTATIONS

# Merging the keywords beside a union into each of its options copies them once per option: done
# while they are at most this many nodes (a constant per option: linear), else the union is left
# to validation and `not_enforced` lists it.
DISTRIBUTED_SIZE = 16


def _is_any(schema: Any) -> bool:
    return isinstance(schema, Mapping) and all(k in _ANNOTATIONS for k in schema)


def _constrains(schema: Mapping) -> bool:
    return any(k not in _ANNOTATIONS for k in schema)


_KEYS = ("properties", "additionalProperties")


def _object_keywords(base: Mapping, part: Mapping) -> bool:
    """Whether the keys of two objects being merged can be read: `properties` maps and
    `additionalProperties` a schema or a boolean, on both sides."""
    for side in (base, part):
        if not isinstance(side.get("properties", {}), Mapping):
            return False
        if not isinstance(side.get("additionalProperties", True), (bool, Mapping)):
            return False
    return True


def _type_set(schema: Mapping) -> set | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _same(a: Any, b: Any) -> bool:
    """JSON equality, as validation compares an enum's values: at every level True is not 1, and
    1 is 1.0; objects equal whatever their keys' order. Iterative (a value may nest deeply)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        kx, ky = _json_kind(x), _json_kind(y)
        if kx in _NUMBER_KINDS and ky in _NUMBER_KINDS:
            if x != y:
                return False
        elif kx != ky:
            return False
        elif kx == "array":
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y))
        elif kx == "object":
            if x.keys() != y.keys():
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


_NUMBER_KINDS = ("integer", "number")


def _shared(mine: list, theirs: list) -> list:
    """The values of `mine` that `_same` finds in `theirs`, in `mine`'s order. Linear: each value
    is looked up by a hashable form of its `_same` class (`_same_key`); a value that has none (a
    NaN in it) is compared with each of `theirs`. (Two enums of 32,000 values compared pairwise
    took 87 s.)"""
    keys = {key for key in map(_same_key, theirs) if key is not None}
    out = []
    for v in mine:
        key = _same_key(v)
        if key in keys if key is not None else any(_same(v, w) for w in theirs):
            out.append(v)
    return out


def _same_key(value: Any):
    """A hashable form of `value` equal for the values `_same` finds equal: each value tagged with
    its JSON kind at every level (numbers one kind, so 1 is 1.0; True is no number); None for a
    value holding a NaN (never equal, and a set would find it by identity) or nested past
    Python's recursion limit."""
    try:
        return _hashable(value)
    except (TypeError, ValueError, RecursionError):
        return None


def _hashable(value: Any):
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, (int, float)):
        if value != value:
            raise ValueError("NaN")
        return ("number", value)
    if isinstance(value, list):
        return ("list", tuple(_hashable(v) for v in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((k, _hashable(v)) for k, v in value.items()))
    hash(value)  # (anything else unhashable: TypeError, and the caller compares instead)
    return (_json_kind(value), value)


def _brief(value: Any) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _size(schema: Any, most: int) -> int:
    """How many nodes `schema` has, counted up to `most` + 1."""
    count, stack = 0, [schema]
    while stack and count <= most:
        node = stack.pop()
        count += 1
        if isinstance(node, Mapping):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


class _ToolCompiler:
    """One tool's schema as rules named `tool_<index>_...`."""

    def __init__(self, tool: Tool, index: int, order: str, rules: dict[str, ir.Expr], pieces: _Pieces,
                 balanced: bool = False):
        self.tool = tool
        self.prefix = f"tool_{index}_"
        self.order = order
        self.balanced = balanced
        self.rules = rules
        self.pieces = pieces
        self.count = 0
        self.depth = 0
        self.refs: dict[str, str] = {}  # $ref -> rule name
        self.places: dict[str, str] = {}  # rule name -> the place in the schema it is made for
        self.notes: list[str] = []  # what the rules leave to validation, beyond `_UNENFORCED`
        self.merging: set[str] = set()  # the `$ref`s being merged (`intersect`)
        self.no_values: dict[str, _NoValue] = {}  # the `$ref`s whose schemas no value satisfies
        self.root = normal.normalize(tool.parameters)

    def error(self, where: str, message: str) -> SchemaError:
        return SchemaError(f"tool {self.tool.name!r}: {where}: {message}")

    def no_value(self, where: str, message: str) -> _NoValue:
        """The error for a schema no value satisfies: where it is optional (a property, a union's
        option, an array's items) the caller leaves it out."""
        return _NoValue(f"tool {self.tool.name!r}: {where}: {message}")

    def new_rule(self, kind: str) -> str:
        self.count += 1
        return f"{self.prefix}{kind}{self.count}"

    # --- entry points ---------------------------------------------------------------------
    def arguments(self) -> str:
        """The rule for the call's arguments (always an object)."""
        schema = dict(self.root)
        name = f"{self.prefix}arguments"
        schema.setdefault("type", "object")
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if "object" not in types:
            raise self.error("parameters", f"the arguments are an object, but the schema's type is {schema['type']!r}")
        schema["type"] = "object"
        self.places[name] = "parameters"
        self.rules[name] = self.value(schema, "parameters")
        return name

    # --- any schema -------------------------------------------------------------------------
    def value(self, schema: Any, where: str) -> ir.Expr:
        if self.depth >= MAX_SCHEMA_DEPTH:
            raise self.error(where, f"the schema nests more than {MAX_SCHEMA_DEPTH} levels deep")
        self.depth += 1
        try:
            return self._value(schema, where)
        finally:
            self.depth -= 1

    def _value(self, schema: Any, where: str) -> ir.Expr:
        if schema is True or _is_any(schema):
            return ir.Ref("tool_any")
        if schema is False:
            raise self.no_value(where, "the schema `false` admits no value")
        if not isinstance(schema, Mapping):
            raise self.error(where, f"a schema is an object or a boolean, not {type(schema).__name__}")
        if "$ref" in schema:  # normalized: no sibling but annotations (docs/schema.md)
            return self.ref(schema["$ref"], where)
        if any(k in schema for k in _COMBINATORS):
            return self.combined(schema, where)
        if "const" in schema:
            const = schema["const"]
            kept = self.of_types(schema, [const], where, f"the const {_brief(const)} is not")
            return self.literal_values(self.held_beside(schema, kept, where, "not even the const"), where)
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise self.error(where + ".enum", "an enum is a non-empty list")
            kept = self.of_types(schema, values, where + ".enum", "no value of the enum is")
            return self.literal_values(self.held_beside(schema, kept, where + ".enum", "no value of the enum"), where + ".enum")
        return self.typed(schema, where)

    def held_beside(self, schema: Mapping, values: list, where: str, what: str) -> list:
        """The values of an `enum` or `const` that the other keywords beside it allow too
        (`minItems`, `required`, `properties`... as merging an `allOf` puts them there): each
        value checked by the validator the parser uses, against those keywords. A schema beside
        it that refers elsewhere (`$ref`) is left to validation, and `not_enforced` says so."""
        beside = {k: v for k, v in schema.items() if k not in ("enum", "const", "type") and k not in _ANNOTATIONS}
        if not beside:
            return values  # the usual case: nothing but the values and their type
        if "$ref" in json.dumps(beside, default=str):
            self.leave(where, "keywords beside it that refer elsewhere: the rules take its values")
            return values
        if "$schema" in self.root:
            beside["$schema"] = self.root["$schema"]
        import jsonschema_rs  # (a dependency, imported where it is needed: reading a grammar does not)

        try:
            validator = jsonschema_rs.validator_for(beside)
        except Exception:  # noqa: BLE001 - jsonschema-rs raises its own types; the parser refuses such a schema
            self.leave(where, "keywords beside it the validator cannot read: the rules take its values")
            return values
        kept = []
        for value in values:
            try:
                if validator.is_valid(value):
                    kept.append(value)
            except (TypeError, ValueError, OverflowError):
                pass  # (a value the validator cannot take, NaN: no text in the format either)
        if not kept:
            raise self.no_value(where, f"{what} holds to the keywords beside it")
        return kept

    def of_types(self, schema: Mapping, values: list, where: str, what: str) -> list:
        """The values of an `enum` or `const` that the `type` beside it allows; none is a schema no
        value satisfies (`what`: the message's subject, "... of the type 'integer'")."""
        kinds = _type_set(schema)
        if kinds is None:
            return values
        kept = [v for v in values if _json_kind(v) in kinds or _json_kind(v) == "integer" and "number" in kinds]
        if not kept:
            raise self.no_value(where, f"{what} of the type {schema['type']!r}")
        return kept

    def combined(self, schema: Mapping, where: str) -> ir.Expr:
        """`anyOf`, `oneOf`, `allOf` and the keywords beside them, which all hold (an
        intersection). Parts that are one schema (`allOf`, a one-option `anyOf`) are merged into
        the rest, keyword by keyword (`intersect`); then the first union of several options
        (anyOf, else oneOf) is a choice of its options, each merged with the rest. So each option
        is compiled once, whatever the nesting: linear. Where merging the rest into every option
        would copy more than `DISTRIBUTED_SIZE` nodes per option (the rest is large and the
        options many), only what stays linear is enforced and `not_enforced` says what is not."""
        base = {k: v for k, v in schema.items() if k not in _COMBINATORS and k not in _ANNOTATIONS}
        unions: list[tuple[str, list]] = []
        for keyword in ("allOf", "anyOf", "oneOf"):
            if keyword not in schema:
                continue
            options = schema[keyword]
            if not isinstance(options, list) or not options:
                raise self.error(f"{where}.{keyword}", "is a non-empty list of schemas")
            if keyword == "allOf" or len(options) == 1:
                for i, part in enumerate(options):
                    base = self.intersect(base, part, f"{where}.{keyword}[{i}]")
            else:
                unions.append((keyword, options))
        if not unions:
            return self.value(base, where)
        (keyword, options), rest = unions[0], unions[1:]
        for other, _ in rest:
            self.leave(f"{where}.{other}", f"beside {keyword}: the rules enforce the {keyword} only")
        at = f"{where}.{keyword}"
        if not _constrains(base):
            return self.options(options, at, lambda option, _at: option)
        if all(isinstance(o, Mapping) and set(o) - set(_ANNOTATIONS) <= {"required"} for o in options):
            return self.required_options(base, options, at)
        if _size(base, DISTRIBUTED_SIZE) > DISTRIBUTED_SIZE:
            self.leave(at, f"its options beside a schema of more than {DISTRIBUTED_SIZE} nodes: the rules enforce that schema only")
            return self.value(base, where)
        return self.options(options, at, lambda option, part_at: self.intersect(base, option, part_at))

    def options(self, options: list, at: str, merged) -> ir.Expr:
        exprs = []
        for i, option in enumerate(options):
            part_at = f"{at}[{i}]"
            try:
                exprs.append(self.value(merged(option, part_at), part_at))
            except _NoValue:
                if i == len(options) - 1 and not exprs:
                    raise
        return ir.choice(*dict.fromkeys(exprs))

    def required_options(self, base: dict, options: list, at: str) -> ir.Expr:
        """`anyOf` (or `oneOf`) of `required` lists beside an object: "at least one of these
        arguments". One key per option is enforced in linear size (see `members`); larger lists
        are left to validation."""
        sets = [o.get("required") for o in options]
        if all(isinstance(r, list) and len(r) == 1 and isinstance(r[0], str) for r in sets):
            one_of = [r[0] for r in sets]
            properties = base.get("properties") if isinstance(base.get("properties"), Mapping) else {}
            extra = base.get("additionalProperties", False if "properties" in base else True)
            if extra is False and all(k in properties for k in one_of):
                if at.endswith(".oneOf"):
                    self.leave(at, "only one option matching: the rules take any")
                return self.object({**base, "type": "object"}, at.rsplit(".", 1)[0], at_least_one=frozenset(one_of))
        self.leave(at, "options that list required arguments: the rules enforce the schema beside them only")
        return self.value(base, at.rsplit(".", 1)[0])

    def leave(self, where: str, why: str) -> None:
        self.notes.append(f"{self.tool.name}: {where} ({why})")

    def intersect(self, base: Mapping, part: Any, where: str) -> dict:
        """`base` and `part` both holding, as one schema, keyword by keyword: types intersected,
        `properties` merged (a property in both is the `allOf` of its two schemas), `required`
        joined, enums filtered, array bounds tightened, unions kept for `combined`. A `$ref`
        part is its target (a reference within a reference being merged stays a reference)."""
        if part is True or part == {}:
            return dict(base)
        if part is False:
            raise self.no_value(where, "the schema `false` admits no value")
        if not isinstance(part, Mapping):
            raise self.error(where, f"a schema is an object or a boolean, not {type(part).__name__}")
        if "$ref" in part:
            target = part["$ref"]
            if target in self.merging:
                self.leave(where, "a reference merged within itself: the rules enforce the schema beside it")
                return dict(base)
            self.merging.add(target)
            try:
                return self.intersect(base, self.resolve(target, where), where)
            finally:
                self.merging.discard(target)
        out = dict(base)
        for key, value in part.items():
            if key in _ANNOTATIONS:
                continue
            if key not in out:
                out[key] = value
                continue
            mine = out[key]
            if key == "type":
                a, b = _type_set({"type": mine}), _type_set({"type": value})
                both = [t for t in _TYPES if (t in a and t in b) or (t == "integer" and (
                    "integer" in a and "number" in b or "number" in a and "integer" in b))]
                if not both:
                    raise _NoValue(f"tool {self.tool.name!r}: {where}: the types {mine!r} and {value!r} share no value")
                out[key] = both
            elif key in ("properties", "additionalProperties") and _object_keywords(base, part):
                continue  # the two objects' keys, together below
            elif key == "required" and isinstance(mine, list) and isinstance(value, list):
                out[key] = list(dict.fromkeys(mine + value))
            elif key == "enum" and isinstance(mine, list) and isinstance(value, list):
                out[key] = _shared(mine, value)
                if not out[key]:
                    raise _NoValue(f"tool {self.tool.name!r}: {where}: the enums share no value")
            elif key == "const":
                if not _same(mine, value):
                    raise _NoValue(f"tool {self.tool.name!r}: {where}: two different consts")
            elif key in ("minItems",) and isinstance(mine, int) and isinstance(value, int):
                out[key] = max(mine, value)
            elif key in ("maxItems",) and isinstance(mine, int) and isinstance(value, int):
                out[key] = min(mine, value)
            elif key == "additionalProperties":  # (one of them not a schema: validation's to refuse)
                out[key] = False if mine is False or value is False else {"allOf": [mine, value]}
            elif key in ("items", "not", "contains"):
                out[key] = {"allOf": [mine, value]}
            elif key == "allOf" and isinstance(mine, list) and isinstance(value, list):
                out[key] = list(mine) + list(value)
            elif key in ("anyOf", "oneOf"):
                self.leave(f"{where}.{key}", "a union merged beside another: the rules enforce the other")
            # any other keyword is validation's alone (`_UNENFORCED`): either value is as good
        if _object_keywords(base, part) and any(k in base for k in _KEYS) and any(k in part for k in _KEYS):
            self._intersect_keys(out, base, part, where)
        if "enum" in out and "const" in out:
            out["enum"] = [v for v in out["enum"] if _same(v, out["const"])]
            if not out["enum"]:
                raise _NoValue(f"tool {self.tool.name!r}: {where}: the const is none of the enum")
        return out

    def _intersect_keys(self, out: dict, base: Mapping, part: Mapping, where: str) -> None:
        """The keys two objects both allow: a key one of them has no property for is that one's
        additional property, refused where `additionalProperties` is false (and no
        `patternProperties` may take it); a key both allow holds both schemas."""
        declared = []
        for side in (base, part):
            extra = side.get("additionalProperties", True)
            declared.append((side.get("properties", {}), extra, extra is not False or "patternProperties" in side))
        properties: dict = {}
        for key in dict.fromkeys([*declared[0][0], *declared[1][0]]):
            schemas = []
            for props, extra, open_ in declared:
                if key in props:
                    schemas.append(props[key])
                elif not open_:
                    break  # an additional property where that object takes none
                elif extra is not True and extra != {}:
                    schemas.append(extra)
            else:
                properties[key] = schemas[0] if len(schemas) == 1 else ({"allOf": schemas} if schemas else {})
        out["properties"] = properties
        extras = [extra for _, extra, _ in declared if extra is not True and extra != {}]
        if any(extra is False for extra in extras):
            out["additionalProperties"] = False
        elif extras:
            out["additionalProperties"] = extras[0] if len(extras) == 1 else {"allOf": extras}
        elif any(side.get("additionalProperties", False) is True or side.get("additionalProperties") == {}
                 for side in (base, part)):
            # open where one of them says so and none closes it: a missing one defers to it, as
            # it defers to a schema above (absent on both: absent, read as `object` reads it)
            out["additionalProperties"] = True
        else:
            out.pop("additionalProperties", None)
        refused = [k for k in out.get("required", ()) if k not in properties and out.get("additionalProperties", True) is False
                   and "patternProperties" not in out]
        if refused:
            raise _NoValue(f"tool {self.tool.name!r}: {where}: `{refused[0]}` is required, and one of the "
                           "schemas merged takes no such property")

    def typed(self, schema: Mapping, where: str) -> ir.Expr:
        kind = schema.get("type")
        if kind is None:
            if any(k in schema for k in ("properties", "additionalProperties", "required")):
                kind = "object"
            elif any(k in schema for k in ("items", "prefixItems")):
                kind = "array"
            else:
                return ir.Ref("tool_any")
        kinds = kind if isinstance(kind, list) else [kind]
        options = []
        for k in kinds:
            if not isinstance(k, str) or k.lower() not in _TYPES:
                raise self.error(where + ".type", f"unknown type {k!r}")
            options.append(self.of_type(k.lower(), schema, where))  # Gemma's declarations write STRING, OBJECT...
        return ir.choice(*options)

    def of_type(self, kind: str, schema: Mapping, where: str) -> ir.Expr:
        if kind == "string":
            return ir.Ref("tool_string")
        if kind == "integer":
            return ir.Ref("tool_whole")
        if kind == "number":
            return ir.Ref("tool_number")
        if kind == "boolean":
            return ir.Ref("tool_boolean")
        if kind == "null":
            return ir.Ref("tool_null")
        if kind == "array":
            return self.array(schema, where)
        return self.object(schema, where)

    def literal_values(self, values: Sequence, where: str) -> ir.Expr:
        """The values' canonical texts. A value the renderers refuse to write (a string holding a
        control token, NaN) can never appear in a call they write: it is left out, and only a
        list of nothing else is an error."""
        options = []
        problem = None
        for i, value in enumerate(values):
            try:
                options.append(_text(_WRITER.write(value, f"{where}[{i}]")))
            except (TypeError, ValueError) as error:
                problem = problem or f"{where}[{i}]: has no text in the format ({error})"
        if not options:
            raise _NoValue(f"tool {self.tool.name!r}: {where}: no value can be written; {problem}")
        return ir.choice(*dict.fromkeys(options))  # one option per distinct text

    def resolve(self, target: Any, where: str) -> Any:
        """The schema a local `$ref` names, in the normalized parameters."""
        if not isinstance(target, str) or not target.startswith("#"):
            raise self.error(where + ".$ref", f"only references within the tool's schema (#/...) are followed, not {target!r}")
        node: Any = self.root
        for part in filter(None, target[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
                continue
            if not isinstance(node, Mapping) or part not in node:
                raise self.error(where + ".$ref", f"{target!r} names nothing in the tool's schema")
            node = node[part]
        if node is self.root:
            node = {**node, "type": "object"} if "type" not in node else node
        return node

    def ref(self, target: Any, where: str) -> ir.Expr:
        if target in self.no_values:
            raise self.no_values[target]
        if target not in self.refs:
            node = self.resolve(target, where)
            name = self.refs[target] = self.new_rule("def")
            self.places[name] = target
            # the rule exists before its body is built: a schema that refers to itself recurses
            self.rules[name] = ir.Seq(())
            try:
                self.rules[name] = self.value(node, target)
            except _NoValue as error:
                # every later use is refused too, and a use made while it was built derives
                # nothing (a rule that is only itself): pruned, never the empty placeholder
                self.no_values[target] = error
                self.rules[name] = ir.Ref(name)
                raise
        return ir.Ref(self.refs[target])

    # --- arrays -----------------------------------------------------------------------------
    def array(self, schema: Mapping, where: str) -> ir.Expr:
        p = self.pieces
        head_schemas = schema.get("prefixItems") or ()
        items = schema.get("items", True)
        if isinstance(items, list):  # draft 4's tuple form
            head_schemas, items = items, schema.get("additionalItems", True)
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        low = low if isinstance(low, int) and 0 <= low <= MAX_ENFORCED_ITEMS else 0
        high = high if isinstance(high, int) and 0 <= high <= MAX_ENFORCED_ITEMS else None
        if high is not None and high < low:
            raise self.no_value(where, f"maxItems {high} is below minItems {low}")
        if high is not None and len(head_schemas) > high:
            # the positions past maxItems are never written, whatever their schemas say
            head_schemas, items = head_schemas[:high], False
        head: list = []
        why_short = ""
        for i, position in enumerate(head_schemas):
            try:
                head.append(self.as_rule(self.value(position, f"{where}.prefixItems[{i}]")))
            except _NoValue as error:  # no value at position i: the array ends before it
                head_schemas, items, why_short = head_schemas[:i], False, f" ({error})"
                break
        tail = None
        if items is not False:
            try:
                tail = self.as_rule(self.value(items, where + ".items"))
            except _NoValue as error:  # no item has a value: the array ends after its positions
                why_short = f" ({error})"
        if tail is None:
            high = len(head) if high is None else min(high, len(head))
        if high is not None and high < low:
            raise self.no_value(where, f"minItems {low} is more items than the schema allows{why_short}")
        name = self.new_rule("array")
        m = len(head)
        # the items as one non-empty sequence, built from the last: item i is optional from
        # minItems on, and items of `items` come only after every prefix item
        more_low = max(0, low - m)
        more_high = None if high is None else high - m
        if m == 0:
            if high == 0:
                self.rules[name] = ir.seq(p.lbracket, p.rbracket)
                return ir.Ref(name)
            assert tail is not None
            more = None if more_high is None else more_high - 1
            # no repetition of nothing (`x{0}`): engines refuse a range that ends at 0
            body: ir.Expr = tail if more == 0 else ir.seq(tail, ir.Repeat(ir.seq(p.comma, tail), max(0, more_low - 1), more))
        else:
            last = head[m - 1]
            if tail is not None and (more_high is None or more_high > 0):
                last = ir.seq(last, ir.Repeat(ir.seq(p.comma, tail), more_low, more_high))
            items = head[:m - 1] + [last]
            written = min(low, m)  # the positions always written; after them, any prefix of the rest
            body = ir.seq(*_commas(items[:written], p.comma)) if written else None
            if written < m:
                rest = self._prefixes(items[written:])
                body = rest if body is None else ir.seq(body, ir.Repeat(ir.seq(p.comma, rest), 0, 1))
        self.rules[name] = ir.seq(p.lbracket, body if low > 0 else ir.Repeat(body, 0, 1), p.rbracket)
        return ir.Ref(name)

    def _prefixes(self, items: list) -> ir.Expr:
        """The non-empty prefixes of `items`, comma-separated, as a balanced tree of rules: a
        range's prefixes are its left half's, or its left half whole and then its right half's.
        log2(n) deep, where the nested optional tail `a (, b (, c)?)?` nested n deep in one
        expression: llguidance refused 30 levels, and the printers recursed past Python's limit at
        a few hundred."""
        comma = self.pieces.comma
        whole: dict = {(j, j + 1): item for j, item in enumerate(items)}
        prefix: dict = dict(whole)
        for lo, mid, hi in _tree_ranges(len(items)):
            whole[(lo, hi)] = self._rule_for("items", ir.seq(whole[(lo, mid)], comma, whole[(mid, hi)]))
            prefix[(lo, hi)] = self._rule_for("prefix", ir.choice(prefix[(lo, mid)], ir.seq(whole[(lo, mid)], comma,
                                                                                          prefix[(mid, hi)])))
        return prefix[(0, len(items))]

    def _rule_for(self, label: str, expr: ir.Expr) -> ir.Expr:
        name = self.new_rule(label)
        self.rules[name] = expr
        return ir.Ref(name)

    # --- objects ----------------------------------------------------------------------------
    def object(self, schema: Mapping, where: str, at_least_one: frozenset = frozenset()) -> ir.Expr:
        p = self.pieces
        properties = schema.get("properties") or {}
        if not isinstance(properties, Mapping):
            raise self.error(where + ".properties", "is an object of schemas")
        required = schema.get("required") or []
        if not isinstance(required, list):
            raise self.error(where + ".required", "is a list of names")
        for name in required:
            if name not in properties:
                # required but undeclared: a declared property of any value
                properties = {**properties, name: True}
        members = []
        for key, sub in properties.items():
            if sub is False:
                if key in required:
                    raise self.no_value(f"{where}.properties.{key}", "is required, but its schema is `false`")
                continue
            try:
                _WRITER.write({key: None}, where)  # refuses a key the format cannot write safely
                key_text = _WRITER.key(key)
            except ValueError as error:
                raise self.error(f"{where}.properties", f"key {key!r} has no text in the format ({error})") from None
            try:
                value = self.value(sub, f"{where}.properties.{key}")
            except _NoValue:
                if key in required:
                    raise
                continue  # it can never be written: as if its schema were `false`
            member = ir.seq(_text(key_text), p.colon, self.as_rule(value))
            members.append((key, key in required, member))
        if self.order == "sorted":
            members.sort(key=lambda m: m[0].lower())  # dictsort, as the official template writes
        extra = schema.get("additionalProperties")
        if extra is None:
            extra = False if "properties" in schema else True
        extra_member = None
        if extra is not False:
            noted = len(self.notes)
            if properties:
                # bare keys other than the declared ones (a quoted key could spell a declared one);
                # every declared one, also one with no value: validation holds it to its own
                # schema, never to `additionalProperties`
                written = {k: None for k, _, _ in members}
                declared = [*written, *(k for k in properties if k not in written)]
                bare = [k for k in declared if key_bare_if_possible(k) == k]
                for k in bare:
                    if len(k) > MAX_EXCLUDED_KEY_CHARS:
                        self.leave(f"{where}.properties.{k[:16]}...", f"a key of more than {MAX_EXCLUDED_KEY_CHARS} characters:"
                                   " the rules also take it as an additional property")
                key: ir.Expr = ir.Ref(self.bare_key_except([k for k in bare if len(k) <= MAX_EXCLUDED_KEY_CHARS]))
            else:  # a map: any key, bare or quoted, as the format writes it
                key = ir.choice(ir.Ref("tool_key"), ir.Ref("tool_string"))
            try:
                extra_member = ir.seq(key, p.colon, self.as_rule(self.value(extra, where + ".additionalProperties")))
            except _NoValue:  # no value satisfies it: no additional member, and nothing to note
                del self.notes[noted:]
        name = self.new_rule("object")
        self.places[name] = where
        body = self.members(name, members, extra_member)
        if at_least_one and not any(is_required and key in at_least_one for key, is_required, _ in members):
            body = self.at_least_one(name, members, extra_member, at_least_one, where)
        self.rules[name] = ir.seq(p.lbrace, body, p.rbrace)
        return ir.Ref(name)

    def at_least_one(self, name: str, members: list, extra: ir.Expr | None, keys: frozenset, where: str) -> ir.Expr:
        """The members (no extra ones) with at least one of `keys` present. `need_j`: the
        members from j on while none of `keys` is written yet, so one of them must come: beside
        the chain `members` made (`from_j`, taken once one of them is written), a second one of
        the same size: linear, where an option per key copying the object was quadratic.
        (`balanced`: the same over the tree `members` made, `_MemberTree.build_need`.)"""
        if self.balanced:
            return self._at_least_one_balanced(name, members, extra, keys, where)
        p = self.pieces
        n = len(members)
        later_required = [False] * (n + 1)
        for j in range(n - 1, -1, -1):
            later_required[j] = later_required[j + 1] or members[j][1]
        last = max((j for j, m in enumerate(members) if m[0] in keys), default=-1)
        if last < 0:
            raise _NoValue(f"tool {self.tool.name!r}: {where}: none of the arguments one of which is required can be written")
        need = [f"{name}_need{j}" for j in range(n)]
        for j in range(last, -1, -1):
            key, is_required, member = members[j]
            options: list[ir.Expr] = []
            if key in keys:  # written: the rest is the ordinary chain
                if j + 1 == n:
                    options.append(member)
                else:
                    after = ir.seq(p.comma, ir.Ref(f"{name}_from{j + 1}"))
                    options.append(ir.seq(member, after if later_required[j + 1] else ir.Repeat(after, 0, 1)))
            elif j < last:
                options.append(ir.seq(member, p.comma, ir.Ref(need[j + 1])))
            if not is_required and j < last:
                options.append(ir.Ref(need[j + 1]))
            self.rules[need[j]] = ir.choice(*options)
        return ir.Ref(need[0])

    def _at_least_one_balanced(self, name: str, members: list, extra: ir.Expr | None, keys: frozenset,
                               where: str) -> ir.Expr:
        """`at_least_one` over the balanced tree: per range, `need` (one of `keys` among its
        written members) and `none` (none of them) beside `part`. The members before the first
        of `keys`, and that member, are written without extra members, as in the chain."""
        bare = [member for _, _, member in members]
        tree = _MemberTree(self.rules, self.pieces.comma, [is_required for _, is_required, _ in members])
        parts = tree.build(f"{name}_part", self._written(members, extra))  # (the rules `members` made)
        nones = tree.build(f"{name}_none", [None if key in keys else bare[j] for j, (key, _, _) in enumerate(members)])
        needs = tree.build_need(f"{name}_need", [bare[j] if key in keys else None for j, (key, _, _) in enumerate(members)],
                                nones, parts)
        root = needs.get((0, len(members)))
        if root is None:
            raise _NoValue(f"tool {self.tool.name!r}: {where}: none of the arguments one of which is required can be written")
        return root

    def _written(self, members: list, extra: ir.Expr | None) -> list:
        """Each member as written, with the extra members that may follow it."""
        extras = self._extras(extra)
        return [ir.seq(member, *extras) for _, _, member in members]

    def _extras(self, extra: ir.Expr | None) -> list:
        """What may follow a member: any number of extra members (`extra`: their schema's
        member), or nothing when the object takes none."""
        return [ir.Repeat(ir.seq(self.pieces.comma, extra))] if extra is not None else []

    def members(self, name: str, members: list, extra: ir.Expr | None) -> ir.Expr:
        """An object's members in their fixed order, each optional one present or skipped.
        `from_j`: the members from j on, the first of them being j or a later one (j may be
        skipped when optional), as text that starts with that member's key. Each is one of:
        member j alone (when nothing after it is required), or member j and a comma, optional
        when j is, then `from_{j+1}`. Extra members may follow any member, or come first.

        So each rule refers to the next one once (linear size), and no rule starts with a
        comma: a printer may make a rule without special tokens one lexeme, and a lexeme `,b:1`
        beside a lexeme `,` is a choice a greedy lexer (llguidance) makes too early."""
        p = self.pieces
        n = len(members)
        if self.balanced:
            tree = _MemberTree(self.rules, p.comma, [is_required for _, is_required, _ in members])
            root = tree.build(f"{name}_part", self._written(members, extra)).get((0, n))
            return self._object_body(root, any(is_required for _, is_required, _ in members), extra)
        each_written = self._written(members, extra)
        later_required = [False] * (n + 1)
        for j in range(n - 1, -1, -1):
            later_required[j] = later_required[j + 1] or members[j][1]
        names = [f"{name}_from{j}" for j in range(n)]
        for j in range(n - 1, -1, -1):
            is_required, written = members[j][1], each_written[j]
            if j + 1 == n:
                self.rules[names[j]] = written
                continue
            then = ir.seq(written, p.comma)
            go_on = ir.seq(then if is_required else ir.Repeat(then, 0, 1), ir.Ref(names[j + 1]))
            if is_required and not later_required[j + 1]:
                go_on = ir.seq(written, ir.Repeat(ir.seq(p.comma, ir.Ref(names[j + 1])), 0, 1))
            self.rules[names[j]] = go_on if later_required[j + 1] or is_required else ir.choice(written, go_on)
        return self._object_body(ir.Ref(names[0]) if n else None, later_required[0], extra)

    def _object_body(self, members: ir.Expr | None, required: bool, extra: ir.Expr | None) -> ir.Expr:
        """Between the braces: the members (`members`: their rule, None when there are none), or
        extra members first and then them; empty when nothing is `required`."""
        options: list[ir.Expr] = [members] if members is not None else []
        if extra is not None:
            extras = self._extras(extra)
            after = ir.seq(self.pieces.comma, members) if members is not None else None
            options.append(ir.seq(extra, *extras, *([after if required else ir.Repeat(after, 0, 1)] if after else [])))
        if not options:
            return ir.Seq(())
        body = ir.choice(*options)
        return body if required else ir.Repeat(body, 0, 1)

    def as_rule(self, expr: ir.Expr) -> ir.Expr:
        """`expr` as a reference: a value after a key is a rule of its own, so that no piece of
        an object (`,key:value`) is regular text a printer could make one lexeme."""
        if isinstance(expr, ir.Ref):
            return expr
        name = self.new_rule("value")
        self.rules[name] = expr
        return ir.Ref(name)

    def bare_key_except(self, declared: Sequence[str]) -> str:
        """A rule for a bare key (KEY) that is none of `declared`: a trie of the declared keys,
        where leaving the trie, or stopping on a node that is no declared key, is allowed. Each
        node's rule takes what may follow its prefix, never empty (an empty rest is optional)."""
        chars = self.pieces.key_chars
        trie: dict = {}
        for key in declared:
            node = trie
            for char in key:
                node = node.setdefault(char, {})
            node[None] = True
        base = self.new_rule("key")
        any_tail = ir.Repeat(ir.CharClass(_class_text(chars)))
        pending = [(trie, base)]
        nodes = 0
        while pending:
            node, name = pending.pop()
            children = sorted(c for c in node if c is not None)
            options: list[ir.Expr] = []
            others = chars - {ord(c) for c in children}
            if others:
                options.append(ir.seq(ir.CharClass(_class_text(others)), any_tail))
            for char in children:
                nodes += 1
                child = f"{base}_{nodes}"  # numbered, not named by its path: names stay short
                pending.append((node[char], child))
                # after the child's character the key may stop unless that makes a declared key
                options.append(ir.seq(ir.Literal(char), ir.Ref(child) if None in node[char] else ir.Repeat(ir.Ref(child), 0, 1)))
            self.rules[name] = ir.choice(*options)
        return base


def argument_rules(tools: Sequence[Tool], *, order: str = "sorted",
                   balanced: bool = False) -> tuple[dict[str, ir.Expr], dict[str, str]]:
    """The rules for every tool's arguments: (rules, {tool name: its arguments rule}). The shared
    lexical rules (`tool_string`, `tool_key`, ...) are included. `balanced`: an object's members
    as a balanced tree of rules (`_MemberTree`), not a chain of one rule per member."""
    rules, names, _ = _compile(tools, order, balanced)
    return rules, names


def _compile(tools: Sequence[Tool], order: str,
             balanced: bool = False) -> tuple[dict[str, ir.Expr], dict[str, str], list[str]]:
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    pieces = _pieces()
    rules: dict[str, ir.Expr] = dict(pieces.rules)
    names = {}
    notes: list[str] = []
    places: dict[str, tuple[str, str]] = {}
    name_pattern = terminal_pattern("NAME")
    for index, tool in enumerate(tools):
        if not name_pattern.fullmatch(tool.name):
            raise SchemaError(f"tool {tool.name!r}: the format cannot write this name (the grammar's NAME)")
        compiler = _ToolCompiler(tool, index, order, rules, pieces, balanced)
        names[tool.name] = compiler.arguments()
        notes.extend(compiler.notes)
        places.update((rule, (tool.name, where)) for rule, where in compiler.places.items())
    productive = _productive(rules)
    for tool_name, rule in names.items():
        if rule not in productive:
            # name the innermost place with no finite value: a definition, else an object
            stuck = [where for r, (t, where) in places.items() if t == tool_name and r not in productive]
            where = next((w for w in stuck if w.startswith("#")), stuck[-1] if stuck else "parameters")
            raise SchemaError(f"tool {tool_name!r}: {where}: no finite value satisfies this schema (it refers"
                              " to itself on every way out, as an array of itself with minItems 1 does)")
    return _prune(rules, productive), names, notes


def _productive(rules: Mapping[str, ir.Expr]) -> set[str]:
    """The rules that derive some finite text: a fixpoint, each rule looked at again only when a
    rule it refers to turns out productive."""
    users: dict[str, list[str]] = {}
    for name, body in rules.items():
        found: list[str] = []
        _refs(body, found)
        for target in set(found):
            users.setdefault(target, []).append(name)
    productive: set[str] = set()
    pending = list(rules)
    while pending:
        name = pending.pop()
        if name in productive or not _derives(rules[name], productive):
            continue
        productive.add(name)
        pending.extend(u for u in users.get(name, ()) if u not in productive)
    return productive


def _derives(expr: ir.Expr, productive: set[str]) -> bool:
    if isinstance(expr, ir.Ref):
        return expr.name in productive
    if isinstance(expr, ir.Seq):
        return all(_derives(i, productive) for i in expr.items)
    if isinstance(expr, ir.Choice):
        return any(_derives(o, productive) for o in expr.options)
    if isinstance(expr, ir.Repeat):
        return expr.min == 0 or _derives(expr.item, productive)
    return True


def _prune(rules: Mapping[str, ir.Expr], productive: set[str]) -> dict[str, ir.Expr]:
    """The productive rules, without the options and repetitions that lead to no finite text."""
    if len(productive) == len(rules):
        return dict(rules)  # the usual case: nothing to prune
    def prune(expr: ir.Expr) -> ir.Expr:
        if isinstance(expr, ir.Seq):
            return ir.Seq(tuple(prune(i) for i in expr.items))
        if isinstance(expr, ir.Choice):
            return ir.choice(*(prune(o) for o in expr.options if _derives(o, productive)))
        if isinstance(expr, ir.Repeat):
            return ir.Repeat(prune(expr.item), expr.min, expr.max) if _derives(expr.item, productive) else ir.Seq(())
        return expr
    return {name: prune(body) for name, body in rules.items() if name in productive}


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
    calls = [ir.seq(_marks_apart(name), ir.Ref(rule)) for name, rule in arguments.items()]
    rules["tool_call"] = ir.seq(ir.Special(_literal("TOOL_CALL_OPEN")), _marks_apart(_literal("CALL_KEYWORD")),
                                ir.choice(*calls), ir.Special(_literal("TOOL_CALL_CLOSE")))
    return grammar_of(rules, "tool_call")


def _commas(items: list, comma: ir.Expr) -> list:
    """`items` with a comma between each two."""
    out: list = []
    for item in items:
        if out:
            out.append(comma)
        out.append(item)
    return out


def _tree_ranges(n: int) -> list:
    """Every inner range (lo, mid, hi) of a balanced binary tree over n leaves (a leaf is the
    range (j, j + 1)), children before parents; iterative."""
    out: list = []
    stack = [(0, n, False)]
    while stack:
        lo, hi, done = stack.pop()
        if hi - lo < 2:
            continue
        mid = (lo + hi) // 2
        if done:
            out.append((lo, mid, hi))
        else:
            stack += [(lo, hi, True), (mid, hi, False), (lo, mid, False)]
    return out


class _MemberTree:
    """An object's members (in order, each required or not) as a balanced tree of rules over
    their index ranges, for an engine whose compiler recurses through rules: llguidance's
    overflowed its stack (a segfault) on the chain of one rule per member at about 2,700
    members, 1,024 on a thread of 2 MB. `build` gives, per range, the rule of its members
    written: at least one, every required one, in order, separated by commas, from the leaves'
    expressions (None: that member cannot be written there). A node joins its halves: both
    when both hold a required member, else each optional as the other allows. Each node is one
    rule (a leaf is its expression), so the rules are linear in the members and nest log2(n)
    deep; none starts with a comma. A left half is followed by a comma and may end in one and a
    member: a printer must not make it one lexeme (the llguidance printer never folds
    structure, `ir.Grammar.structure`; llguidance's own GBNF reader would, which is why the
    GBNF export keeps the chain)."""

    def __init__(self, rules: dict, comma: ir.Expr, required: list):
        self.rules, self.comma = rules, comma
        self.ranges = _tree_ranges(len(required))
        self.any_required: dict = {(j, j + 1): is_required for j, is_required in enumerate(required)}
        for lo, mid, hi in self.ranges:
            self.any_required[(lo, hi)] = self.any_required[(lo, mid)] or self.any_required[(mid, hi)]

    def build(self, prefix: str, leaves: list) -> dict:
        """Every range's expression (a rule reference, or a leaf's), or None where the range
        cannot be written as it must: the whole's is at `(0, n)`."""
        found: dict = {(j, j + 1): leaf for j, leaf in enumerate(leaves)}
        for number, (lo, mid, hi) in enumerate(self.ranges):
            found[(lo, hi)] = self._rule(f"{prefix}{number}", self._join(
                found[(lo, mid)], self.any_required[(lo, mid)], found[(mid, hi)], self.any_required[(mid, hi)]))
        return found

    def build_need(self, prefix: str, leaves: list, nones: dict, parts: dict) -> dict:
        """`build` for ranges that must hold one of some members (`leaves`: those members, None
        elsewhere): the first of them in one half, the members before it as `nones` has them
        (`build` of the other members), the members after it as `parts` has them."""
        found: dict = {(j, j + 1): leaf for j, leaf in enumerate(leaves)}
        for number, (lo, mid, hi) in enumerate(self.ranges):
            left_required, right_required = self.any_required[(lo, mid)], self.any_required[(mid, hi)]
            options = []
            if found[(lo, mid)] is not None:  # the first of them on the left, then the right half
                options.append(self._join(found[(lo, mid)], True, parts[(mid, hi)], right_required))
            if found[(mid, hi)] is not None:  # none of them on the left
                options.append(self._join(nones[(lo, mid)], left_required, found[(mid, hi)], True))
            options = [option for option in options if option is not None]
            found[(lo, hi)] = self._rule(f"{prefix}{number}", ir.choice(*options) if options else None)
        return found

    def _rule(self, name: str, expr):
        if expr is None:
            return None
        self.rules[name] = expr
        return ir.Ref(name)

    def _join(self, left, left_required: bool, right, right_required: bool):
        """Two adjacent ranges written (at least one member, every required one), from each
        one's expression (None: nothing of it can be written)."""
        comma = self.comma
        if left is None:
            return None if left_required else right
        if right is None:
            return None if right_required else left
        if left_required and right_required:
            return ir.seq(left, comma, right)
        if left_required:
            return ir.seq(left, ir.Repeat(ir.seq(comma, right), 0, 1))
        if right_required:
            return ir.seq(ir.Repeat(ir.seq(left, comma), 0, 1), right)
        return ir.choice(ir.seq(left, ir.Repeat(ir.seq(comma, right), 0, 1)), right)


def grammar_of(rules: Mapping[str, ir.Expr], start: str) -> ir.Grammar:
    """The grammar of the rules `start` uses, its `structure` named (the rules that write the
    format's punctuation, `{ } [ ] , :`, themselves), and all of them `marks_apart`: each mark
    is a literal of its own (`_marks_apart`), and every other literal a scalar, a key or a
    string's text. tests/test_constrain_greedy.py checks that llguidance's greedy-lexer check
    finds nothing to undo in them, over random schemas."""
    used = _reachable(rules, start)
    punctuation = _pieces().punctuation_chars
    return ir.Grammar(start, used, structure=frozenset(
        name for name, body in used.items() if any(not punctuation.isdisjoint(text) for text in _literal_text(body))),
        marks_apart=frozenset(used))


def _literal_text(expr: ir.Expr):
    """The text of every Literal in `expr` itself (not in the rules it refers to)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Literal):
            yield e.text
        elif isinstance(e, ir.Seq):
            stack.extend(e.items)
        elif isinstance(e, ir.Choice):
            stack.extend(e.options)
        elif isinstance(e, ir.Repeat):
            stack.append(e.item)


def _reachable(rules: Mapping[str, ir.Expr], start: str) -> dict[str, ir.Expr]:
    """The rules `start` uses, in a stable order (start first)."""
    seen: dict[str, ir.Expr] = {}
    stack = [start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen[name] = rules[name]
        refs: list[str] = []
        _refs(rules[name], refs)
        stack.extend(reversed(refs))
    return seen


def _refs(expr: ir.Expr, out: list[str]) -> None:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Ref):
            out.append(e.name)
        elif isinstance(e, ir.Seq):
            stack.extend(reversed(e.items))
        elif isinstance(e, ir.Choice):
            stack.extend(reversed(e.options))
        elif isinstance(e, ir.Repeat):
            stack.append(e.item)


# --------------------------------------------------------------------------- not enforced ----

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
