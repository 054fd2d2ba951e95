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


def dumps(value) -> str:
    """`JSON.stringify(value)`: compact, keys in insertion order, JavaScript numbers."""
    out: list[str] = []
    stack: list = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item.text)
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, (int, float)):
            text = number(item)
            out.append("null" if text in ("NaN", "Infinity", "-Infinity") else text)
        elif isinstance(item, str):
            out.append(json.dumps(item, ensure_ascii=False))
        elif isinstance(item, dict):
            pending: list = [_Raw("}")]
            for i, (k, v) in enumerate(reversed(list(item.items()))):
                pending.append(v)
                pending.append(_Raw(("," if i < len(item) - 1 else "") + json.dumps(str(k), ensure_ascii=False) + ":"))
            pending.append(_Raw("{"))
            stack.extend(pending)
        elif isinstance(item, (list, tuple)):
            pending = [_Raw("]")]
            for i, v in enumerate(reversed(item)):
                pending.append(v)
                if i < len(item) - 1:
                    pending.append(_Raw(","))
            pending.append(_Raw("["))
            stack.extend(pending)
        else:
            raise TypeError(f"{type(item).__name__} is not JSON")
    return "".join(out)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text
