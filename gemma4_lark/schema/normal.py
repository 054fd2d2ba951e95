"""One reading of a tool's JSON schema, shared by the grammar (`constrain.schema`), typing
(`schema.coerce`) and validation (`schema.registry`): `normalize(parameters)` rewrites the
dialects tool schemas arrive in into plain JSON Schema, once, so the three never read a keyword
three ways (docs/schema.md, "One reading").

- Gemma's upper-case types (`"STRING"`, `"OBJECT"`) are the lower-case JSON Schema types.
- OpenAPI's `nullable: true` is "or null", wherever it stands: `null` added to `type`, `None` to
  `enum` (a `const` becomes an `enum` of it and `None`), a `{"type": "null"}` option to `anyOf`
  and `oneOf`; beside `allOf`, `$ref` or `not`, which no local edit makes take null, the schema
  becomes `anyOf: [the schema, {"type": "null"}]`.
- A count keyword written as an integral float (`maxItems: 2.0`) is that integer.
- `$ref` with sibling keywords (other than annotations) is `allOf: [{"$ref": ...}, the siblings]`:
  the siblings constrain too, as in JSON Schema 2019-09 and later, whatever draft a reader defaults
  to.
- A tool without `parameters` takes any arguments, untyped: `{"type": "object"}` (the grammar's
  any object, the parser's any arguments). A declaration without parameters tells the model
  nothing to hold it to, and clients that leave `parameters` out still read what it wrote.

Iterative, each node once: linear in the schema. `$ref` paths into `$defs`, `definitions`,
`properties` and the other subschema places stay valid (a node is rewritten where it stands).
"""

from __future__ import annotations

from typing import Any

TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
NO_PARAMETERS: dict = {"type": "object"}
ANNOTATIONS = ("description", "title", "default", "examples", "$comment", "deprecated", "readOnly",
               "writeOnly", "$id", "$schema", "$anchor")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties",
           "minContains", "maxContains")
# where subschemas stand: a schema, a list of schemas, a map of schemas
_ONE = ("items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_MAP = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")


def normalize(parameters: Any) -> Any:
    """`parameters` (a tool's schema, or None) in the one reading; a new value, the argument is
    not changed."""
    if parameters is None:
        return dict(NO_PARAMETERS)
    holder = [parameters]
    stack: list = [(holder, 0)]
    while stack:
        parent, key = stack.pop()
        node = parent[key]
        if not isinstance(node, dict):
            continue
        node = parent[key] = _one(node)
        for name in _ONE:
            if isinstance(node.get(name), dict):
                stack.append((node, name))
        for name in _MANY:
            if isinstance(node.get(name), list):
                node[name] = list(node[name])
                stack.extend((node[name], i) for i in range(len(node[name])))
        for name in _MAP:
            if isinstance(node.get(name), dict):
                node[name] = dict(node[name])
                stack.extend((node[name], k) for k in node[name])
    return holder[0]


def lower_type(kind: Any) -> Any:
    """A type name as JSON Schema spells it (`STRING` is `string`); anything else as it is."""
    if isinstance(kind, str) and kind.lower() in TYPES:
        return kind.lower()
    return kind


def _one(node: dict) -> dict:
    """One schema object, rewritten (its subschemas are visited after, where they now stand)."""
    out = dict(node)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = lower_type(kind)
    elif isinstance(kind, list):
        out["type"] = [lower_type(k) for k in kind]
    for name in _COUNTS:
        value = out.get(name)
        if type(value) is float and value.is_integer():
            out[name] = int(value)
    if "$ref" in out and any(k not in ANNOTATIONS and k != "$ref" for k in out):
        siblings = {k: v for k, v in out.items() if k not in ("$ref", "allOf", "nullable") and k not in ANNOTATIONS}
        kept = {k: v for k, v in out.items() if k in ANNOTATIONS or k == "nullable"}
        more = list(out["allOf"]) if isinstance(out.get("allOf"), list) else []
        out = {**kept, "allOf": [{"$ref": out["$ref"]}, *([siblings] if siblings else []), *more]}
    if out.get("nullable") is True:
        del out["nullable"]
        out = _or_null(out)
    elif "nullable" in out:
        del out["nullable"]  # `nullable: false` is what a schema without it means
    return out


def _or_null(out: dict) -> dict:
    if any(k in out for k in ("allOf", "$ref", "not")):
        kept = {k: v for k, v in out.items() if k in ANNOTATIONS}
        rest = {k: v for k, v in out.items() if k not in ANNOTATIONS}
        return {**kept, "anyOf": [rest, {"type": "null"}]}
    kind = out.get("type")
    if isinstance(kind, str) and kind != "null":
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = kind + ["null"]
    if "const" in out:
        value = out.pop("const")
        out["enum"] = [value] if value is None else [value, None]
    elif isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = out["enum"] + [None]
    for name in ("anyOf", "oneOf"):
        if isinstance(out.get(name), list):
            out[name] = out[name] + [{"type": "null"}]
    return out
