"""Renderers: Python values and conversations into Gemma 4 text.

`omp` (OMP's dialect) and `official` (the July 2026 chat template), both exact to the byte;
`values` (the value language); `safety` (the `unsafe` policy); `shapes` (the message and tool
shapes they take, `ShapeError`); `demote_thinking`.
"""

from __future__ import annotations

from .. import tokens
from .safety import UnsafeContentError
from .shapes import ShapeError


def demote_thinking(text: str) -> str:
    """`<|channel>thought\\n...<channel|>` blocks as `<think>...</think>`, for structured messages
    where control tokens must not appear. An unclosed thought runs to the end of the text.
    Raises nothing for a str."""
    out = []
    i = 0
    opener = tokens.CHANNEL_OPEN + "thought"
    while True:
        start = text.find(opener, i)
        if start < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:start])
        body_start = start + len(opener)
        if text.startswith("\n", body_start):
            body_start += 1
        end = text.find(tokens.CHANNEL_CLOSE, body_start)
        body = text[body_start:] if end < 0 else text[body_start:end]
        out.append("<think>" + body + "</think>")
        if end < 0:
            return "".join(out)
        i = end + len(tokens.CHANNEL_CLOSE)


__all__ = ["ShapeError", "UnsafeContentError", "demote_thinking"]
