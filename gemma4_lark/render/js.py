"""JavaScript's text for numbers and JSON, for the OMP profile (OMP is TypeScript).

`String(number)` differs from Python's `str`: `1.0` is `1`, `1e21` is `1e+21`, `1e20` is
`100000000000000000000`, `1e-7` is `1e-7`. The digits are the same shortest round-trip digits Python's
`repr` finds; only the layout differs (ECMAScript Number::toString).
"""

from __future__ import annotations

import json
import math
import re
from json.decoder import scanstring
from json.scanner import NUMBER_RE


def number(value) -> str:
    """ECMAScript `String(value)` for an int or float."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # position of the decimal point relative to the first significant digit
    n = len(whole.lstrip("0")) if whole.strip("0") else -(len(fraction) - len(fraction.lstrip("0")))
    n += int(exponent or 0)
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str):
    """`JSON.parse(text)`: like json.loads, but NaN, Infinity and -Infinity are not JSON, and any
    depth parses (V8's JSON.parse is iterative). Raises `ValueError` when `text` is not JSON."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:  # json's C decoder recurses per level; the slow path does not
        return parse_iteratively(text)


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_CONSTANTS = {"null": None, "true": True, "false": False}


def parse_iteratively(text: str, unique_keys: bool = False):
    """json.loads with an explicit stack of open arrays and objects: the same values and the same
    errors (json's own string and number scanners), in linear time, at any depth. Every failure is
    a `json.JSONDecodeError` with its position; `unique_keys`: an object naming a key twice is one
    (json.loads keeps the last)."""
    ws = _WHITESPACE.match
    stack: list = []  # [container, key of the member being read (objects), where that key starts]
    i = ws(text).end()
    while True:
        # a value starts at i
        char = text[i:i + 1]
        if char == "{" or char == "[":
            i = ws(text, i + 1).end()
            if text.startswith("}" if char == "{" else "]", i):
                value, i = ({} if char == "{" else []), i + 1
            else:
                entry = [{}, None, i] if char == "{" else [[], None, i]
                if char == "{":
                    entry[1], i = _member_key(text, i)
                stack.append(entry)
                continue
        elif char == '"':
            value, i = scanstring(text, i + 1)
        else:
            number = NUMBER_RE.match(text, i)
            if number:
                integer, fraction, exponent = number.groups()
                try:
                    value = float(integer + (fraction or "") + (exponent or "")) if fraction or exponent else int(integer)
                except ValueError as error:  # more digits than int() converts (sys.get_int_max_str_digits)
                    raise json.JSONDecodeError(str(error), text, i) from None
                i = number.end()
            else:
                word = next((w for w in _CONSTANTS if text.startswith(w, i)), None)
                if word is None:
                    for constant in ("NaN", "Infinity", "-Infinity"):
                        if text.startswith(constant, i):
                            raise json.JSONDecodeError(f"{constant} is not JSON", text, i)
                    raise json.JSONDecodeError("Expecting value", text, i)
                value, i = _CONSTANTS[word], i + len(word)
        # the value is complete: it goes into the container open around it, and closes those that end
        while True:
            i = ws(text, i).end()
            if not stack:
                if i != len(text):
                    raise json.JSONDecodeError("Extra data", text, i)
                return value
            entry = stack[-1]
            container = entry[0]
            is_object = isinstance(container, dict)
            if is_object:
                if unique_keys and entry[1] in container:
                    raise json.JSONDecodeError(f"key {entry[1]!r} is given twice in one object", text, entry[2])
                container[entry[1]] = value
            else:
                container.append(value)
            if text.startswith(",", i):
                i = ws(text, i + 1).end()
                if is_object:
                    entry[2] = i
                    entry[1], i = _member_key(text, i)
                break
            if not text.startswith("}" if is_object else "]", i):
                raise json.JSONDecodeError("Expecting ',' delimiter", text, i)
            stack.pop()
            value, i = container, i + 1


def _member_key(text: str, i: int):
    """A member's key and `:` from i; where its value starts."""
    if not text.startswith('"', i):
        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
    key, i = scanstring(text, i + 1)
    i = _WHITESPACE.match(text, i).end()
    if not text.startswith(":", i):
        raise json.JSONDecodeError("Expecting ':' delimiter", text, i)
    return key, _WHITESPACE.match(text, i + 1).end()


def _json_number(value) -> str:
    text = number(value)
    return "null" if text in ("NaN", "Infinity", "-Infinity") else text  # as JSON.stringify does


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def dumps(value) -> str:
    """`JSON.stringify(value)`: compact, keys in insertion order, JavaScript numbers."""
    from .values import ValueWriter  # the one serializer, configured for JSON

    return ValueWriter(number=_json_number, key=_json_string, string=_json_string, unsafe="allow").write(value)
