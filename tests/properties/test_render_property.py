"""Property: a renderer either refuses (UnsafeContentError) or writes a prompt that reads back to
the messages it was given, whatever any field holds: texts, thinking, names, keys, roles,
descriptions, schemas, enum values, results, media. Under "strip" the prompt reads back to the
messages with every control token stripped from each text as it lands in the prompt (names and
roles cannot be stripped: those are refused).

The comparison is on what a prompt says, as a flat list of events (a turn and its role, a text, a
thought, a call, a result, a declaration); texts written side by side in the prompt are one event,
so a token split across them is judged as the prompt holds it.
"""

import json
import sys

from hypothesis import event, given, settings, strategies as st

from gemma4_lark import ToolCall, ToolDeclaration, parse_transcript
from gemma4_lark.messages import read_official, read_omp
from gemma4_lark.render import omp
from gemma4_lark.render.official import render_chat, strip_thinking
from gemma4_lark.render.safety import UnsafeContentError, strip_controls

from conftest import numbers_by_value
from conversations import OPTIONS

def _refusal(error) -> str:
    """The kind of refusal, for hypothesis's statistics."""
    text = str(error)
    return "refused: " + ("name or role" if "terminal" in text else "control token" if "control token" in text
                          else "other")


# --- adversarial pieces --------------------------------------------------------------------------
_FRAGMENTS = ["<", ">", "|", "<|", "|>", "<|\"|>", '"', "turn", "<turn|>", "<|turn>", "system", "model", "\n", " ",
              ":", ",", "{", "}", "[", "]", "a", "b", "x y", "call:", "response:", "<|tool_call>", "<tool_call|>",
              "<|im_start|>", "<image|>", "<eos>", "bos>", "<|channel>", "thought", "<channel|>", "é", "\t", "1"]
_attack = st.lists(st.sampled_from(_FRAGMENTS), max_size=6).map("".join)
_plain = st.text(st.characters(codec="utf-8", exclude_characters="<"), max_size=8)
# mostly harmless, so that most conversations render and what renders is checked
_text = st.one_of(_plain, _plain, _plain, _attack, st.text(max_size=6))
_word = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_name = st.one_of(_word, _text)
_key = st.one_of(_word, _word, _text)
_role = st.one_of(st.sampled_from(["user", "user", "narrator"]), _text)
_scalar = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats() | _text
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3),
                      max_leaves=6)
_arguments = st.dictionaries(_key, _value, max_size=3)


def _hostile(draw, hostile, strategy):
    """Names and roles are refused whole when odd: only some examples make them odd, so that most
    examples get as far as the prompt."""
    return draw(strategy) if hostile else draw(_word if strategy is _name else st.sampled_from(["user", "narrator"]))
_parts = st.lists(_text, min_size=1, max_size=3)


def _strip_delimiters(text):
    """A string of the model's own call arguments stripped: only the delimiter goes, until none is
    left (docs/security.md#the-models-own-calls)."""
    while '<|"|>' in text:
        text = text.replace('<|"|>', "")
    return text


def _strip_value(value, unsafe, strip=strip_controls):
    """The value as the prompt holds it: strings and keys stripped one by one (by `strip`)."""
    if unsafe != "strip":
        return value
    if isinstance(value, str):
        return strip(value)
    if isinstance(value, list):
        return [_strip_value(v, unsafe, strip) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in sorted(value.items(), key=lambda item: item[0].lower()):  # written sorted; the last wins
            out[strip(k)] = _strip_value(v, unsafe, strip)
        return out
    return value


def _events_text(events, kind, text):
    """Append a text event, joining it to a text event just before (one text in the prompt)."""
    if events and events[-1][0] == kind:
        events[-1] = (kind, events[-1][1] + text)
    else:
        events.append((kind, text))


def _finish(events, unsafe):
    out = []
    for event in events:
        if event[0] in ("text", "thought"):
            text = strip_controls(event[1]) if unsafe == "strip" else event[1]
            if text.strip() if event[0] == "text" else text:
                out.append((event[0], text))
        else:
            out.append(event)
    return out


# --- official -------------------------------------------------------------------------------------
@st.composite
def official_conversations(draw):
    hostile = draw(st.integers(0, 3)) == 0
    messages = [{"role": "system", "content": draw(_text)}] if draw(st.booleans()) else []
    for turn in range(draw(st.integers(1, 3))):
        content = draw(_text | _parts.map(lambda ts: [{"type": "text", "text": t} for t in ts]))
        messages.append({"role": _hostile(draw, hostile, _role), "content": content})
        assistant = {"role": "assistant", "content": ""}
        if draw(st.booleans()):
            calls = [(_hostile(draw, hostile, _name), draw(_arguments)) for _ in range(draw(st.integers(1, 2)))]
            assistant["tool_calls"] = [{"id": f"c{turn}{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                       for i, (n, a) in enumerate(calls)]
            messages.append(assistant)
            for i in range(len(calls)):
                messages.append({"role": "tool", "tool_call_id": f"c{turn}{i}",
                                 "content": draw(_text | st.dictionaries(_key, _value, min_size=1, max_size=3))})
            assistant = {"role": "assistant", "content": ""}
        if draw(st.booleans()):
            assistant["reasoning_content"] = draw(_text)
        assistant["content"] = draw(_text | _parts.map(lambda ts: [{"type": "text", "text": t} for t in ts]))
        messages.append(assistant)
        if draw(st.booleans()):  # a second assistant message: the template writes it into the same turn
            messages.append({"role": "assistant", "content": draw(_text)})
    return messages


_tools = st.lists(st.builds(
    lambda name, description, key, property_description, enum: {"type": "function", "function": {
        "name": name, "description": description, "parameters": {"type": "object", "properties": {
            key: {"type": "string", "description": property_description, "enum": enum}}, "required": [key]}}},
    _word | _name, _text, _key, _text, st.lists(_text, min_size=1, max_size=2)), max_size=2,
    unique_by=lambda tool: tool["function"]["name"])  # tools.read_tools refuses a name twice


def _official_text(content, role, unsafe):
    def trim(text):
        # trimmed as the template trims; under "strip", the stripped text trimmed again
        text = strip_thinking(text) if role == "assistant" else text.strip()
        return strip_controls(text).strip() if unsafe == "strip" else text

    if isinstance(content, str):
        return trim(content)
    return "".join(trim(p["text"]) for p in content)


def _official_result(content, unsafe):
    if isinstance(content, str):
        return strip_controls(content) if unsafe == "strip" else content
    return _strip_value(content, unsafe)


def official_events(messages, tools, unsafe, *, given=True):
    """What an official prompt says. `given`: messages as rendered (reasoning only after the last
    user message, as the template writes it); otherwise as read back."""
    events = []
    for tool in tools or []:
        function = tool["function"]
        parameters = function["parameters"]
        key, prop = next(iter(parameters["properties"].items()))
        strip = (lambda t: strip_controls(t)) if unsafe == "strip" else (lambda t: t)
        events.append(("declaration", strip(function["name"]), strip(function["description"]), strip(key),
                       strip(prop["description"]), tuple(strip(e) for e in prop["enum"]),
                       tuple(strip(r) for r in parameters["required"])))
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    prior = None
    for i, message in enumerate(messages):
        role = message["role"]
        if i == 0 and role == "system" and not _finish([("text", _official_text(message["content"], role, unsafe))], unsafe):
            continue  # an empty system message leaves no trace when tools open the system turn
        if role == "tool":
            events.append(("result", _official_result(message["content"], unsafe) if given else message["content"]))
            continue
        previous, prior = prior, role
        if role != "assistant":
            events.append(("turn", role))
            _events_text(events, "text", _official_text(message["content"], role, unsafe) if given else message["content"])
            continue
        if previous != "assistant":  # consecutive assistant messages share one model turn
            events.append(("turn", "model"))
        thinking = message.get("reasoning_content")
        if thinking and (not given or i > last_user):
            events.append(("thought", thinking))
        for call in message.get("tool_calls") or []:
            events.append(("call", call["function"]["name"], _strip_value(call["function"]["arguments"], unsafe, _strip_delimiters)
                           if given else call["function"]["arguments"]))
        content = message.get("content")
        _events_text(events, "text", (_official_text(content, role, unsafe) if given else
                                      content if isinstance(content, str) else "".join(p["text"] for p in content)))
    return _finish(events, unsafe if given else "allow")


def _read_official_events(text, unsafe):
    read = read_official(text)
    tools = []
    for tool in read.tools:
        function = tool["function"]
        parameters = function["parameters"]
        key, prop = next(iter(parameters["properties"].items()))
        tools.append({"function": {"name": function["name"], "description": function["description"], "parameters": {
            "properties": {key: {"description": prop.get("description", ""), "enum": prop["enum"]}},
            "required": parameters["required"]}}})
    messages = [m for m in read.messages if not (m["role"] == "tool" and "tool_call_id" not in m and m.get("content") == "")]
    return official_events(messages, tools, unsafe, given=False)


@settings(deadline=None)
@given(official_conversations(), _tools, st.sampled_from(["error", "strip"]))
def test_official_prompt_reads_back_or_is_refused(messages, tools, unsafe):
    # the properties' description and enum are read back as the prompt writes them: keep them non-empty
    tools = [t for t in tools if t["function"]["parameters"]["properties"]]
    try:
        text = render_chat(messages, tools or None, unsafe=unsafe)
    except UnsafeContentError:
        event(_refusal(sys.exc_info()[1]))
        return
    event("rendered")
    expected = official_events(messages, tools, unsafe)
    assert _read_official_events(text, unsafe) == expected, text


# --- official, wider: structure kept, and read -> render gives the prompt again ------------------------
_wide_schema = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "array", "object", "STRING"])},
                          optional={"description": _text, "enum": st.lists(_value, max_size=2), "nullable": st.booleans(),
                                    # a None member is dropped by the template, and an `items:{}` so left reads
                                    # back as no items (a template quirk, not a safety matter)
                                    "items": st.dictionaries(_key, _value.filter(lambda v: v is not None),
                                                             max_size=2)}),
    lambda inner: st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(_key, inner, max_size=2)},
                                        optional={"required": st.lists(_text, max_size=2), "description": _text})
    | st.fixed_dictionaries({"type": st.just("array"), "items": st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(_key, inner, max_size=2)},
        optional={"required": st.lists(_text, max_size=2)})}),
    max_leaves=4)
_wide_tool = st.builds(
    lambda name, description, properties, required, response: {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required},
        **({"response": response} if response else {})}},
    _word, _text, st.dictionaries(_key, _wide_schema, max_size=2), st.lists(_text, max_size=2),
    st.none() | st.fixed_dictionaries({"type": st.just("object")}, optional={"description": _text}))
_wide_part = st.builds(lambda t: {"type": "text", "text": t}, _text) | st.sampled_from(
    [{"type": "image"}, {"type": "audio"}, {"type": "video"}, {"type": "weird"}])
_text_parts = st.lists(st.builds(lambda t: {"type": "text", "text": t}, _text), max_size=2)


@st.composite
def _wide_conversations(draw):
    messages = []
    if draw(st.booleans()):
        # a string: a list is written part by part with spaces, which reads back as a list only
        # when no part has inner whitespace (a heuristic of the reader, not a safety matter)
        messages.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(_text)})
    for turn in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(_text | st.lists(_wide_part, max_size=3))})
        for _ in range(draw(st.integers(0, 2))):
            assistant = {"role": "assistant", "content": draw(_text | _text_parts)}
            if draw(st.booleans()):
                assistant["reasoning_content"] = draw(_text)
            calls = draw(st.integers(0, 2))
            if calls:
                assistant["tool_calls"] = [{"id": f"c{turn}{i}", "function": {
                    "name": draw(_word), "arguments": draw(st.dictionaries(_key, _value, max_size=2))}} for i in range(calls)]
            messages.append(assistant)
            for i in range(draw(st.integers(0, calls))):
                messages.append({"role": "tool", "tool_call_id": f"c{turn}{i}", "content": draw(
                    _text | st.dictionaries(_key, _value, max_size=2) | st.lists(_wide_part, max_size=2))})
    return messages


@settings(deadline=None)
@given(_wide_conversations(), st.lists(_wide_tool, max_size=2, unique_by=lambda t: t["function"]["name"]), st.sampled_from(OPTIONS), st.sampled_from(["e2b", "31b"]),
       st.sampled_from(["error", "strip"]))
def test_official_prompt_keeps_its_structure_and_renders_back(messages, tools, options, variant, unsafe):
    """Wider conversations (media, list contents, nested schemas, every option): what renders has exactly the calls and declarations given, and reading it gives
    messages that render the same prompt again."""
    try:
        text = render_chat(messages, tools or None, variant=variant, unsafe=unsafe, **options)
    except UnsafeContentError:
        event("refused")
        return
    event("rendered")
    parts = [p for t in parse_transcript(text).turns for p in t.parts]
    assert sum(isinstance(p, ToolCall) for p in parts) == sum(len(m.get("tool_calls") or []) for m in messages)
    assert sum(isinstance(p, ToolDeclaration) for p in parts) == len(tools)
    read = read_official(text)
    assert render_chat(variant=variant, unsafe=unsafe, preserve_thinking=options["preserve_thinking"],
                       **read.render_kwargs()) == text
    for tool, back in zip(tools, read.tools):
        if unsafe == "error":
            assert set(tool["function"]["parameters"]["properties"]) == set(
                (back["function"].get("parameters") or {}).get("properties", {}))


# --- omp ------------------------------------------------------------------------------------------
_omp_user_content = _text | st.lists(
    st.builds(lambda t: {"type": "text", "text": t}, _text) | st.builds(lambda m: {"type": "image", "mimeType": m}, _text),
    max_size=3)


@st.composite
def omp_conversations(draw):
    hostile = draw(st.integers(0, 3)) == 0
    messages = []
    for turn in range(draw(st.integers(1, 3))):
        messages.append({"role": draw(st.sampled_from(["user", "system", "developer"])), "content": draw(_omp_user_content)})
        content = [{"type": "thinking", "thinking": t} for t in draw(st.lists(_text, max_size=2))]
        content += [{"type": "text", "text": t} for t in draw(st.lists(_text, max_size=2))]
        calls = [(_hostile(draw, hostile, _name), draw(_arguments)) for _ in range(draw(st.integers(0, 2)))]
        content += [{"type": "toolCall", "id": f"c{turn}{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]
        messages.append({"role": "assistant", "content": content})
        for i, (name, _) in enumerate(calls):
            result = draw(_text | _value.map(json.dumps))
            messages.append({"role": "toolResult", "toolCallId": f"c{turn}{i}", "toolName": name,
                             "content": [{"type": "text", "text": result}], "isError": False})
    return messages


def _omp_value(text):
    return omp._result_value(text)


def omp_events(messages, unsafe, *, given=True):
    events = []
    for message in messages:
        role = message["role"]
        if role in ("user", "system", "developer"):
            events.append(("turn", "user" if role == "user" else "system"))
            content = message["content"]
            if not isinstance(content, str):
                content = "".join(p["text"] if p["type"] == "text" else f"[Image: {p['mimeType']}]" for p in content)
            _events_text(events, "text", content)
        elif role == "assistant":
            events.append(("turn", "model"))
            parts = message["content"]
            thinking = [p["thinking"] for p in parts if p["type"] == "thinking"]
            if thinking:
                events.append(("thought", "\n".join(thinking)))
            _events_text(events, "text", "".join(p["text"] for p in parts if p["type"] == "text"))
            for p in parts:
                if p["type"] == "toolCall":
                    events.append(("call", p["name"], _strip_value(p["arguments"], unsafe, _strip_delimiters)))
        else:
            value = _omp_value("".join(p["text"] for p in message["content"]))
            events.append(("result", _strip_value(value, unsafe) if given else value))
    return _finish(events, unsafe if given else "allow")


def _omp_turns(events):
    # a turn of results alone reads back without an assistant message: drop empty model turns on
    # both sides, so that what is compared is the turns' content
    return [e for i, e in enumerate(events)
            if not (e == ("turn", "model") and (i + 1 == len(events) or events[i + 1][0] in ("turn", "result")))]


@settings(deadline=None)
@given(omp_conversations(), st.sampled_from(["error", "strip"]))
def test_omp_transcript_reads_back_or_is_refused(messages, unsafe):
    try:
        text = omp.render_transcript(messages, unsafe=unsafe)
    except UnsafeContentError:
        event(_refusal(sys.exc_info()[1]))
        return
    event("rendered")
    read = omp_events(read_omp(text), unsafe, given=False)
    assert numbers_by_value(_omp_turns(read)) == numbers_by_value(_omp_turns(omp_events(messages, unsafe))), text


@settings(deadline=None)
@given(st.lists(st.builds(lambda name, description, examples, enum, key: {
    "name": name, "description": description, "examples": examples,
    "parameters": {"type": "object", "properties": {key: {"type": "string", "enum": enum, "description": description}}}},
    _word | _name, _text, st.lists(_text, max_size=2), st.lists(_text, min_size=1, max_size=2), _key), max_size=2,
    unique_by=lambda tool: tool["name"]),  # tools.read_tools refuses a name twice
    st.sampled_from(["error", "strip"]))
def test_omp_inventory_holds_no_control_token_and_no_line_outside_a_comment(tools, unsafe):
    try:
        text = omp.render_tool_inventory(tools, unsafe=unsafe)
    except UnsafeContentError:
        event(_refusal(sys.exc_info()[1]))
        return
    event("rendered")
    from gemma4_lark.render.safety import CONTROL

    assert CONTROL.search(text) is None
    names = [line.split(" ", 2)[1] for line in text.splitlines() if line.startswith("type ")]
    assert names == [t["name"] for t in tools]
