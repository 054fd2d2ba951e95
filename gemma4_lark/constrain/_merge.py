"""Merging schemas that all hold into one (`allOf`, the keywords beside a union, an enum beside a
type or other keywords): JSON equality of values, types intersected, enums filtered, objects'
keys merged. `Merging` is the part of a tool's reader (`_read.ToolCompiler`) that does it."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

from ..schema import normal
from ..tools import Tool
from . import ir
from ._errors import NoValue, SchemaError


TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
COMBINATORS = ("anyOf", "oneOf", "allOf")
ANNOTATIONS = normal.ANNOTATIONS


# Merging the keywords beside a union into each of its options copies them once per option: done
# while they are at most this many nodes (a constant per option: linear), else the union is left
# to validation and `not_enforced` lists it.
DISTRIBUTED_SIZE = 16


def is_any(schema: Any) -> bool:
    return isinstance(schema, Mapping) and all(k in ANNOTATIONS for k in schema)


def _constrains(schema: Mapping) -> bool:
    return any(k not in ANNOTATIONS for k in schema)


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


def type_set(schema: Mapping) -> set | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return None


def json_kind(value: Any) -> str:
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


def same_json(a: Any, b: Any) -> bool:
    """JSON equality, as validation compares an enum's values: at every level True is not 1, and
    1 is 1.0; objects equal whatever their keys' order. Iterative (a value may nest deeply)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        kx, ky = json_kind(x), json_kind(y)
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


def shared_values(mine: list, theirs: list) -> list:
    """The values of `mine` that `same_json` finds in `theirs`, in `mine`'s order. Linear: each value
    is looked up by a hashable form of its `same_json` class (`same_key`); a value that has none (a
    NaN in it) is compared with each of `theirs`. (Two enums of 32,000 values compared pairwise
    took 87 s.)"""
    keys = {key for key in map(same_key, theirs) if key is not None}
    out = []
    for v in mine:
        key = same_key(v)
        if key in keys if key is not None else any(same_json(v, w) for w in theirs):
            out.append(v)
    return out


def same_key(value: Any):
    """A hashable form of `value` equal for the values `same_json` finds equal: each value tagged with
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
    return (json_kind(value), value)


def brief(value: Any) -> str:
    """A value for a message: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def size_up_to(schema: Any, most: int) -> int:
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


class Merging:
    """The reader's merging of schemas, keyword by keyword. Mixed into `_read.ToolCompiler`,
    whose `value`, `object`, `resolve`, `error`, `no_value`, `leave`, `tool`, `root` and
    `merging` it uses."""

    tool: Tool
    root: Any
    merging: set[str]
    value: Callable[[Any, str], ir.Expr]
    object: Callable[..., ir.Expr]
    resolve: Callable[[Any, str], Any]
    error: Callable[[str, str], SchemaError]
    no_value: Callable[[str, str], NoValue]
    leave: Callable[[str, str], None]

    def held_beside(self, schema: Mapping, values: list, where: str, what: str) -> list:
        """The values of an `enum` or `const` that the other keywords beside it allow too
        (`minItems`, `required`, `properties`... as merging an `allOf` puts them there): each
        value checked by the validator the parser uses, against those keywords. A schema beside
        it that refers elsewhere (`$ref`) is left to validation, and `not_enforced` says so."""
        beside = {k: v for k, v in schema.items() if k not in ("enum", "const", "type") and k not in ANNOTATIONS}
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
        kinds = type_set(schema)
        if kinds is None:
            return values
        kept = [v for v in values if json_kind(v) in kinds or json_kind(v) == "integer" and "number" in kinds]
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
        base = {k: v for k, v in schema.items() if k not in COMBINATORS and k not in ANNOTATIONS}
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
        if all(isinstance(o, Mapping) and set(o) - set(ANNOTATIONS) <= {"required"} for o in options):
            return self.required_options(base, options, at)
        if size_up_to(base, DISTRIBUTED_SIZE) > DISTRIBUTED_SIZE:
            self.leave(at, f"its options beside a schema of more than {DISTRIBUTED_SIZE} nodes: the rules enforce that schema only")
            return self.value(base, where)
        return self.options(options, at, lambda option, part_at: self.intersect(base, option, part_at))

    def options(self, options: list, at: str, merged) -> ir.Expr:
        exprs = []
        for i, option in enumerate(options):
            part_at = f"{at}[{i}]"
            try:
                exprs.append(self.value(merged(option, part_at), part_at))
            except NoValue:
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
            if key in ANNOTATIONS:
                continue
            if key not in out:
                out[key] = value
                continue
            self._intersect_keyword(out, key, value, base, part, where)
        if _object_keywords(base, part) and any(k in base for k in _KEYS) and any(k in part for k in _KEYS):
            self._intersect_keys(out, base, part, where)
        if "enum" in out and "const" in out:
            out["enum"] = [v for v in out["enum"] if same_json(v, out["const"])]
            if not out["enum"]:
                raise NoValue(f"tool {self.tool.name!r}: {where}: the const is none of the enum")
        return out

    def _intersect_keyword(self, out: dict, key: str, value: Any, base: Mapping, part: Mapping, where: str) -> None:
        """A keyword of `part` that `out` (the merge so far) carries too: the two merged there."""
        mine = out[key]
        if key == "type":
            a, b = type_set({"type": mine}), type_set({"type": value})
            both = [t for t in TYPES if (t in a and t in b) or (t == "integer" and (
                "integer" in a and "number" in b or "number" in a and "integer" in b))]
            if not both:
                raise NoValue(f"tool {self.tool.name!r}: {where}: the types {mine!r} and {value!r} share no value")
            out[key] = both
        elif key in ("properties", "additionalProperties") and _object_keywords(base, part):
            return  # the two objects' keys, together (`_intersect_keys`)
        elif key == "required" and isinstance(mine, list) and isinstance(value, list):
            out[key] = list(dict.fromkeys(mine + value))
        elif key == "enum" and isinstance(mine, list) and isinstance(value, list):
            out[key] = shared_values(mine, value)
            if not out[key]:
                raise NoValue(f"tool {self.tool.name!r}: {where}: the enums share no value")
        elif key == "const":
            if not same_json(mine, value):
                raise NoValue(f"tool {self.tool.name!r}: {where}: two different consts")
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
        # any other keyword is validation's alone (`schema._UNENFORCED`): either value is as good

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
            raise NoValue(f"tool {self.tool.name!r}: {where}: `{refused[0]}` is required, and one of the "
                           "schemas merged takes no such property")
