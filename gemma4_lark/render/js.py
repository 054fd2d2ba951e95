"""JavaScript's text for numbers and JSON, for the OMP profile (OMP is TypeScript).

`String(number)` differs from Python's `str`: `1.0` is `1`, `1e21` is `1e+21`, `1e20` is
`100000000000000000000`, `1e-7` is `1e-7`. The digits are the same shortest round-trip digits Python's
`repr` finds; only the layout differs (ECMAScript Number::toString).
"""

from __future__ import annotations

import json
import math


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
    """`JSON.parse(text)`: like json.loads, but NaN, Infinity and -Infinity are not JSON."""
    return json.loads(text, parse_constant=_reject_constant)


def _json_number(value) -> str:
    text = number(value)
    return "null" if text in ("NaN", "Infinity", "-Infinity") else text  # as JSON.stringify does


def _json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def dumps(value) -> str:
    """`JSON.stringify(value)`: compact, keys in insertion order, JavaScript numbers."""
    from .values import ValueWriter  # the one serializer, configured for JSON

    return ValueWriter(number=_json_number, key=_json_string, string=_json_string, unsafe="allow").write(value)
