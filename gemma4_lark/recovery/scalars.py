"""The lenient decoder's scalar words: which are numbers (read exactly) and which are literals.

Written without the grammar, as the whole decoder is (docs/spec/BARE_WORD.md says what a word is).
"""

from __future__ import annotations

__all__ = ["DIGITS", "LITERALS", "MAX_INT_DIGITS", "decimal_int", "looks_numeric", "read_number"]

DIGITS = frozenset("0123456789")
LITERALS = {"true": True, "false": False, "null": None, "None": None, "none": None}
# Integers are decoded exactly up to CPython's default limit for int/str conversion (so the value
# can be printed and JSON-encoded by whoever receives it); a longer one is refused with an error.
# The strict parser has the same bound, written there independently.
MAX_INT_DIGITS = 4300


def decimal_int(digits: str) -> int:
    """The exact int of a string of ASCII digits: halves converted separately, so no piece reaches
    int()'s digit limit (at least 640 wherever it is set)."""
    if len(digits) <= 600:
        return int(digits)
    low = len(digits) // 2
    return decimal_int(digits[:-low]) * 10 ** low + decimal_int(digits[-low:])


def read_number(text: str):
    """int or float when `text` is a complete decimal number, else None."""
    body = text[1:] if text[:1] == "-" else text
    if not body:
        return None
    if body.isascii() and body.isdigit():
        value = decimal_int(body)
        return -value if text[:1] == "-" else value
    mantissa, exponent = body, ""
    for mark in "eE":
        if mark in body:
            mantissa, _, exponent = body.partition(mark)
            break
    if exponent:
        digits = exponent[1:] if exponent[0] in "+-" else exponent
        if not (digits.isascii() and digits.isdigit()):
            return None
    elif body[-1:] in "eE":
        return None
    whole, dot, fraction = mantissa.partition(".")
    if not (whole or fraction) or not all(c in DIGITS for c in whole + fraction):
        return None
    if not dot and not exponent:
        return None
    value = float(text)
    return None if value in (float("inf"), float("-inf")) else value


def looks_numeric(text: str) -> bool:
    """Begins like a number (`[+-]?[0-9.]`: docs/spec/BARE_WORD.md)."""
    if text[:1] in DIGITS or text[:1] == ".":
        return True
    return text[:1] in ("+", "-") and len(text) > 1 and (text[1] in DIGITS or text[1] == ".")
