"""The bare-call guess: a block whose `<|tool_call>` a tokenizer stripped (`call:NAME{...}`).

Not strict and reading markers by text, at the start of the output or right after a thought,
`call:NAME{` opens a bare block (docs/leniency.md#bare-calls); anywhere else `call:` is prose. The
head is decided within MAX_HEAD characters, the same whatever the chunking; the block ends at the
`}` that closes its object (braces counted outside its strings), or as any block does.
"""

from __future__ import annotations

import re

from gemma4_lark import tokens
from gemma4_lark.grammar import terminal_pattern, whitespace

from ._block import MAX_HEAD
from ._markers import match

__all__ = ["bare_head", "scan_bare"]

_BLANKS = whitespace()
_NAME = terminal_pattern("NAME")
# What ends the head of a bare call: its arguments' `{` (the grammar's form, the only one that opens
# a bare block: `call:x(` is too common in prose), or a `(` or `<` (no name holds one).
_BARE_HEAD_END = re.compile(r"[{(<]")
# In a bare block outside strings: the braces that end it (at the `}` matching its first `{`), and
# the `<` that may start a marker.
_BARE_SCAN = re.compile(r"[{}<]")

def bare_head(data: str, k: int, final: bool) -> str | None:
    """At data[k], where a bare call may start: "open" when `call:NAME{` is there, "hold" when more
    input is needed to tell, None when it is not a call. The decision reads at most MAX_HEAD
    characters, the same whatever the chunking."""
    keyword = tokens.CALL_KEYWORD
    n = len(data)
    if not data.startswith(keyword, k):
        # (only a rest shorter than the keyword can be its start: no copy of a long rest)
        return "hold" if not final and n - k < len(keyword) and keyword.startswith(data[k:]) else None
    limit = min(n, k + MAX_HEAD)
    found = _BARE_HEAD_END.search(data, k + len(keyword), limit)
    if found is None:
        return "hold" if not final and limit == n and n - k < MAX_HEAD else None
    if found.group() != "{":
        return None
    name = data[k + len(keyword):found.start()].strip(_BLANKS)
    return "open" if _NAME.fullmatch(name) else None


def scan_bare(block, data: str, i: int, final: bool, scan: tuple):
    """In the bare `block` outside strings, from data[i]: (j, marker or "hold" or None, closing).
    `closing`: data[j - 1] is the `}` that closes the block's object; else j is where the
    marker is (or len(data)). Counts the braces before j (each character read once). `scan`:
    the bare-call state's markers (`StateTable.scan`)."""
    by_second, prefixes, longest = scan
    n = len(data)
    search = _BARE_SCAN.search
    depth = block.depth
    pos = i
    while True:
        found = search(data, pos)
        if found is None:
            block.depth = depth
            return n, None, False
        k = found.start()
        char = data[k]
        if char == "<":
            if k == n - 1 or data[k + 1] in by_second:
                marker = match(data, k, by_second, prefixes, longest, final)
                if marker is not None:
                    block.depth = depth
                    return k, marker, False
        elif char == "{":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                block.depth = 0
                return k + 1, None, True
        pos = k + 1
