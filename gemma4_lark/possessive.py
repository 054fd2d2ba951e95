"""The lexer's form of a grammar pattern: a lazy run up to a literal, rewritten to match possessively.

The grammar writes STRING as `<|"|>.*?<|"|>`: a lazy repetition of single characters, the one kind
of repetition Python's regex engine runs in constant memory on every version (a repeated group keeps
backtracking state per repetition). But a lazy dot tries the rest of the pattern after every
character: about 13 times slower than scanning a run of `[^<]` in C. From Python 3.11, `re` has
possessive quantifiers, which keep no backtracking state either; so there the lexer matches
`X.*?L` (DOTALL, `L` a literal string ending the pattern) as

    X[^c]*+(?:(?!L)c[^c]*+)*+L        (c the first character of L)

which ends at the same place or fails where the lazy form fails: from wherever X ends, both stop at
the first occurrence of L (the possessive loop takes exactly the characters that do not start one,
and gives none back, as the lazy one would never have taken one past it). Backtracking into X is
unchanged. The rewrite is derived from the pattern's own parse, not written per terminal; any
pattern it cannot prove of that shape is left as it is, and on Python 3.10 every pattern is.
tests/unit/test_grammar.py checks the rewritten patterns match exactly as the grammar's do, from every
start, and in constant memory.
"""

from __future__ import annotations

import re
import sys

from ._compat import sre_parse

# Whether `re` has possessive quantifiers (and runs them without backtracking state).
POSSESSIVE = sys.version_info >= (3, 11)

_LAZY_DOT = ".*?"


def _items(pattern: str, flags: int):
    """The top-level items of `pattern` as comparable data, or None when it does not parse alone."""
    try:
        return [(op, repr(av)) for op, av in sre_parse.parse(pattern, flags)]
    except (re.error, RecursionError, OverflowError):
        return None


def lexer_pattern(value: str, flags=()) -> str:
    """The pattern the lexer compiles for a terminal whose grammar pattern is `value` with Lark's
    `flags` (a collection of letters such as "s"): `value` itself unless it ends in a lazy dot up
    to a literal under DOTALL and possessive quantifiers exist, then its possessive equivalent."""
    if not POSSESSIVE or "s" not in flags or set(flags) - {"s"}:
        return value
    at = value.rfind(_LAZY_DOT)
    if at < 0:
        return value
    prefix, tail = value[:at], value[at + len(_LAZY_DOT):]
    tail_items = _items(tail, re.S)
    prefix_items = _items(prefix, re.S)
    whole_items = _items(value, re.S)
    if not tail_items or prefix_items is None or whole_items is None:
        return value
    if any(op is not sre_parse.LITERAL for op, _ in tail_items):
        return value
    # The lazy dot must stand at the top level between the two (not inside a group or a branch,
    # not an escaped `\.` followed by `*?`): the whole parses as prefix, `.*?`, tail.
    lazy = _items(_LAZY_DOT, re.S)
    if whole_items != prefix_items + lazy + tail_items:
        return value
    text = "".join(chr(int(av)) for _, av in tail_items)
    first = re.escape(text[0])
    run = f"[^{first}]*+"
    return f"{prefix}{run}(?:(?!{re.escape(text)}){first}{run})*+{re.escape(text)}"
