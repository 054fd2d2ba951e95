"""The shapes the renderers take: conversations and tools as JSON gives them, checked before
anything is written, so that a field of the wrong type is an error naming it
(`messages[0].content[0]: must be an object, not int`) rather than an AttributeError or KeyError
from deep inside a renderer, or a field silently left out.

Only what a renderer reads is checked, and only as far as the official template or OMP would fail
on it or write it as nonsense: fields a renderer ignores may hold anything.
"""

from __future__ import annotations

import json

from ..fields import ShapeError, expect, kind_name
from ..tools import read_tools


_TEXT = (str,)
_OBJECT = (dict,)
_ARRAY = (list, tuple)


def _present(mapping: dict, key: str, kinds: tuple, where) -> None:
    """A field that may be left out, but when given is of one of `kinds` (the renderers would
    write None as the text "None")."""
    if key in mapping:
        expect(mapping[key], kinds, (where, key))


def _parts(content, where) -> None:
    """Content parts: objects, whose text (where given) is a string."""
    for i, part in enumerate(content):
        expect(part, _OBJECT, (where, i))
        _present(part, "text", _TEXT, (where, i))


def _message(message, where, roles_key: str = "role") -> str:
    expect(message, _OBJECT, where)
    if roles_key not in message:
        raise ShapeError(where, f"has no {roles_key!r}")
    return expect(message[roles_key], _TEXT, (where, roles_key))


class ArgumentsError(ShapeError):
    """`tool_calls[].function.arguments` given as a string that is not a JSON object: not JSON
    (`pos`, `lineno` and `colno` say where in the string, 0-based offset and 1-based line and
    column, as `json.JSONDecodeError` does), or JSON of another type (then they are None)."""

    def __init__(self, where, message: str, pos: int | None = None, lineno: int | None = None,
                 colno: int | None = None):
        self.pos, self.lineno, self.colno = pos, lineno, colno
        super().__init__(where, message)


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


def _unique_members(pairs: list) -> dict:
    members = dict(pairs)
    if len(members) < len(pairs):
        raise ValueError("a key given twice")
    return members


def decode_arguments(text: str, where) -> dict:
    """A call's arguments as OpenAI sends them, a JSON string, as the object it encodes: the
    value `json.loads` gives, so that rendering it writes exactly what rendering that dict does.
    JSON means RFC 8259 as `JSON.parse` reads it, so NaN and Infinity are refused; so is an
    object naming a key twice (json.loads would keep the last value and lose the other without a
    word). Any depth decodes, in linear time; the renderer then refuses a value nesting deeper than
    the parser reads, with the same error as for a dict. Raises `ArgumentsError` (a ShapeError,
    so a ValueError) naming `where` and the position in the string."""
    try:
        value = json.loads(text, object_pairs_hook=_unique_members, parse_constant=_not_json)
    except json.JSONDecodeError as error:
        raise _not_json_error(where, error) from None
    except (ValueError, RecursionError):
        # a key given twice, a constant, too many digits (no position from json.loads), or
        # nesting deeper than json's recursive reader goes: the same reading, iteratively, and
        # with the position of whatever fails
        from .js import parse_iteratively

        try:
            value = parse_iteratively(text, unique_keys=True)
        except json.JSONDecodeError as error:
            raise _not_json_error(where, error) from None
    if not isinstance(value, dict):
        raise ArgumentsError(where, f"must be a JSON object, not {kind_name(value)} (the arguments of a call are"
                                    " an object; a call without arguments has '{}')")
    return value


def _not_json_error(where, error: json.JSONDecodeError) -> ArgumentsError:
    return ArgumentsError(where, f"is not JSON: {error.msg} at line {error.lineno} column {error.colno}"
                                 f" (offset {error.pos}) of the string", error.pos, error.lineno, error.colno)


def read_arguments(messages) -> list:
    """`messages` with every call's string `arguments` decoded (see `decode_arguments`); the
    messages that hold none are the same objects, and none of the caller's is changed."""
    out = messages
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") != "tool" else None
        if not calls or not any(isinstance(call["function"].get("arguments"), str) for call in calls):
            continue
        if out is messages:
            out = list(messages)
        decoded = []
        for k, call in enumerate(calls):
            function = call["function"]
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                function = {**function, "arguments": decode_arguments(
                    arguments, f"messages[{i}].tool_calls[{k}].function.arguments")}
                call = {**call, "function": function}
            decoded.append(call)
        out[i] = {**message, "tool_calls": decoded}
    return out


UNMATCHED_POLICIES = ("error", "keep")


def check_unmatched_policy(policy: str) -> None:
    if policy not in UNMATCHED_POLICIES:
        raise ValueError(f"unmatched_tool_call_id must be one of {UNMATCHED_POLICIES}, not {policy!r}")


def _ids_hint(call_ids: dict, wanted) -> str:
    shown = ", ".join(repr(k) for k in list(call_ids)[:8]) + (", ..." if len(call_ids) > 8 else "")
    hint = ""
    for known in call_ids:
        if known is not None and str(known) == str(wanted):
            hint = f" ({wanted!r} is {kind_name(wanted)}, the call's id {known!r} is {kind_name(known)})"
            break
    return f"the calls' ids are {shown}{hint}" if call_ids else "its calls have no ids"


def check_tool_results(messages, policy: str = "error", *, orphans_render: bool = False) -> list:
    """For every `tool` message, the name of the function whose result it is (None where the
    policy keeps what the official template does); with policy="error", a `ShapeError` for a
    result that answers no call of the message it follows:

    - a `tool_call_id` that is not the id of one of the calls of the message before the run of
      tool messages (`messages[3].tool_call_id`);
    - neither a `tool_call_id` nor a `name` (the template writes `response:unknown`);
    - a `tool_call_id` that two calls of different functions share (the template would take the
      last one's name);
    - with `orphans_render` False (the official template), a result with content after a message
      that makes no calls: the template writes nothing of it.

    policy="keep" renders such results as the template does. Messages are those `check_chat` took."""
    check_unmatched_policy(policy)
    names: list = []
    owner = None  # (index, {id: name}) of the message the current run of results follows
    legacy = None
    for i, message in enumerate(messages):
        if message["role"] != "tool":
            calls = message.get("tool_calls")
            owner = None
            legacy = i if calls and message.get("tool_responses") else None  # its results are inside it
            if calls and legacy is None:
                call_ids: dict = {}  # id -> [(index of the call, its name)]
                for k, call in enumerate(calls):
                    if call.get("id") is not None:
                        call_ids.setdefault(call["id"], []).append((k, call["function"]["name"]))
                owner = (i, call_ids)
            names.append(None)
            continue
        where = f"messages[{i}]"
        call_id, name = message.get("tool_call_id"), message.get("name")
        if owner is None:
            names.append(None)
            if policy == "keep":
                continue
            before = (f"messages[{legacy}] gives its results in tool_responses" if legacy is not None
                      else "no message before it makes tool calls")
            if call_id is not None:
                raise ShapeError(f"{where}.tool_call_id", f"{call_id!r} matches no call: {before} (pass"
                                 " unmatched_tool_call_id='keep' to render it as the template does)")
            if not orphans_render and message.get("content") not in (None, "", [], ()):
                raise ShapeError(where, f"is a tool result the template writes nothing of: {before} (pass"
                                 " unmatched_tool_call_id='keep' to drop it)")
            continue
        at, call_ids = owner
        if call_id is not None:
            if call_id in call_ids:
                matched = call_ids[call_id]
                if policy == "error" and len({name for _, name in matched}) > 1:
                    (first, first_name), (other, other_name) = matched[0], next(
                        m for m in matched if m[1] != matched[0][1])
                    raise ShapeError(f"{where}.tool_call_id", f"{call_id!r} is the id of two calls of messages[{at}]"
                                     f" (tool_calls[{first}] of {first_name!r}, tool_calls[{other}] of"
                                     f" {other_name!r}): which one it answers is unknown")
                names.append(matched[-1][1])  # the template takes the last call with the id
                continue
            if policy == "error":
                raise ShapeError(f"{where}.tool_call_id", f"{call_id!r} matches no call of messages[{at}]:"
                                 f" {_ids_hint(call_ids, call_id)} (pass unmatched_tool_call_id='keep' to"
                                 " render it as the template does, under its name or 'unknown')")
        elif name is None and policy == "error":
            raise ShapeError(where, f"has neither a tool_call_id nor a name: which call of messages[{at}] it"
                             " answers is unknown (pass unmatched_tool_call_id='keep' to render it as"
                             " 'unknown', as the template does)")
        names.append(name)
    return names


def check_chat(messages, tools) -> list | None:
    """OpenAI-style messages and tools as `official.render_chat` reads them; the tools as it
    writes them (see `read_chat_tools`)."""
    expect(messages, _ARRAY, "messages")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = _message(message, where)
        content = message.get("content")
        if role == "tool":  # the result: any value, or content parts
            if isinstance(content, _ARRAY):
                _parts(content, f"{where}.content")
            expect(message.get("tool_call_id"), (str, int), f"{where}.tool_call_id", optional=True)
            expect(message.get("name"), _TEXT, f"{where}.name", optional=True)
            continue
        if expect(content, (str, list, tuple), f"{where}.content", optional=True) is not None \
                and not isinstance(content, str):
            _parts(content, f"{where}.content")
        for key in ("reasoning", "reasoning_content"):
            expect(message.get(key), _TEXT, f"{where}.{key}", optional=True)
        for k, call in enumerate(expect(message.get("tool_calls"), _ARRAY, f"{where}.tool_calls", optional=True) or ()):
            at = f"{where}.tool_calls[{k}]"
            expect(call, _OBJECT, at)
            expect(call.get("id"), (str, int), f"{at}.id", optional=True)
            if "function" not in call:
                raise ShapeError(at, "has no 'function'")
            function = expect(call["function"], _OBJECT, f"{at}.function")
            if "name" not in function:
                raise ShapeError(f"{at}.function", "has no 'name'")
            expect(function["name"], _TEXT, f"{at}.function.name")
        responses = expect(message.get("tool_responses"), _ARRAY, f"{where}.tool_responses", optional=True)
        for k, response in enumerate(responses or ()):
            expect(response, _OBJECT, f"{where}.tool_responses[{k}]")
            expect(response.get("name"), _TEXT, f"{where}.tool_responses[{k}].name", optional=True)
    return read_chat_tools(tools)


def read_chat_tools(tools) -> list | None:
    """The tools as `official.render_chat` writes them: read by `tools.read_tools` (OpenAI-wrapped
    or bare function schemas), each as `{"type": "function", "function": SCHEMA}`; None for none."""
    if tools is None:
        return None
    read = read_tools(tools)
    for i, tool in enumerate(read):
        function = tool.function
        where = f"tools[{i}]"  # the renderer's short name for the function's fields, as before
        parameters = tool.parameters
        if parameters:
            expect(parameters.get("properties"), _OBJECT, f"{where}.parameters.properties", optional=True)
            for k, name in enumerate(expect(parameters.get("required"), _ARRAY, f"{where}.parameters.required",
                                            optional=True) or ()):
                expect(name, _TEXT, f"{where}.parameters.required[{k}]")
        if "response" in function:
            response = expect(function["response"], _OBJECT, f"{where}.response")
            expect(response.get("description"), _TEXT, f"{where}.response.description", optional=True)
    return [{"type": "function", "function": tool.function} for tool in read]


def check_transcript(messages) -> None:
    """OMP's messages as `omp.render_transcript` reads them."""
    expect(messages, _ARRAY, "messages")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = _message(message, where)
        content = message.get("content")
        if role == "assistant":  # always parts in OMP
            for j, part in enumerate(expect(content, _ARRAY, f"{where}.content", optional=True) or ()):
                at = f"{where}.content[{j}]"
                expect(part, _OBJECT, at)
                kind = part.get("type")
                if kind in ("thinking", "text"):
                    _present(part, kind, _TEXT, at)
                elif kind == "toolCall":
                    _present(part, "name", _TEXT, at)
                    expect(part.get("arguments"), _OBJECT, f"{at}.arguments", optional=True)
            continue
        if role == "toolResult":
            _present(message, "toolName", _TEXT, where)
        if expect(content, (str, list, tuple), f"{where}.content", optional=True) is not None \
                and not isinstance(content, str):
            _parts(content, f"{where}.content")
            for j, part in enumerate(content):
                if part.get("type") == "image":
                    _present(part, "mimeType", _TEXT, f"{where}.content[{j}]")
