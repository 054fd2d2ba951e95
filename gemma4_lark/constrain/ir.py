"""An engine-neutral grammar: what the constrained-decoding exports are built in before each
engine's printer writes it in its own dialect (llguidance's Lark, GBNF, xgrammar's EBNF, Lark).

Two producers build it: the translation of `grammar/gemma4.lark` (the format itself) and the
translation of the declared tools' JSON schemas (the arguments a tool accepts). Keeping them apart
from the printers means each dialect's quirks live in one place, and a schema never has to know
how an engine spells a special token.

Expressions are small frozen values; a `Grammar` names rules and says which one starts.
"""

from __future__ import annotations

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
