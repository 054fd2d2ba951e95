"""The canonical text of a value (SPEC §3): no whitespace, bare keys, strings in `<|"|>`.

Numbers are written as Python writes them (`str`), which the official template does too. A key is
written bare when the grammar's KEY terminal accepts it, quoted otherwise. A string that contains
the delimiter cannot be written (there is no escape) and raises ValueError, as does a float that is
not finite.
"""

from __future__ import annotations

import math

from ..grammar import terminal_pattern
from ..model import ToolCall
from ..tokens import CALL_KEYWORD, STRING_DELIMITER, TOOL_CALL_CLOSE, TOOL_CALL_OPEN


def _string(text: str) -> str:
    if STRING_DELIMITER in text:
        raise ValueError(f"a string cannot contain the delimiter {STRING_DELIMITER}: {text!r}")
    return STRING_DELIMITER + text + STRING_DELIMITER


def _key(key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"object keys must be str, not {type(key).__name__}")
    return key if terminal_pattern("KEY").fullmatch(key) else _string(key)


def dump_value(value) -> str:
    """The canonical text of a JSON-like value (no recursion: any nesting depth works)."""
    out: list[str] = []
    # An explicit stack of pending work: a value to write, or a literal piece of text.
    stack: list = [("value", value)]
    while stack:
        kind, item = stack.pop()
        if kind == "text":
            out.append(item)
            continue
        if item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, int):
            out.append(str(int(item)))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError(f"{item!r} has no text in the value language")
            out.append(repr(item))
        elif isinstance(item, str):
            out.append(_string(item))
        elif isinstance(item, dict):
            pending = [("text", "}")]
            for i, (k, v) in enumerate(reversed(list(item.items()))):
                pending.append(("value", v))
                pending.append(("text", ("," if i < len(item) - 1 else "") + _key(k) + ":"))
            pending.append(("text", "{"))
            stack.extend(pending)
        elif isinstance(item, (list, tuple)):
            pending = [("text", "]")]
            for i, v in enumerate(reversed(item)):
                pending.append(("value", v))
                if i < len(item) - 1:
                    pending.append(("text", ","))
            pending.append(("text", "["))
            stack.extend(pending)
        else:
            raise TypeError(f"{type(item).__name__} has no text in the value language")
    return "".join(out)


def dump_call(call: ToolCall) -> str:
    """`<|tool_call>call:NAME{...}<tool_call|>` in canonical form."""
    if not isinstance(call.arguments, dict):
        raise TypeError("arguments must be a dict")
    return TOOL_CALL_OPEN + CALL_KEYWORD + call.name + dump_value(call.arguments) + TOOL_CALL_CLOSE
