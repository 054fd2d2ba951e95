"""The block jump: the rest of a call block taken in one step (an accelerator; switched off by
`GEMMA4_LARK_ACCELERATORS=0`, proven by tests/differential/test_stream_block_jump.py).

When a chunk holds the rest of an open block through its `<tool_call|>` and nothing in between
needs the scan (no marker but string delimiters, each opened where a key or a value begins and
closed), the scan takes it whole instead of stepping from delimiter to delimiter. Accept-only: a
rest it does not match is read by the scan as before, so what it takes is what the scan takes.
"""

from __future__ import annotations

import functools
import re

from gemma4_lark import marker_search, tokens
from gemma4_lark.grammar import whitespace
from gemma4_lark.possessive import POSSESSIVE

from ._states import CALL, table

__all__ = ["BLOCK_JUMP_MIN", "VALUE_STARTS", "after_value_start", "block_rest", "block_rest_end"]

# Inside a call block, outside its strings: what ends the block (the state table's markers of a
# block, less the string delimiter). Only `<tool_call|>` closes it properly.
CALL_ENDS = tuple(m for m in table().markers(CALL) if m != tokens.STRING_DELIMITER)
# What a string follows in a block (whitespace aside): where a key or a value begins.
VALUE_STARTS = frozenset("{[,:(=")


def _by_length(markers):
    return tuple(sorted(markers, key=len, reverse=True))


@functools.lru_cache(maxsize=2)
def block_rest(strict: bool) -> re.Pattern | None:
    """The rest of a call block, from where the scan stands in its structure to its `<tool_call|>`,
    when nothing in it needs the scan: no marker but string delimiters, each string opened where
    the scan opens one (`StreamMachine.opens_string`: after a value start, whitespace aside; strict, anywhere) and closed.
    A block the scan has in full is then taken in one step, not a step per delimiter; any other
    block (a stray delimiter, a marker that ends it unclosed, its end not yet here) fails to match
    at its first such place, and the scan reads it as before. Made from the scan table's markers.

    Possessive and atomic (Python 3.11 and later; None before, where the scan reads every block): a
    match that fails gives nothing back, so it costs one pass over what it read. A backtracking
    form took 30 times as long to fail on a 20 KB string as to match it."""
    if not POSSESSIVE:
        return None

    def others(markers):  # what follows a `<` that starts none of `markers`
        return "(?!" + "|".join(re.escape(m[1:]) for m in _by_length(markers)) + ")"

    def run(markers):  # characters that start none of `markers`, `[^<]` taken in one loop
        return "[^<]*+(?:<" + others(markers) + "[^<]*+)*+"

    call_markers = CALL_ENDS + (tokens.STRING_DELIMITER,)
    delimiter = re.escape(tokens.STRING_DELIMITER)
    if strict:
        opener = run(call_markers) + delimiter
    else:  # the structure, then a delimiter after a value start and at most 4 blanks (more: the scan's)
        starts = "[" + re.escape("".join(sorted(VALUE_STARTS))) + "]"
        blank = f"[{_BLANKS}]"
        after_start = "|".join(f"(?<={starts}{blank * count})" for count in range(_BLANKS_BEFORE_STRING + 1))
        opener = f"{run(call_markers)}(?:{after_start}){delimiter}"
    # not strict, a string holding `<|tool_call>` is the scan's: it notes the opener (the model's next
    # call, should the block fail: docs/leniency.md#unclosed-strings)
    inside = run((tokens.STRING_DELIMITER,) if strict else (tokens.STRING_DELIMITER, tokens.TOOL_CALL_OPEN))
    return re.compile(f"(?:{opener}{inside}{delimiter})*+{run(call_markers)}" + re.escape(tokens.TOOL_CALL_CLOSE))


_OTHER_CALL_ENDS = tuple(m for m in CALL_ENDS if m != tokens.TOOL_CALL_CLOSE)
_BLANKS = whitespace()
_BLANKS_BEFORE_STRING = 4  # what `block_rest` reads back over, after a value start


def block_rest_end(pattern: re.Pattern, strict: bool, data: str, i: int) -> tuple[int, list[int] | None]:
    """Where `pattern` (`block_rest(strict)`) ends its match at data[i], -1 where it fails; and
    where the delimiters between are, when they were found on the way (else None).

    The same end, found faster on a long rest, where the regex engine steps through every
    character of the strings (about 0.5 ns each): the `<`s one by one, found by memchr, while
    that is ahead (marker_search.ahead); then the pattern, from the last place in the structure.
    The delimiters found so are what the block's decoders would look for again: they are handed
    on. tests/differential/test_stream_block_jump.py checks both ways give the same end on random blocks."""
    n = len(data)
    if n - i < marker_search.SHORT:
        found = pattern.match(data, i)
        return (found.end() if found is not None else -1), None
    seek = data.find
    at_marker = data.startswith
    delimiter, closer = tokens.STRING_DELIMITER, tokens.TOOL_CALL_CLOSE
    delimiters: list[int] = []
    inside = False
    step = marker_search.STEP
    budget = marker_search.FREE_STEPS * step  # marker_search.ahead, inlined
    at = seek("<", i)
    while at != -1:
        budget -= step
        if budget < i - at:
            break
        if at_marker(delimiter, at):
            if not inside and not strict and not after_value_start(data, at):
                return -1, None
            inside = not inside
            delimiters.append(at)
            at = seek("<", at + len(delimiter))
            continue
        if not inside:
            if at_marker(closer, at):
                return at + len(closer), delimiters
            if any(at_marker(marker, at) for marker in _OTHER_CALL_ENDS):
                return -1, None
        elif not strict and at_marker(tokens.TOOL_CALL_OPEN, at):
            return -1, None  # (the pattern's: an opener in a string is the scan's to note)
        at = seek("<", at + 1)
    else:
        return -1, None  # no `<` left: no closer
    place = at  # nothing between the last delimiter and this `<` is a marker
    if inside:  # the rest of this string, then the pattern from the structure after it
        end = seek(delimiter, at)
        if end == -1 or not strict and data.find(tokens.TOOL_CALL_OPEN, at, end) != -1:
            return -1, None
        place = end + len(delimiter)
    found = pattern.match(data, place)
    return (found.end() if found is not None else -1), None


def after_value_start(data: str, at: int) -> bool:
    """Whether the delimiter at data[at] follows a value start, with at most
    _BLANKS_BEFORE_STRING blanks between: `block_rest`'s look-behind."""
    k = at - 1
    while k >= 0 and at - k <= _BLANKS_BEFORE_STRING and data[k] in _BLANKS:
        k -= 1
    return k >= 0 and data[k] in VALUE_STARTS


# A block's rest is looked for in one step only when this much of the chunk is left: a stream of
# small deltas gains nothing from it (its blocks arrive a piece at a time).
BLOCK_JUMP_MIN = 32
