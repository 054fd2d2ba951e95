"""The bare-call guess: a block whose `<|tool_call>` a tokenizer stripped (`call:NAME{...}`).

Not strict and reading markers by text, at the start of the output or right after a thought,
`call:NAME{` opens a bare block (docs/leniency.md#bare-calls); with tools declared, so does a
declared tool's `call:NAME{` at the start of a line of prose (`scan_prose` finds the lines), whose
block must then be closed by a real `<tool_call|>` (docs/leniency.md#bare-calls-after-prose);
anywhere else `call:` is prose. The head is decided within MAX_HEAD characters, the same whatever
the chunking; the block ends at the `}` that closes its object (braces counted outside its
strings), or as any block does.
"""

from __future__ import annotations

import re

from gemma4_lark import tokens
from gemma4_lark.grammar import terminal_pattern, whitespace

from ._block import MAX_HEAD
from ._markers import match

__all__ = ["bare_head", "scan_bare", "scan_prose"]

_BLANKS = whitespace()
_NAME = terminal_pattern("NAME")
# What ends the head of a bare call: its arguments' `{` (the grammar's form, the only one that opens
# a bare block: `call:x(` is too common in prose), or a `(` or `<` (no name holds one).
_BARE_HEAD_END = re.compile(r"[{(<]")
# In a bare block outside strings: the braces that end it (at the `}` matching its first `{`), and
# the `<` that may start a marker.
_BARE_SCAN = re.compile(r"[{}<]")

def bare_head(data: str, k: int, final: bool, declared=None) -> str | None:
    """At data[k], where a bare call may start: "open" when `call:NAME{` is there, "hold" when more
    input is needed to tell, None when it is not a call. `declared` (a line of prose): only a call
    of one of these tools' names opens. The decision reads at most MAX_HEAD characters, the same
    whatever the chunking."""
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
    if declared is not None and name not in declared:
        return None
    return "open" if _NAME.fullmatch(name) else None


def scan_prose(data: str, i: int, final: bool, scan: tuple):
    """In prose read line by line (tools declared), from data[i]: (j, marker or "hold" or None,
    line). `line`: data[j - 1] is a newline and no marker came before it; else j is where the
    marker is (or len(data)). `scan`: the prose state's markers (`StateTable.scan`)."""
    by_second, prefixes, longest = scan
    n = len(data)
    newline = data.find("\n", i)
    limit = n if newline < 0 else newline
    find = data.find
    j = find("<", i, limit)
    while j != -1:
        if j == n - 1 or data[j + 1] in by_second:
            marker = match(data, j, by_second, prefixes, longest, final)
            if marker is not None:
                return j, marker, False
        j = find("<", j + 1, limit)
    if newline >= 0:
        return newline + 1, None, True
    return n, None, False


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
