"""Typing decoded arguments by the tool's JSON schema, from each bare scalar's text as written.

The decoders read `02134` as the int 2134, `True` as the word "True", `1.10` as the float 1.1. When
the schema says otherwise, the text as written decides: `string` + `02134` is "02134", `boolean` +
`True` is True, `integer` + `3.0` is 3. The rule for a scalar (docs/schema.md has the table):

1. its natural reading (what a decode without tools gives) when the schema accepts it;
2. else the first of these readings the schema accepts: the text as written (a string), a boolean
   (`true`/`True`/`false`/`False`), an integer (`3`, `+3`, `3.0`, `3e2`, exactly), a number, null
   (`null`/`None`/`none`); each such change of type is a `coerced` diagnostic at the text;
3. else the natural reading, which validation then reports.

Only bare scalars change: a delimited string is a string, because the model said so. Arrays and
objects are typed item by item (`items`, `prefixItems`, `properties`, `patternProperties`,
`additionalProperties`); `anyOf`/`oneOf`/`allOf`, `enum`, `const`, nullable types (`type: [...,
"null"]`, OpenAPI's `nullable: true`) and `$ref` within the tool's parameters are followed. The walk
is iterative and visits each node once, so its cost is linear in the arguments.
"""

from __future__ import annotations

import functools
import itertools
from decimal import Decimal, InvalidOperation
from typing import Any, Iterator

from ..diagnostics import Diagnostic, LineIndex
from .lexeme import Scalar

# At most this many `coerced` diagnostics per call; the rest are summed up in one.
MAX_NOTES = 1000
_MAX_REF_HOPS = 64     # a `$ref` chain longer than this (a cycle) constrains nothing
_MAX_BRANCH_DEPTH = 32  # anyOf inside anyOf inside ...: deeper constrains nothing
_MAX_INTEGER_DIGITS = 4300  # as the decoders: an integer beyond this is not made from a lexeme
_TRUE_WORDS = ("true", "True")
_FALSE_WORDS = ("false", "False")
_NULL_WORDS = ("null", "None", "none")
_NOTHING: dict = {"enum": []}  # the `false` schema


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    if kind is str:
        return "string"
    if kind is list:
        return "array"
    if kind is dict:
        return "object"
    return kind.__name__


def pointer_text(pointer) -> str:
    """A pointer chain `(parent, segment)` as a JSON pointer string ("" for the root)."""
    segments = []
    while pointer is not None:
        pointer, segment = pointer
        segments.append(str(segment).replace("~", "~0").replace("/", "~1"))
    return "".join("/" + s for s in reversed(segments))


# --- reading schemas ------------------------------------------------------------------------------
def _follow(root: Any, ref: str) -> Any:
    """The schema a local `$ref` ("#", "#/$defs/x", "#/definitions/x", ...) names, or None."""
    if ref != "#" and not ref.startswith("#/"):
        return None  # another document, or an anchor (`#name`): not resolved
    node = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else ():
        segment = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return None
    return node


def resolve(schema: Any, root: Any) -> dict | None:
    """`schema` with `$ref`s followed: a dict, or None when it constrains nothing."""
    for _ in range(_MAX_REF_HOPS):
        if schema is False:
            return _NOTHING
        if not isinstance(schema, dict):
            return None
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return schema or None
        schema = _follow(root, ref)
    return None


def declared_types(schema: dict) -> set | None:
    """The types `type` (and `nullable`) allow, or None when it sets none."""
    declared = schema.get("type")
    if isinstance(declared, str):
        types = {declared}
    elif isinstance(declared, list):
        types = {t for t in declared if isinstance(t, str)}
    else:
        return None
    if schema.get("nullable") is True:
        types.add("null")
    return types


def _type_ok(value: Any, types: set) -> bool:
    kind = json_type(value)
    return kind in types or kind == "integer" and "number" in types


def _same(a: Any, b: Any) -> bool:
    """JSON equality at the top (True is not 1; 1 is 1.0)."""
    ka, kb = json_type(a), json_type(b)
    numbers = ("integer", "number")
    if ka != kb and not (ka in numbers and kb in numbers):
        return False
    return a == b


def accepts(schema: Any, root: Any, value: Any, cache: dict | None = None) -> bool:
    """Whether `schema` allows `value` as far as its type, `enum` and `const` (through `$ref`,
    `anyOf`, `oneOf`, `allOf`) tell: the shallow check typing chooses readings by. `cache` (one
    call's) keeps each large `enum`'s index, so a value costs a lookup, not a scan."""
    return _accepts(schema, root, value, 0, {}, cache)


def _accepts(schema: Any, root: Any, value: Any, depth: int, seen: dict, cache: dict | None) -> bool:
    s = resolve(schema, root)
    if s is None or depth > _MAX_BRANCH_DEPTH:
        return True
    # Each schema is judged once per value: unions that share branches through `$ref`s (a DAG)
    # would otherwise be walked once per path, exponentially many. A cycle constrains nothing.
    known = seen.get(id(s))
    if known is not None:
        return known
    seen[id(s)] = True
    result = _accepts_here(s, root, value, depth, seen, cache)
    seen[id(s)] = result
    return result


def _accepts_here(s: dict, root: Any, value: Any, depth: int, seen: dict, cache: dict | None) -> bool:
    if "const" in s and not _same(value, s["const"]):
        return False
    enum = s.get("enum")
    if isinstance(enum, list) and not _in_enum(enum, value, cache):
        return False
    types = declared_types(s)
    if types is not None and not _type_ok(value, types):
        return False
    for key in ("anyOf", "oneOf"):
        branches = s.get(key)
        if isinstance(branches, list) and not any(_accepts(b, root, value, depth + 1, seen, cache) for b in branches):
            return False
    branches = s.get("allOf")
    if isinstance(branches, list) and not all(_accepts(b, root, value, depth + 1, seen, cache) for b in branches):
        return False
    return True


_SCAN_LIMIT = 8  # an enum longer than this is looked up in an index (built once per call)


def _enum_key(value: Any):
    """What JSON equality compares a scalar by (True is not 1; 1 is 1.0); None for a container."""
    kind = json_type(value)
    if kind in ("array", "object"):
        return None
    return ("number" if kind == "integer" else kind), value


def _in_enum(enum: list, value: Any, cache: dict | None) -> bool:
    if cache is None or len(enum) <= _SCAN_LIMIT:
        return any(_same(value, e) for e in enum)
    index = cache.get(("enum", id(enum)))
    if index is None:
        keys = set()
        for entry in enum:
            key = _enum_key(entry)
            if key is not None:
                try:
                    keys.add(key)
                except TypeError:  # not JSON data: no scalar equals it
                    pass
        index = cache[("enum", id(enum))] = (enum, keys)  # holding `enum` keeps its id unique
    try:
        return _enum_key(value) in index[1]
    except TypeError:
        return any(_same(value, e) for e in enum)


def container_view(schema: Any, root: Any, kind: str, depth: int = 0, node: Any = None,
                   cache: dict | None = None) -> dict | None:
    """The keywords that type the members of an `object` or the items of an `array` under
    `schema`: of the `anyOf`/`oneOf` branches that allow `kind`, the first that `node` (the
    lossless container) fits as read (`fits`), else the first; `allOf` branches merged. `cache`
    (one call's) keeps the view of each schema without a `node`: unions sharing branches through
    `$ref`s are then read once each, not once per path."""
    s = resolve(schema, root)
    if s is None or depth > _MAX_BRANCH_DEPTH:
        return None
    if node is None and cache is not None:
        key = ("view", id(s), kind)
        if key in cache:
            return cache[key][1]
        cache[key] = (s, None)  # a cycle constrains nothing; `s` held keeps its id unique
        view = _container_view(s, root, kind, depth, None, cache)
        cache[key] = (s, view)
        return view
    return _container_view(s, root, kind, depth, node, cache)


def _container_view(s: dict, root: Any, kind: str, depth: int, node: Any, cache: dict | None) -> dict | None:
    types = declared_types(s)
    if types is not None and kind not in types:
        return None
    view = {k: s[k] for k in ("properties", "patternProperties", "additionalProperties", "items",
                             "prefixItems", "additionalItems") if k in s}
    for key in ("anyOf", "oneOf"):
        branches = s.get(key)
        if isinstance(branches, list):
            allowed = []
            for branch in branches:
                b = resolve(branch, root)
                if b is not None and (declared_types(b) is None or kind in declared_types(b)):
                    allowed.append(b)
            if len(allowed) > 1 and node is not None:
                allowed.sort(key=lambda b: not fits(b, root, node, cache))  # stable: the first that fits
            if allowed:
                inner = container_view(allowed[0], root, kind, depth + 1, cache=cache)
                if inner:
                    _merge(view, inner)
    branches = s.get("allOf")
    if isinstance(branches, list):
        for branch in branches:
            inner = container_view(branch, root, kind, depth + 1, cache=cache)
            if inner:
                _merge(view, inner)
    return view or None


# How many values `fits` looks at before it assumes a fit: what choosing among branches may cost
# per container, so typing stays linear however the schema nests its unions.
FIT_BUDGET = 256


def fits(schema: Any, root: Any, node: Any, cache: dict | None = None) -> bool:
    """Whether the lossless `node` fits `schema` as read, without typing (types, `enum`, `const`,
    members and items; past FIT_BUDGET values, assumed to)."""
    stack = [(schema, node)]
    budget = FIT_BUDGET  # values pushed, at most: each call costs O(FIT_BUDGET)
    while stack:
        schema, node = stack.pop()
        kind = type(node)
        if kind is Scalar:
            if not accepts(schema, root, node.value, cache):
                return False
            continue
        if kind is not dict and kind is not list:
            continue
        s = resolve(schema, root)
        if s is None:
            continue
        types = declared_types(s)
        if types is not None and ("object" if kind is dict else "array") not in types:
            return False
        view = container_view(s, root, "object" if kind is dict else "array", cache=cache)
        if kind is dict:
            children = ((_member_schema(view, key), item) for key, item in node.items())
        else:
            children = ((_item_schema(view, index), item) for index, item in enumerate(node))
        before = len(stack)
        stack.extend(itertools.islice(children, budget))
        budget -= len(stack) - before
    return True


def _merge(view: dict, inner: dict) -> None:
    for key, value in inner.items():
        if key == "properties" and isinstance(view.get(key), dict) and isinstance(value, dict):
            view[key] = {**value, **view[key]}
        else:
            view.setdefault(key, value)


def _member_schema(view: dict | None, key: str) -> Any:
    if view is None:
        return None
    properties = view.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    patterns = view.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern, schema in patterns.items():
            matches = _pattern(pattern) if isinstance(pattern, str) else None
            if matches is not None and matches(key):
                return schema
    additional = view.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str):
    """Whether a key matches a schema's regular expression, as the validator reads it (ECMA 262,
    with a bound on backtracking), or None when it is not one. Not Python's `re`: it backtracks
    without bound (`^(a+)+$` against a key of 40 `a`s and a `-` runs for days)."""
    try:
        import jsonschema_rs
        return jsonschema_rs.validator_for({"type": "string", "pattern": pattern}).is_valid
    except Exception:  # noqa: BLE001 - no validator (the registry says so), or not a regex
        return None


def _item_schema(view: dict | None, index: int) -> Any:
    if view is None:
        return None
    prefix = view.get("prefixItems")
    items = view.get("items")
    if isinstance(prefix, list):
        return prefix[index] if index < len(prefix) else (items if isinstance(items, dict) else None)
    if isinstance(items, list):  # draft 4 to 7: a tuple
        if index < len(items):
            return items[index]
        additional = view.get("additionalItems")
        return additional if isinstance(additional, dict) else None
    return items if isinstance(items, dict) else None


# --- readings of a lexeme -------------------------------------------------------------------------
def _numeric(lexeme: str) -> Decimal | None:
    """The exact number a lexeme writes (`3`, `+3`, `-0.5`, `3e2`, `.5`), or None."""
    if not lexeme or not lexeme.isascii() or "_" in lexeme or lexeme[0] not in "+-0123456789.":
        return None
    if lexeme[0] in "+-" and lexeme[1:2] not in tuple("0123456789."):
        return None
    try:
        number = Decimal(lexeme)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def readings(scalar: Scalar) -> Iterator[Any]:
    """The readings of a bare scalar after its natural one, in the order typing tries them."""
    lexeme = scalar.lexeme
    natural = scalar.value
    if not (type(natural) is str and natural == lexeme):
        yield lexeme
    if lexeme in _TRUE_WORDS:
        yield True
    elif lexeme in _FALSE_WORDS:
        yield False
    number = _numeric(lexeme)
    if number is not None:
        # a number beyond a double has no reading (`1e400` is no 401-digit integer), as the
        # strict decoder refuses it: validation reports it as written
        as_float = float(number)
        if as_float not in (float("inf"), float("-inf")):
            if number == number.to_integral_value() and number.adjusted() < _MAX_INTEGER_DIGITS:
                yield int(number)
            yield as_float
    if lexeme in _NULL_WORDS:
        yield None


# --- the walk -------------------------------------------------------------------------------------
class Typing:
    """One call's typing: `run(arguments)` returns the typed plain arguments; `diagnostics` holds
    the `coerced` findings (positions as in the decoded text; `lines` indexes that text)."""

    def __init__(self, root: Any, lines: LineIndex):
        self.root = root
        self.lines = lines
        self.diagnostics: list[Diagnostic] = []
        self._more = None  # [count, first pos, furthest end] beyond MAX_NOTES
        self._cache: dict = {}  # this call's enum indexes and container views (see `accepts`)

    def run(self, arguments: Any) -> Any:
        root = self.root
        holder = [None]
        stack = [(holder, 0, arguments, root, None)]
        pop, push = stack.pop, stack.append
        while stack:
            parent, key, node, schema, pointer = pop()
            kind = type(node)
            if kind is Scalar:
                parent[key] = self._scalar(node, schema, pointer) if schema is not None else node.value
            elif kind is dict:
                view = container_view(schema, root, "object", 0, node, self._cache) if schema is not None else None
                out = parent[key] = dict.fromkeys(node)
                # pushed last to first, so values are typed (and their findings kept) in text order
                for name, item in reversed(node.items()):
                    push((out, name, item, _member_schema(view, name), (pointer, name)))
            elif kind is list:
                view = container_view(schema, root, "array", 0, node, self._cache) if schema is not None else None
                out = parent[key] = [None] * len(node)
                for index in range(len(node) - 1, -1, -1):
                    push((out, index, node[index], _item_schema(view, index), (pointer, index)))
            else:
                parent[key] = node
        if self._more is not None:
            count, pos, end = self._more
            self.diagnostics.append(self._diagnostic(
                "more-diagnostics", f"{count} more values typed by the schema, not listed one by one", pos, end))
        self.diagnostics.sort(key=lambda d: d.pos)
        return holder[0]

    def _scalar(self, scalar: Scalar, schema: Any, pointer) -> Any:
        natural = scalar.value
        root = self.root
        cache = self._cache
        if scalar.lexeme is None or accepts(schema, root, natural, cache):
            return natural
        for reading in readings(scalar):
            if accepts(schema, root, reading, cache):
                self._note(scalar, natural, reading, pointer)
                return reading
        return natural

    def _note(self, scalar: Scalar, natural: Any, reading: Any, pointer) -> None:
        pos, end = scalar.pos, scalar.pos + len(scalar.lexeme)
        if len(self.diagnostics) >= MAX_NOTES:
            if self._more is None:
                self._more = [0, pos, end]
            more = self._more
            more[0] += 1
            more[1], more[2] = min(more[1], pos), max(more[2], end)
            return
        where = pointer_text(pointer)
        self.diagnostics.append(self._diagnostic(
            "coerced", f"`{scalar.lexeme[:40]}` at \"{where}\" typed by the schema as {json_type(reading)}"
            f" {reading!r:.60} (read without the schema: {json_type(natural)})", pos, end))

    def _diagnostic(self, code: str, message: str, pos: int, end: int) -> Diagnostic:
        line, column = self.lines.line_and_column(pos)
        return Diagnostic("warning", code, message, line, column, pos, end)
