"""The shapes the renderers take: conversations and tools as JSON gives them, checked before
anything is written, so that a field of the wrong type is an error naming it
(`messages[0].content[0]: must be an object, not int`) rather than an AttributeError or KeyError
from deep inside a renderer, or a field silently left out.

Only what a renderer reads is checked, and only as far as the official template or OMP would fail
on it or write it as nonsense: fields a renderer ignores may hold anything.
"""

from __future__ import annotations

from .safety import describe


class ShapeError(ValueError, TypeError):
    """A message or tool of the wrong shape: a field missing or of the wrong type. Both a
    ValueError and a TypeError, so code that caught either before keeps working. `where` names
    the field."""

    def __init__(self, where, message: str):
        self.where = describe(where)
        super().__init__(f"{self.where}: {message}")


_NAMES = {str: "a string", dict: "an object", list: "an array", tuple: "an array", type(None): "null",
          int: "an integer", float: "a number", bool: "a boolean"}


def _kind(value) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def expect(value, kinds: tuple, where, optional: bool = False):
    """`value` when it is an instance of one of `kinds` (or None, when `optional`); a ShapeError
    naming `where` otherwise."""
    if (optional and value is None) or isinstance(value, kinds):
        return value
    wanted = " or ".join(dict.fromkeys(_NAMES.get(k, k.__name__) for k in kinds))
    raise ShapeError(where, f"must be {wanted}{' or null' if optional else ''}, not {_kind(value)}")


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


def check_chat(messages, tools) -> None:
    """OpenAI-style messages and tools as `official.render_chat` reads them."""
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
    for i, tool in enumerate(expect(tools, _ARRAY, "tools", optional=True) or ()):
        where = f"tools[{i}]"
        expect(tool, _OBJECT, where)
        if "function" not in tool:
            raise ShapeError(where, "has no 'function'")
        function = expect(tool["function"], _OBJECT, f"{where}.function")
        if "name" not in function:
            raise ShapeError(f"{where}.function", "has no 'name'")
        expect(function["name"], _TEXT, f"{where}.name")
        if "description" in function:  # the template would write str() of anything else
            expect(function["description"], _TEXT, f"{where}.description")
        parameters = expect(function.get("parameters"), _OBJECT, f"{where}.parameters", optional=True)
        if parameters:
            expect(parameters.get("properties"), _OBJECT, f"{where}.parameters.properties", optional=True)
            for k, name in enumerate(expect(parameters.get("required"), _ARRAY, f"{where}.parameters.required",
                                            optional=True) or ()):
                expect(name, _TEXT, f"{where}.parameters.required[{k}]")
        if "response" in function:
            response = expect(function["response"], _OBJECT, f"{where}.response")
            expect(response.get("description"), _TEXT, f"{where}.response.description", optional=True)


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
