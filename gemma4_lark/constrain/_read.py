"""Reading one tool's JSON schema (as `schema.normal` normalizes it) into rules named
`tool_<index>_...`: each kind of schema, `$ref`s, arrays and objects. Merging schemas is
`_merge.Merging`'s, writing the rules `_emit.Emitting`'s."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..render.values import key_bare_if_possible
from ..schema import normal
from ..tools import Tool
from . import ir
from ._emit import Emitting, commas
from ._errors import NoValue, SchemaError
from ._lexical import WRITER, Pieces, text_expr
from ._merge import COMBINATORS, TYPES, Merging, brief, is_any


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


class ToolCompiler(Merging, Emitting):
    """One tool's schema as rules named `tool_<index>_...`."""

    def __init__(self, tool: Tool, index: int, order: str, rules: dict[str, ir.Expr], pieces: Pieces,
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
        self.notes: list[str] = []  # what the rules leave to validation, beyond `schema._UNENFORCED`
        self.merging: set[str] = set()  # the `$ref`s being merged (`intersect`)
        self.no_values: dict[str, NoValue] = {}  # the `$ref`s whose schemas no value satisfies
        self.root = normal.normalize(tool.parameters)

    def error(self, where: str, message: str) -> SchemaError:
        return SchemaError(f"tool {self.tool.name!r}: {where}: {message}")

    def no_value(self, where: str, message: str) -> NoValue:
        """The error for a schema no value satisfies: where it is optional (a property, a union's
        option, an array's items) the caller leaves it out."""
        return NoValue(f"tool {self.tool.name!r}: {where}: {message}")

    def leave(self, where: str, why: str) -> None:
        self.notes.append(f"{self.tool.name}: {where} ({why})")

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
        if schema is True or is_any(schema):
            return ir.Ref("tool_any")
        if schema is False:
            raise self.no_value(where, "the schema `false` admits no value")
        if not isinstance(schema, Mapping):
            raise self.error(where, f"a schema is an object or a boolean, not {type(schema).__name__}")
        if "$ref" in schema:  # normalized: no sibling but annotations (docs/schema.md)
            return self.ref(schema["$ref"], where)
        if any(k in schema for k in COMBINATORS):
            return self.combined(schema, where)
        if "const" in schema:
            const = schema["const"]
            kept = self.of_types(schema, [const], where, f"the const {brief(const)} is not")
            return self.literal_values(self.held_beside(schema, kept, where, "not even the const"), where)
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise self.error(where + ".enum", "an enum is a non-empty list")
            kept = self.of_types(schema, values, where + ".enum", "no value of the enum is")
            return self.literal_values(self.held_beside(schema, kept, where + ".enum", "no value of the enum"), where + ".enum")
        return self.typed(schema, where)

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
            if not isinstance(k, str) or k.lower() not in TYPES:
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
                options.append(text_expr(WRITER.write(value, f"{where}[{i}]")))
            except (TypeError, ValueError) as error:
                problem = problem or f"{where}[{i}]: has no text in the format ({error})"
        if not options:
            raise NoValue(f"tool {self.tool.name!r}: {where}: no value can be written; {problem}")
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
            except NoValue as error:
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
            except NoValue as error:  # no value at position i: the array ends before it
                head_schemas, items, why_short = head_schemas[:i], False, f" ({error})"
                break
        tail = None
        if items is not False:
            try:
                tail = self.as_rule(self.value(items, where + ".items"))
            except NoValue as error:  # no item has a value: the array ends after its positions
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
            body = ir.seq(*commas(items[:written], p.comma)) if written else None
            if written < m:
                rest = self._prefixes(items[written:])
                body = rest if body is None else ir.seq(body, ir.Repeat(ir.seq(p.comma, rest), 0, 1))
        self.rules[name] = ir.seq(p.lbracket, body if low > 0 else ir.Repeat(body, 0, 1), p.rbracket)
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
                WRITER.write({key: None}, where)  # refuses a key the format cannot write safely
                key_text = WRITER.key(key)
            except ValueError as error:
                raise self.error(f"{where}.properties", f"key {key!r} has no text in the format ({error})") from None
            try:
                value = self.value(sub, f"{where}.properties.{key}")
            except NoValue:
                if key in required:
                    raise
                continue  # it can never be written: as if its schema were `false`
            member = ir.seq(text_expr(key_text), p.colon, self.as_rule(value))
            members.append((key, key in required, member))
        if self.order == "sorted":
            members.sort(key=lambda m: m[0].lower())  # dictsort, as the official template writes
        extra = schema.get("additionalProperties")
        if extra is None:
            extra = False if "properties" in schema else True
        extra_member = self.extra_member(extra, properties, members, where) if extra is not False else None
        name = self.new_rule("object")
        self.places[name] = where
        body = self.members(name, members, extra_member)
        if at_least_one and not any(is_required and key in at_least_one for key, is_required, _ in members):
            body = self.at_least_one(name, members, extra_member, at_least_one, where)
        self.rules[name] = ir.seq(p.lbrace, body, p.rbrace)
        return ir.Ref(name)

    def extra_member(self, extra: Any, properties: Mapping, members: list, where: str) -> ir.Expr | None:
        """A member that `additionalProperties` (`extra`, not false) allows: a key that is none of
        the declared ones, or any key in a map; None where no value satisfies its schema."""
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
            return ir.seq(key, self.pieces.colon, self.as_rule(self.value(extra, where + ".additionalProperties")))
        except NoValue:  # no value satisfies it: no additional member, and nothing to note
            del self.notes[noted:]
            return None
