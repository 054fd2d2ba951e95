"""Random tool schemas and arguments that conform to them (hypothesis strategies), shared by the
llguidance tests and the xgrammar integration run; and the official renderer's block for a call."""

from hypothesis import strategies as st

from gemma4_lark.render.official import render_chat

# --- schemas --------------------------------------------------------------------------------

keys = st.one_of(
    st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,6}", fullmatch=True),
    st.sampled_from(["a", "ab", "abc", "b", "ba", "t", "ta", "th"]),  # prefixes of one another
    st.sampled_from(["a b", "x:y", "", "é", "$ref", "@id", "-1"]),
)
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                        st.floats(allow_nan=False, allow_infinity=False, width=32), texts)

leaf_schemas = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null")]),
    st.just({}),
    st.lists(texts, min_size=1, max_size=4, unique=True).map(lambda v: {"type": "string", "enum": v}),
    st.lists(json_leaves, min_size=1, max_size=4).map(lambda v: {"enum": v}),
    json_leaves.map(lambda v: {"const": v}),
)


def _object(draw_props, required_mask, extra):
    properties = dict(draw_props)
    schema = {"type": "object", "properties": properties,
              "required": [k for k, r in zip(properties, required_mask) if r]}
    if extra != "absent":
        schema["additionalProperties"] = extra
    return schema


def compound(children):
    return st.one_of(
        st.builds(lambda items, low, high: {"type": "array", "items": items, **low, **high}, children,
                  st.sampled_from([{}, {"minItems": 1}, {"minItems": 2}]), st.sampled_from([{}, {"maxItems": 3}])),
        st.builds(_object, st.dictionaries(keys, children, max_size=4), st.lists(st.booleans(), min_size=4, max_size=4),
                  st.one_of(st.sampled_from(["absent", False, True]), children)),
        st.lists(children, min_size=2, max_size=3).map(lambda options: {"anyOf": options}),
        children.filter(lambda s: "type" in s and s["type"] != "null").map(lambda s: {**s, "nullable": True}),
        st.sampled_from([{"type": ["string", "null"]}, {"type": ["integer", "boolean"]}]),
    )


schemas = st.recursive(leaf_schemas, compound, max_leaves=8)


@st.composite
def tools_with_schemas(draw):
    n = draw(st.integers(1, 3))
    out = []
    for i in range(n):
        props = draw(st.dictionaries(keys, schemas, max_size=4))
        required = [k for k in props if draw(st.booleans())]
        parameters = {"type": "object", "properties": props, "required": required}
        if draw(st.booleans()):
            # a definition used by reference, possibly recursive
            parameters["$defs"] = {"node": {"type": "object", "properties": {
                "v": draw(schemas), "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}, "required": ["v"]}}
            props["linked"] = {"$ref": "#/$defs/node"}
        out.append({"type": "function", "function": {"name": f"tool_{i}", "parameters": parameters}})
    return out


# --- values ---------------------------------------------------------------------------------

def _resolve(schema, root):
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def values(schema, root, depth=0):
    """Values that conform to `schema` (as `tool_call_rules` reads it)."""
    schema = _resolve(schema, root)
    if schema is True or schema == {}:
        return json_leaves if depth > 2 else st.recursive(json_leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(keys, c, max_size=3), max_leaves=4)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([values(o, root, depth + 1) for o in schema["anyOf"]])
    base = _typed_values(schema, root, depth)
    return st.one_of(base, st.none()) if schema.get("nullable") else base


def _typed_values(schema, root, depth):
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_typed_values({**schema, "type": k}, root, depth) for k in kind])
    if kind == "string":
        return texts
    if kind == "integer":
        return st.integers(-10**20, 10**20)
    if kind == "number":
        return st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 3 if depth < 3 else low)
        return st.lists(values(schema.get("items", {}), root, depth + 1), min_size=low, max_size=max(low, high))
    return _object_values(schema, root, depth)


@st.composite
def _object_values(draw, schema, root, depth):
    properties = schema.get("properties", {})
    out = {}
    for key, sub in properties.items():
        if key in schema.get("required", ()) or (depth < 3 and draw(st.booleans())):
            out[key] = draw(values(sub, root, depth + 1))
    extra = schema.get("additionalProperties", False if "properties" in schema else True)
    if extra is not False and depth < 3:
        bare = st.from_regex(r"[a-z]{1,4}", fullmatch=True) if properties else keys
        for key in draw(st.lists(bare, max_size=2)):
            if key not in properties and key.lower() not in {k.lower() for k in properties}:
                out[key] = draw(values({} if extra is True else extra, root, depth + 1))
    return out


def rendered(name, arguments):
    text = render_chat([{"role": "assistant", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}])
    return text[text.index("<|tool_call>"):text.index("<tool_call|>") + len("<tool_call|>")]


def as_json_schema(schema):
    """The schema as jsonschema reads it: OpenAPI's `nullable` as a `null` option."""
    if isinstance(schema, list):
        return [as_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: as_json_schema(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


# keys that differ only in case sort in dictionary order only up to the tie: leave them out
def _distinct_case(tools):
    def walk(node):
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and len({k.lower() for k in props}) < len(props):
                return False
            return all(walk(v) for v in node.values())
        if isinstance(node, list):
            return all(walk(v) for v in node)
        return True
    return walk(tools)


# --- schemas at the edges of what a value can be (issue 30, section 4) ------------------------
# What an export may get wrong by being wider than the parser: positions past `maxItems`, items or
# properties no value satisfies, `false` beside open objects, `allOf` of open objects, enums of
# nested values merged (True is not 1 inside them either), a `type` that filters out a `const`.

nested_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.sampled_from([0, 1, 1.0, -2, 2.5]), st.sampled_from(["a", "b", "1", "true"])),
    lambda c: st.lists(c, max_size=2) | st.dictionaries(st.sampled_from(["a", "b"]), c, max_size=2),
    max_leaves=4)

# schemas no value satisfies, each a different way
NO_VALUE_SCHEMAS = [
    False,
    {"type": "integer", "const": "a"},
    {"type": "string", "enum": [1, None, True]},
    {"allOf": [{"enum": [{"a": True}]}, {"enum": [{"a": 1}]}]},
    {"allOf": [{"type": "string"}, {"type": "integer"}]},
    {"type": "array", "minItems": 3, "maxItems": 1},
    {"type": "array", "items": False, "minItems": 1},
    {"type": "object", "properties": {"k": False}, "required": ["k"]},
    {"anyOf": [False, {"type": "null", "const": 0}]},
    {"$ref": "#/$defs/none"},
]
no_value_schemas = st.sampled_from(NO_VALUE_SCHEMAS)
NO_VALUE_DEFS = {"none": {"type": "boolean", "enum": [0, 1]}}

edge_leaves = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null")]),
    st.just({}),
    no_value_schemas,
    st.lists(nested_json, min_size=1, max_size=3).map(lambda v: {"enum": v}),
    nested_json.map(lambda v: {"const": v}),
    st.builds(lambda kind, v: {"type": kind, "const": v}, st.sampled_from(["integer", "string", "boolean", "object"]),
              nested_json),
)

_extra = st.one_of(st.sampled_from(["absent", True, False, {}]), no_value_schemas)


def _edge_compound(children):
    return st.one_of(
        # a tuple: positions, then items (or none), and bounds that may cut the positions short
        st.builds(lambda head, tail, low, high: {"type": "array", "prefixItems": head, **tail, **low, **high},
                  st.lists(children, min_size=1, max_size=4),
                  st.one_of(st.just({}), st.just({"items": False}), children.map(lambda s: {"items": s})),
                  st.sampled_from([{}, {"minItems": 1}, {"minItems": 2}]),
                  st.sampled_from([{}, {"maxItems": 0}, {"maxItems": 1}, {"maxItems": 2}, {"maxItems": 3}])),
        st.builds(lambda items, low, high: {"type": "array", "items": items, **low, **high}, children,
                  st.sampled_from([{}, {"minItems": 1}]), st.sampled_from([{}, {"maxItems": 0}, {"maxItems": 2}])),
        st.builds(_object, st.dictionaries(st.sampled_from(["a", "b", "c", "ab"]), children, max_size=3),
                  st.lists(st.booleans(), min_size=4, max_size=4), _extra),
        # two objects that both hold: their keys, and whether either takes others
        st.builds(lambda a, b: {"allOf": [a, b]},
                  st.builds(_object, st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2),
                            st.lists(st.booleans(), min_size=4, max_size=4), _extra),
                  st.builds(_object, st.dictionaries(st.sampled_from(["b", "c"]), children, max_size=2),
                            st.lists(st.booleans(), min_size=4, max_size=4), _extra)),
        st.builds(lambda a, b: {"allOf": [{"enum": a}, {"enum": b}]},
                  st.lists(nested_json, min_size=1, max_size=3), st.lists(nested_json, min_size=1, max_size=3)),
        st.lists(children, min_size=2, max_size=3).map(lambda options: {"anyOf": options}),
    )


edge_schemas = st.recursive(edge_leaves, _edge_compound, max_leaves=6)


@st.composite
def edge_tools(draw):
    """One tool whose parameters hold edge schemas, with the definition `#/$defs/none` (no value)
    that `no_value_schemas` may refer to."""
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "c", "ab", "zz"]), edge_schemas, max_size=3))
    parameters = {"type": "object", "properties": props, "required": [k for k in props if draw(st.booleans())],
                  "$defs": dict(NO_VALUE_DEFS)}
    extra = draw(_extra)
    if extra != "absent":
        parameters["additionalProperties"] = extra
    return [{"type": "function", "function": {"name": "t", "parameters": parameters}}]
