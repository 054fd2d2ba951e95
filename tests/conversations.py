"""Conversations for the renderers' tests: one hand-picked conversation with its tools (every kind
of message, argument and content the templates treat apart), the options of the official template,
and hypothesis strategies that draw OpenAI-shaped conversations and tool declarations."""

from hypothesis import strategies as st


# --- the hand-picked conversation ---------------------------------------------------------------
TOOLS = [
    {"type": "function", "function": {
        "name": "get_current_weather", "description": "Gets the weather.",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City, country"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "nullable": True},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "points": {"type": "array", "items": {"type": "object", "properties": {
                "x": {"type": "number"}, "label-name": {"type": "string"}}, "required": ["x"]}},
            "filters": {"type": "object", "properties": {"since": {"type": "string"}}, "required": ["since"]},
        }, "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "github:create-issue", "description": "Opens an issue.",
        "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
        "response": {"type": "object", "description": "The new issue."}}},
]

MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Tokyo and open an issue."},
    {"role": "assistant", "reasoning_content": "Two calls.", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_current_weather", "arguments": {
            "location": "Tokyo, JP", "days": 3, "ratio": 1.0, "big": 1e20, "none": None, "flag": True,
            "nested": {"B": [1, 2.5, {"x": "y"}], "a": "b"}}}},
        {"id": "c2", "type": "function", "function": {"name": "github:create-issue", "arguments": {"title": "Bug"}}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"temperature\": 15}"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "created #7"}]},
    {"role": "assistant", "content": "Done: 15 degrees, issue #7."},
    {"role": "user", "content": [{"type": "text", "text": "Look"}, {"type": "image"}]},
]

# Every combination of the official template's switches.
OPTIONS = [dict(add_generation_prompt=a, enable_thinking=t, preserve_thinking=p)
           for a in (False, True) for t in (False, True) for p in (False, True)]


# --- generated conversations --------------------------------------------------------------------
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<>"), max_size=12)
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
keys = st.sampled_from(["a", "B", "b", "path", "Zeta", "n_1", "q"]) | names
_scalar = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | texts
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=8)
argument_objects = st.dictionaries(keys, _value, max_size=4)

_leaf_schema = st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean"])},
                                     optional={"description": texts, "nullable": st.booleans(),
                                               "enum": st.lists(texts, min_size=1, max_size=3)})
_schema = st.recursive(
    _leaf_schema,
    lambda inner: st.fixed_dictionaries({"type": st.just("array"), "items": inner}, optional={"description": texts})
    | st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(keys, inner, max_size=3)},
                            optional={"required": st.lists(keys, max_size=2), "description": texts}),
    max_leaves=5)
tool_declarations = st.builds(
    lambda name, description, properties, required, response: {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
        **({"response": response} if response else {})}},
    names, texts, st.dictionaries(keys, _schema, max_size=3), st.lists(keys, max_size=2),
    st.none() | st.fixed_dictionaries({"type": st.sampled_from(["object", "string"])}, optional={"description": texts}))

def tool_name(tool):
    return tool["function"]["name"]  # one declaration per name: tools.read_tools refuses two


_content = texts | st.lists(st.one_of(st.builds(lambda t: {"type": "text", "text": t}, texts),
                                      st.just({"type": "image"}), st.just({"type": "audio"})), max_size=3)


# Assistants write text; media in an assistant message right after tool results would sit where a
# tool result's media does, and is read back as the tool's (see gemma4_lark.messages).
_assistant_content = texts | st.none() | st.lists(st.builds(lambda t: {"type": "text", "text": t}, texts), max_size=2)


@st.composite
def conversations(draw):
    messages = []
    if draw(st.booleans()):
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(_content)})
    for turn in range(draw(st.integers(1, 4))):
        messages.append({"role": draw(st.sampled_from(["user", "user", "developer"])), "content": draw(_content)})
        for _ in range(draw(st.integers(0, 2))):
            assistant = {"role": "assistant", "content": draw(_assistant_content)}
            if draw(st.booleans()):
                assistant["reasoning_content"] = draw(texts)
            calls = draw(st.lists(st.builds(lambda n, a: (n, a), names, argument_objects), max_size=2))
            if calls:
                assistant["tool_calls"] = [{"id": f"c{turn}{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                           for i, (n, a) in enumerate(calls)]
            messages.append(assistant)
            for i in range(draw(st.integers(0, len(calls)))):
                messages.append({"role": "tool", "tool_call_id": f"c{turn}{i}", "content": draw(_content)})
    return messages
