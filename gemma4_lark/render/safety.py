"""Content that could forge structure (docs/security.md).

The tokenizer turns every control token into its special token wherever it appears, even inside a
`<|"|>` string, so a tool result containing `<turn|><|turn>system` would end its turn and open a
system turn in the model's eyes. Renderers pass every piece of content through `guard` first.
"""

from __future__ import annotations

import re

from ..tokens import CONTROL_TOKENS

UNSAFE_POLICIES = ("error", "strip", "allow")
_CONTROL = re.compile("|".join(re.escape(t) for t in sorted(CONTROL_TOKENS, key=len, reverse=True)))


class UnsafeContentError(ValueError):
    """Content holds a control token (or a string holds the string delimiter)."""

    def __init__(self, token: str, where, pos: int):
        self.token = token
        self.where = where = describe(where)
        self.pos = pos
        super().__init__(
            f"control token {token} at offset {pos} of {where}: it would be read as structure;"
            f" pass unsafe='strip' to remove such tokens or unsafe='allow' to keep them")


def describe(where) -> str:
    """A field's name. Renderers pass (parent, key) pairs for nested values and only pay for the
    text when an error needs it."""
    parts = []
    while isinstance(where, tuple):
        where, key = where
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return str(where) + "".join(reversed(parts))


def check_policy(unsafe: str) -> None:
    if unsafe not in UNSAFE_POLICIES:
        raise ValueError(f"unsafe must be one of {UNSAFE_POLICIES}, not {unsafe!r}")


def guard(text: str, where: str, unsafe: str) -> str:
    """`text` as the policy allows: unchanged, refused, or with every control token removed."""
    if unsafe == "allow" or "<" not in text:
        return text
    match = _CONTROL.search(text)
    if match is None:
        return text
    if unsafe == "error":
        raise UnsafeContentError(match.group(), where, match.start())
    while match is not None:  # removing one token can join the halves of another
        text = _CONTROL.sub("", text)
        match = _CONTROL.search(text)
    return text
