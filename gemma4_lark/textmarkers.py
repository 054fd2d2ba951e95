"""Control tokens that are text: a block read by token id (docs/streaming.md#token-ids) may hold a
marker that the model spelled with ordinary tokens. Such a spelling is text, never markup; the
decoders read text only, so while they read the block, the `<` of each such spelling is replaced
by a character the block does not hold (the mask), and the mask is turned back into `<` in what
they return. The replacement keeps every length, so every position is one in the block.
"""

from __future__ import annotations

import re
from typing import Any, Collection

from .grammar import control_pattern
from .schema.lexeme import Scalar

_CONTROL = control_pattern()

__all__ = ["mask_for", "respelled", "spelled_markers", "spelled_out"]


def spelled_markers(raw: str, base: int, marks: Collection[int]) -> list[int]:
    """Offsets in `raw` (a block from stream offset `base`) of the control tokens written there
    with ordinary tokens: a `<` that starts a control token's text but is not at one of `marks`
    (where a marker's special token starts)."""
    found = []
    at = raw.find("<")
    while at != -1:
        if base + at not in marks and _CONTROL.match(raw, at):
            found.append(at)
        at = raw.find("<", at + 1)
    return found


# The private-use characters (the BMP's area and planes 15 and 16): text to every decoder, and
# what a mask is taken from.
_PRIVATE_USE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_PRIVATE_USE_CHARACTER = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _PRIVATE_USE) + "]")


def mask_for(raw: str, spelled: Collection[int]) -> str | None:
    """A character `raw` does not hold, to stand for the `<` of each spelling at `spelled` while the
    decoders read it; "" when there is none to stand for; None when `raw` holds every private-use
    character (137,468 of them), so that no mask can be told from the block's own text: the caller
    then reads no call from it (a spelled marker is never taken for markup). Linear: one pass over
    `raw` for the private-use characters it holds, then at most one look-up more than it holds."""
    if not spelled:
        return ""
    held = set(_PRIVATE_USE_CHARACTER.findall(raw))
    for first, last in _PRIVATE_USE:
        for code in range(first, last + 1):
            if chr(code) not in held:
                return chr(code)
    return None


def spelled_out(raw: str, spelled: Collection[int], mask: str) -> str:
    """`raw` with the `<` at each offset of `spelled` replaced by `mask`: the same length."""
    out = []
    done = 0
    for at in sorted(spelled):
        out.append(raw[done:at])
        out.append(mask)
        done = at + 1
    out.append(raw[done:])
    return "".join(out)


def respelled(value: Any, mask: str) -> Any:
    """`value` (decoded arguments: dicts, lists, strings, `Scalar`s) with `mask` back to `<`.
    An explicit stack: arguments nest as deep as `max_depth`."""
    if isinstance(value, str):
        return value.replace(mask, "<")
    if not isinstance(value, (dict, list, Scalar)):
        return value
    root: list = [value]
    stack = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = item.replace(mask, "<")
        elif isinstance(item, Scalar):
            if isinstance(item.value, str):
                item.value = item.value.replace(mask, "<")
            if item.lexeme is not None:
                item.lexeme = item.lexeme.replace(mask, "<")
        elif isinstance(item, list):
            stack.extend((item, k) for k in range(len(item)))
        elif isinstance(item, dict):
            fixed = {(k.replace(mask, "<") if isinstance(k, str) else k): v for k, v in item.items()}
            holder[key] = fixed
            stack.extend((fixed, k) for k in fixed)
    return root[0]
