"""The JSONL protocol between the kit and a parser under test, and what a disagreement is.

A target reads one request per line, `{"text": ..., "options": {...}}` (`options` only when a case
needs one; a target may ignore keys it does not know), and writes one answer per line,
`{"calls": [{"name": ..., "arguments": {...}}, ...], "text": ...}`: the calls it found, in order,
and the text left for the user; or `{"error": "..."}` when the parser under test raised (a crash
the target survived, so it need not be restarted). docs/conformance.md is the full statement.
"""

from __future__ import annotations

import json
import math
import re
import sys

from gemma4_lark.grammar import whitespace
from gemma4_lark.error_base import Gemma4Error
from gemma4_lark.tokens import TOOL_CALL_OPEN

GRAMMAR_WHITESPACE = whitespace()  # the grammar's WS terminal

PROTOCOL_VERSION = 1

# The categories of a disagreement, with what each means (docs/conformance.md#categories).
CATEGORIES = {
    "calls": "calls missing, extra, out of order or misnamed",
    "arguments": "the right calls with different arguments",
    "text": "the right calls, different text",
    "accepts-invalid": "a call returned for a block the grammar rejects",
    "crash": "the target exited or closed its output",
    "timeout": "no answer in time",
    "protocol": "an answer that is not a JSON object of the protocol's shape",
}

CALL_OPEN = TOOL_CALL_OPEN


class ProtocolError(ValueError, Gemma4Error):
    """An answer line that is not the protocol's shape; the message says what is wrong."""


def request_line(request: dict) -> str:
    """The request as one line of JSON (ASCII only, so no target trips on an encoding)."""
    return json.dumps(request, ensure_ascii=True) + "\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value, **options) -> str:
    """`value` as JSON that any UTF-8 writer can write: non-ASCII characters as they are, but a lone
    surrogate (a target's `\\ud83d`, an emoji cut in half, read back as it was sent) as its `\\u`
    escape, which UTF-8 cannot hold otherwise; NaN and infinities refused (ValueError), as JSON has
    no spelling for them. For the report file and the answers `serve` writes."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, **options)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _reject_constant(name):
    raise ProtocolError(f"{name} is not JSON")


def _finite_float(digits: str) -> float:
    """A JSON number as a double; one past a double's range (`1e999`) is the `Infinity` that JSON
    cannot write, so it is refused as `Infinity` is: no answer holds a value no report can hold."""
    value = float(digits)
    if math.isinf(value):
        raise ProtocolError(f"the number {digits[:40]} is out of a double's range (Infinity is not JSON)")
    return value


def _integer(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # past the interpreter's digit limit, which the kit's parser never passes either
        raise ProtocolError(f"an integer of {len(digits.lstrip('-'))} digits is longer than the kit reads "
                            f"({sys.get_int_max_str_digits()} digits)") from None  # (only where it has a limit)


def read_answer(line: str) -> dict:
    """The answer of one line, as {"calls", "text"} (or {"error"}); ProtocolError when it is not
    the shape."""
    try:
        answer = json.loads(line, parse_constant=_reject_constant, parse_float=_finite_float,
                            parse_int=_integer)
    except ProtocolError:
        raise
    except (ValueError, RecursionError) as err:
        raise ProtocolError(f"not JSON: {err}") from None
    if not isinstance(answer, dict):
        raise ProtocolError(f"not a JSON object but {type(answer).__name__}")
    if answer.get("error") is not None:
        return {"error": str(answer["error"])}
    calls = answer.get("calls")
    if not isinstance(calls, list):
        raise ProtocolError('"calls" is missing or not an array')
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(call.get("arguments"), dict):
            raise ProtocolError(f'calls[{i}] is not {{"name": string, "arguments": object}}')
    text = answer.get("text", None)
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ProtocolError('"text" is not a string')
    return {"calls": [{"name": c["name"], "arguments": c["arguments"]} for c in calls], "text": text}


def same(a, b) -> bool:
    """JSON values equal in type and value: 1 is not 1.0 nor true, -0.0 is not 0.0, key order is
    not compared."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def categorize(expected: dict, got: dict) -> str | None:
    """The category of the disagreement between two answers, or None when they agree. Text is
    compared without the grammar's whitespace (space, tab, CR, LF) at its two ends, as serving
    layers strip content; any other character there (NBSP, U+0085, \x1c) must match."""
    want, have = expected["calls"], got["calls"]
    if len(have) > len(want) and CALL_OPEN in expected["text"]:
        return "accepts-invalid"  # the expected text keeps a rejected block; the target made a call of it
    if [c["name"] for c in have] != [c["name"] for c in want]:
        return "calls"
    if not all(same(h["arguments"], w["arguments"]) for h, w in zip(have, want)):
        return "arguments"
    if got["text"].strip(GRAMMAR_WHITESPACE) != expected["text"].strip(GRAMMAR_WHITESPACE):
        return "text"
    return None
