"""The label line of a channel opened inside a thought (not strict): `<|channel>response\\n`.

Gemma 4 has one channel, the thought; a model that writes `<|channel>LABEL\\n` inside it (vllm-mlx's
"realistic production output": `<|channel>thought\\n...<|channel>response\\nHello!`, no
`<channel|>`) opened another, and ended the thought (docs/leniency.md#a-channel-inside-a-thought).
The label is a name (the grammar's NAME) on the opener's line; the decision reads at most
MAX_LABEL characters after the opener, the same whatever the chunking.
"""

from __future__ import annotations

import re

from gemma4_lark import tokens
from gemma4_lark.grammar import terminal_pattern

__all__ = ["MAX_LABEL", "channel_label"]

MAX_LABEL = 64
_NAME = terminal_pattern("NAME")
_NAME_SO_FAR = re.compile(_NAME.pattern + "|")  # (empty too: nothing of the label yet)


def channel_label(data: str, k: int, final: bool) -> int | str | None:
    """At data[k], a `<|channel>` inside a thought: the end of its label line (after the newline)
    when a name and a newline follow the opener, "hold" when more input is needed to tell, None
    when no label line follows (the opener is stray markup, as strict mode has it)."""
    start = k + len(tokens.CHANNEL_OPEN)
    newline = data.find("\n", start, start + MAX_LABEL + 1)
    if newline >= 0:
        return newline + 1 if _NAME.fullmatch(data, start, newline) else None
    rest = len(data) - start
    if not final and rest <= MAX_LABEL and _NAME_SO_FAR.fullmatch(data, start):
        return "hold"
    return None
