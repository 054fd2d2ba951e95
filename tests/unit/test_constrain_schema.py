"""constrain.schema: the declared tools' schemas as rules for one call block, checked by
llguidance's own matcher (tests/constrain_llg.py) on hand-picked calls, valid and invalid."""

import re

import pytest
from hypothesis import given, settings, strategies as st

pytest.importorskip("llguidance")

from constrain_llg import accepted_prefix, accepts, encode, to_lark  # noqa: E402

from gemma4_lark import parse_call  # noqa: E402
from gemma4_lark.constrain import ir  # noqa: E402
from gemma4_lark.constrain import _merge  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, not_enforced, tool_call_rules  # noqa: E402
from timing import Guard, guard_tests  # noqa: E402
from gemma4_lark.render.official import render_chat  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402

D = '<|"|>'


def lark_for(tools, tool_choice="auto", **options):
    tools = read_tools(tools)
    options.setdefault("balanced", True)  # what grammar() gives llguidance
    return to_lark(tool_call_rules(tools, read_tool_choice(tool_choice, tools), **options))


def call(name, body):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


def rendered(name, arguments):
    """The block the official renderer writes for one call."""
    text = render_chat([{"role": "assistant", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}])
    return text[text.index("<|tool_call>"):text.index("<tool_call|>") + len("<tool_call|>")]


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
        "Hourly": {"type": "boolean"},
    },
    "required": ["location"],
}}}
PING = {"name": "ping", "parameters": {"type": "object", "properties": {}}}


VALID = [
    call("get_weather", f"location:{D}Tokyo{D}"),
    call("get_weather", f"days:3,Hourly:false,location:{D}To<|kyo, JP{D},unit:{D}celsius{D}"),
    call("get_weather", f"days:-12,location:{D}{D}"),
    call("get_weather", f"location:{D}a <b> <|c|> <|\"|{D}"),  # everything but the delimiter
    call("ping", ""),
]


@pytest.mark.parametrize("text", VALID)
def test_valid_calls_accepted(text):
    parse_call(text)  # the format's own parser takes them too
    assert accepts(lark_for([WEATHER, PING]), text)


INVALID = [
    (call("get_wether", f"location:{D}x{D}"), "undeclared name"),
    (call("get_weather", ""), "missing required"),
    (call("get_weather", "days:3"), "missing required"),
    (call("get_weather", f"location:3"), "wrong type"),
    (call("get_weather", f"days:{D}3{D},location:{D}x{D}"), "wrong type"),
    (call("get_weather", f"days:3.5,location:{D}x{D}"), "integer"),
    (call("get_weather", f"location:{D}x{D},unit:{D}kelvin{D}"), "enum"),
    (call("get_weather", f"location:{D}x{D},unit:celsius"), "undelimited enum string"),
    (call("get_weather", "location:Tokyo"), "undelimited string"),
    (call("get_weather", f"location:{D}x{D},zone:1"), "extra key"),
    (call("get_weather", f"location:{D}x{D},days:3"), "out of order"),
    (call("get_weather", f"location:{D}x{D},location:{D}y{D}"), "repeated key"),
    (call("get_weather", f"location: {D}x{D}"), "whitespace"),
    (call("ping", "a:1"), "extra key"),
    ("<|tool_call>call:ping{}", "unclosed"),
]


@pytest.mark.parametrize("text, why", INVALID)
def test_invalid_calls_rejected(text, why):
    assert not accepts(lark_for([WEATHER, PING]), text), why


def test_gbnf_export_through_llguidance_gbnf_reader():
    """The same calls through the GBNF export, read by llguidance's own GBNF reader."""
    from constrain_helpers import Matcher, gbnf_as_llguidance

    from gemma4_lark import constrain

    gbnf = Matcher(gbnf_as_llguidance(constrain.grammar("gbnf", tools=[WEATHER, PING])))
    for text in VALID:
        assert gbnf.accepts(text), text
    for text, why in INVALID:
        assert not gbnf.accepts(text), why


def test_rejected_where_the_schema_is_broken():
    """The matcher stops at the first token no valid call can have: here the `k` of `kelvin`."""
    text = call("get_weather", f"location:{D}x{D},unit:{D}kelvin{D}")
    taken, _ = accepted_prefix(lark_for([WEATHER]), text)
    assert taken == len(encode(text[:text.index("kelvin")]))


def test_named_tool_choice_allows_only_that_tool():
    lark = lark_for([WEATHER, PING], {"type": "function", "function": {"name": "ping"}})
    assert accepts(lark, call("ping", ""))
    assert not accepts(lark, call("get_weather", f"location:{D}x{D}"))


def test_no_call_possible_is_an_error():
    tools = read_tools([PING])
    with pytest.raises(ValueError, match="none"):
        tool_call_rules(tools, read_tool_choice("none"))
    with pytest.raises(ValueError, match="no tools"):
        tool_call_rules((), read_tool_choice("required"))


def test_rules_are_prefixed_and_start_with_the_block():
    tools = read_tools([WEATHER, PING])
    grammar = tool_call_rules(tools, read_tool_choice("auto"))
    assert grammar.start == "tool_call"
    assert all(re.fullmatch(r"tool_[a-z0-9_]*", name) for name in grammar.rules)
    assert ir.Special("<|tool_call>") in grammar.rules["tool_call"].items


def test_keys_in_the_order_the_official_template_writes():
    arguments = {"unit": "celsius", "location": "Oslo", "days": 2, "Hourly": True}
    text = rendered("get_weather", arguments)
    assert text.index("days") < text.index("Hourly") < text.index("location") < text.index("unit")
    assert accepts(lark_for([WEATHER]), text)
    declared = lark_for([WEATHER], order="declared")
    assert not accepts(declared, text)
    assert accepts(declared, call("get_weather", f"location:{D}Oslo{D},unit:{D}celsius{D},days:2,Hourly:true"))


def test_grammar_size_is_linear_in_properties():
    """Every subset of optional properties in one order: a rule or two a property, not 2^n or n!."""
    def size(n):
        tool = {"name": "f", "parameters": {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)}}}
        return len(lark_for([tool]))

    assert size(40) < 2.5 * size(20)
    many = {"name": "f", "parameters": {"type": "object", "properties": {f"p{i:02}": {"type": "integer"} for i in range(30)}}}
    lark = lark_for([many])
    assert accepts(lark, call("f", ""))
    assert accepts(lark, call("f", ",".join(f"p{i:02}:{i}" for i in range(0, 30, 7))))
    assert not accepts(lark, call("f", "p07:1,p00:2"))


def test_keys_that_share_a_prefix():
    """Members after a comma are never one lexeme: llguidance's greedy lexer would take `,t` of
    `,ta:` as the start of a lexeme `,th:1` and refuse the `a`."""
    tool = {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "ta": {"type": "string"}, "th": {"type": "integer"}, "ti": {"enum": [1, 2]},
        "list": {"type": "array", "items": {"type": "integer"}}, "lo": {"type": "boolean"}}, "required": ["a"]}}
    lark = lark_for([tool])
    for body in (f"a:1,ta:{D}x{D}", "a:1,th:2", f"a:1,ta:{D}x{D},th:2,ti:1", "a:1,ti:2", "a:1,list:[1,2],lo:true", "a:1,lo:false"):
        assert accepts(lark, call("f", body)), body


def test_nested_objects_arrays_and_values_in_canonical_form():
    tool = {"name": "plan", "parameters": {"type": "object", "properties": {
        "steps": {"type": "array", "items": {"type": "object", "properties": {
            "title": {"type": "string"}, "done": {"type": "boolean"}, "cost": {"type": "number"}},
            "required": ["title"]}},
        "meta": {"type": "object"},  # no properties: a free-form map
        "nothing": {"type": "null"},
    }, "required": ["steps"]}}
    lark = lark_for([tool])
    args = {"steps": [{"title": "a", "done": True, "cost": 1.5}, {"title": "b", "cost": 3}, {"title": "c", "cost": 1e-07}],
            "meta": {"any": [1, None, {"x": "y"}], "b c": False}, "nothing": None}
    assert accepts(lark, rendered("plan", args))
    assert accepts(lark, call("plan", "steps:[]"))
    assert not accepts(lark, call("plan", "steps:[{done:true}]"))  # title is required
    assert not accepts(lark, call("plan", f"steps:[{{title:{D}a{D}}},]"))
    assert not accepts(lark, call("plan", "nothing:None,steps:[]"))  # null, as canonical output writes it


def test_any_of_nullable_and_type_lists():
    tool = {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"anyOf": [{"type": "integer"}, {"type": "string", "enum": ["auto"]}]},
        "b": {"type": "string", "nullable": True},
        "c": {"type": ["boolean", "null"]},
        "d": {"oneOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
    }}}
    lark = lark_for([tool])
    for body in ("a:3", f"a:{D}auto{D}", "b:null", f"b:{D}x{D}", "c:true", "c:null", "d:[1,2]", "d:null"):
        assert accepts(lark, call("f", body)), body
    for body in (f"a:{D}manual{D}", "b:3", f"c:{D}true{D}", "d:[true]"):
        assert not accepts(lark, call("f", body)), body


def test_additional_properties():
    def tool(extra, **more):
        schema = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], **more}
        if extra is not None:
            schema["additionalProperties"] = extra
        return {"name": "f", "parameters": schema}

    closed, default = lark_for([tool(False)]), lark_for([tool(None)])
    open_, typed = lark_for([tool(True)]), lark_for([tool({"type": "string"})])
    for lark in (closed, default):
        assert not accepts(lark, call("f", "id:1,x:2"))
    assert accepts(open_, call("f", f"id:1,x:2,zz:[{D}a{D}]"))
    assert accepts(open_, call("f", "x:2,id:1"))  # extra members may also come first
    assert accepts(typed, call("f", f"id:1,x:{D}2{D}"))
    assert not accepts(typed, call("f", "id:1,x:2"))
    # an extra member never repeats a declared key (nor its prefix or extension is refused)
    assert not accepts(open_, call("f", "id:1,id:2"))
    assert accepts(open_, call("f", "id:1,i:2,idx:3"))


def test_refs_and_recursion():
    tool = {"name": "tree", "parameters": {
        "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"],
        "$defs": {"node": {"type": "object", "properties": {
            "label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["label"]}}}}
    lark = lark_for([tool])
    assert accepts(lark, rendered("tree", {"root": {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}}))
    assert not accepts(lark, call("tree", "root:{children:[]}"))
    with pytest.raises(SchemaError, match="names nothing"):
        lark_for([{"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}])


def test_arrays_with_bounds_and_prefix_items():
    tool = {"name": "f", "parameters": {"type": "object", "properties": {
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False, "minItems": 2},
        "few": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    }}}
    lark = lark_for([tool])
    assert accepts(lark, call("f", f"few:[1,2,3],pair:[1,{D}a{D}]"))
    for body in ("few:[]", "few:[1,2,3,4]", "pair:[1]", f"pair:[{D}a{D},1]", f"pair:[1,{D}a{D},2]"):
        assert not accepts(lark, call("f", body)), body


def test_keys_the_format_must_quote():
    tool = {"name": "f", "parameters": {"type": "object", "properties": {"a b": {"type": "integer"}, "x:y": {"type": "integer"}}}}
    lark = lark_for([tool])
    text = rendered("f", {"a b": 1, "x:y": 2})
    assert text == call("f", f"{D}a b{D}:1,{D}x:y{D}:2")
    assert accepts(lark, text)


def test_gemma_style_type_names():
    tool = {"name": "f", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}}}
    assert accepts(lark_for([tool]), call("f", "n:1"))


@pytest.mark.parametrize("tool, message", [
    ({"name": "f", "parameters": {"type": "array"}}, "arguments are an object"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"a": False}, "required": ["a"]}}, "false"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "text"}}}}, "unknown type"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}}, "within the tool"),
    ({"name": "f", "parameters": {"type": "object", "properties": {"a<|\"|>": {"type": "integer"}}}}, "no text in the format"),
    ({"name": "f g", "parameters": None}, "cannot write this name"),
])
def test_schema_errors_name_the_tool_and_place(tool, message):
    with pytest.raises(SchemaError, match=message) as error:
        lark_for([tool])
    assert "tool 'f" in str(error.value)


def test_not_enforced_lists_what_validation_keeps():
    tool = {"name": "f", "parameters": {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 0, "maximum": 9},
        "s": {"type": "string", "pattern": "^[a-z]+$", "format": "email"},
        "l": {"type": "array", "items": {"type": "string", "maxLength": 3}, "uniqueItems": True, "maxItems": 100},
        "o": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    }}}
    found = not_enforced(read_tools([tool]))
    for expected in ("f: parameters.properties.n.minimum", "f: parameters.properties.n.maximum",
                     "f: parameters.properties.s.pattern", "f: parameters.properties.s.format",
                     "f: parameters.properties.l.uniqueItems", "f: parameters.properties.l.items.maxLength",
                     "f: parameters.properties.l.maxItems (over 16)", "f: parameters.properties.o.oneOf"):
        assert any(line.startswith(expected) for line in found), expected
    assert not_enforced(read_tools([WEATHER, PING])) == []


# --- enums merged (`allOf` of two enums): the values both hold -------------------------------
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 2.5, -0.0, float("nan")])
                     | st.sampled_from(["a", "1", "true"]),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), c, max_size=2),
                     max_leaves=6)


@settings(max_examples=500, deadline=None)
@given(mine=st.lists(_JSON, max_size=8), theirs=st.lists(_JSON, max_size=8), shared=st.lists(_JSON, max_size=3))
def test_merged_enums_keep_what_pairwise_comparison_keeps(mine, theirs, shared):
    """`_shared` (a lookup by hash) against the comparison of every pair it replaced."""
    mine, theirs = mine + shared, shared + theirs
    assert _merge.shared_values(mine, theirs) == [v for v in mine if any(_merge.same_json(v, w) for w in theirs)]


def _two_enums(n):
    values = list(range(n))
    return read_tools([{"name": "f", "parameters": {"type": "object", "properties": {
        "x": {"allOf": [{"enum": values}, {"enum": values[::-1]}]}}}}])


# Two enums of 32,000 values took 87 s compared pair by pair.
_ENUM_GUARDS = [Guard("two enums merged", lambda tools: tool_call_rules(tools, read_tool_choice("auto", tools)),
                      _two_enums, 256, 16384)]
test_merging_enums_is_linear, test_the_enum_guard_can_fail = guard_tests(_ENUM_GUARDS)
