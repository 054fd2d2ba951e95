"""An engine-neutral grammar: what the constrained-decoding exports are built in before each
engine's printer writes it in its own dialect (llguidance's Lark, GBNF, xgrammar's EBNF, Lark).

Two producers build it: the translation of `grammar/gemma4.lark` (the format itself) and the
translation of the declared tools' JSON schemas (the arguments a tool accepts). Keeping them apart
from the printers means each dialect's quirks live in one place, and a schema never has to know
how an engine spells a special token.

Expressions are small frozen values; a `Grammar` names rules and says which one starts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Mapping, Union


@dataclass(frozen=True)
class Literal:
    """Plain text, matched byte for byte (never a Gemma marker: see `Special`)."""

    text: str


@dataclass(frozen=True)
class Special:
    """One of Gemma's markers (`<|tool_call>`, `<|"|>`, ...), which the tokenizer has as a single
    special token: printers write it the way their engine names a special token, never as bytes."""

    token: str


@dataclass(frozen=True)
class CharClass:
    """One character from a set, written as the inside of a regex class: `a-zA-Z0-9_`, or `^<`
    for its complement (any character, any non-ASCII one included, but these)."""

    chars: str


@dataclass(frozen=True)
class Ref:
    """Another rule, by name."""

    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Choice:
    options: tuple["Expr", ...]


@dataclass(frozen=True)
class Repeat:
    """`item` from `min` to `max` times (`max` None: no upper bound)."""

    item: "Expr"
    min: int = 0
    max: int | None = None


Expr = Union[Literal, Special, CharClass, Ref, Seq, Choice, Repeat]


@dataclass(frozen=True)
class Grammar:
    """Named rules and the rule that starts. Rule names are lowercase `[a-z][a-z0-9_]*`, valid in
    every dialect."""

    start: str
    rules: Mapping[str, Expr] = field(default_factory=dict)
    # Rules that spell the structure of a value (an object's or an array's punctuation, a
    # member's colon): a printer for an engine whose lexer is greedy keeps each of them a rule,
    # never one lexeme (docs/constrained-decoding.md, How they are made). The declared tools' rules
    # name them; the format's own grammar names none.
    structure: frozenset[str] = frozenset()
    # Rules whose lexemes stand apart by construction: each punctuation mark a lexeme of its own,
    # every other lexeme a scalar (a number, a key, a constant) that contains no mark and that a
    # mark or a marker follows, or a string's text between its delimiters. No lexeme of theirs
    # can run past another's end, so a greedy-lexer printer need not check them (the check is
    # above linear in an object's members). The declared tools' rules are such; the format's
    # own are not.
    marks_apart: frozenset[str] = frozenset()


def seq(*items: Expr) -> Expr:
    """A sequence, flattened; one item stands for itself."""
    flat: list[Expr] = []
    for item in items:
        flat.extend(item.items if isinstance(item, Seq) else (item,))
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def choice(*options: Expr) -> Expr:
    """An alternation, flattened; one option stands for itself."""
    flat: list[Expr] = []
    for option in options:
        flat.extend(option.options if isinstance(option, Choice) else (option,))
    return flat[0] if len(flat) == 1 else Choice(tuple(flat))


# --- character classes as code-point ranges ---------------------------------------------------------
# Producers and printers meet on one spelling of a `CharClass`: the inside of a regex class, with
# ranges `a-z`, a leading `^` for the complement, and the escapes `\xNN`, `\uNNNN`, `\UNNNNNNNN`,
# `\n`, `\r`, `\t` and `\` before any other character. Printers read it back as ranges so that each
# dialect escapes in its own way.

MAX_CODE_POINT = 0x10FFFF
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f", "v": "\v"}


@functools.lru_cache(maxsize=4096)  # the exports ask for each class many times; bounded: tools come from clients
def class_ranges(chars: str) -> tuple[tuple[int, int], ...]:
    """The code points of `CharClass(chars)`, as sorted, disjoint, non-adjacent (lo, hi) ranges.

    Raises `ValueError` for a malformed class (an unfinished escape or range, a reversed range).
    """
    negated = chars.startswith("^")
    pos = 1 if negated else 0
    singles: list[int] = []

    def one(at: int) -> tuple[int, int]:
        if at >= len(chars):
            raise ValueError(f"class [{chars}] ends inside a range")
        c = chars[at]
        if c != "\\":
            return ord(c), at + 1
        if at + 1 >= len(chars):
            raise ValueError(f"class [{chars}] ends with a lone backslash")
        e = chars[at + 1]
        width = {"x": 2, "u": 4, "U": 8}.get(e)
        if width:
            digits = chars[at + 2:at + 2 + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"class [{chars}]: bad escape \\{e}{digits}")
            return int(digits, 16), at + 2 + width
        return ord(_SIMPLE_ESCAPES.get(e, e)), at + 2

    ranges = []
    while pos < len(chars):
        lo, pos = one(pos)
        if pos + 1 < len(chars) and chars[pos] == "-":
            hi, pos = one(pos + 1)
            if hi < lo:
                raise ValueError(f"class [{chars}]: reversed range")
            ranges.append((lo, hi))
        else:
            singles.append(lo)
    ranges.extend((c, c) for c in singles)
    merged = merge_ranges(ranges)
    return complement_ranges(merged) if negated else merged


def merge_ranges(ranges) -> tuple[tuple[int, int], ...]:
    """Sorted, disjoint, non-adjacent ranges covering the same code points."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def complement_ranges(ranges) -> tuple[tuple[int, int], ...]:
    """Every code point not in `ranges` (which must be merged)."""
    out = []
    at = 0
    for lo, hi in ranges:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= MAX_CODE_POINT:
        out.append((at, MAX_CODE_POINT))
    return tuple(out)


def escape_code_point(c: int) -> str:
    """`c` as an escape every dialect reads alike (`\\xNN`, `\\uNNNN`, `\\UNNNNNNNN`)."""
    if c < 0x100:
        return f"\\x{c:02x}"
    if c < 0x10000:
        return f"\\u{c:04x}"
    return f"\\U{c:08x}"


def _class_item(c: int) -> str:
    ch = chr(c)
    return ch if ch.isascii() and (ch.isalnum() or ch in " _") else escape_code_point(c)


def class_text(ranges, *, item=_class_item) -> str:
    """The inside of a class matching exactly `ranges`: the complement (`^...`) when that is
    shorter to write, so that "anything but `<`" stays `^<` and never spells out Unicode."""
    ranges = merge_ranges(ranges)

    def spell(rs):
        return "".join(item(lo) if lo == hi else item(lo) + ("" if hi == lo + 1 else "-") + item(hi)
                       for lo, hi in rs)

    direct, inverse = spell(ranges), "^" + spell(complement_ranges(ranges))
    if not ranges:
        raise ValueError("an empty character class matches nothing")
    return inverse if len(inverse) < len(direct) or (ranges and ranges[-1][1] == MAX_CODE_POINT) else direct


def char_class(ranges) -> CharClass:
    """The CharClass of a set of code-point ranges."""
    return CharClass(class_text(ranges))
