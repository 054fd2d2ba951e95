"""The lexemes a printed grammar offers where (for the greedy-lexing check, `_greedy`): with some
rules folded into one lexeme each and some literals written piece by piece, the sets of lexemes
that may start at one point, each with what may come right after it there."""

from __future__ import annotations

import functools
from typing import Callable

from ._analysis import has_special, reachable, refs, strong_components
from .ir import CharClass, Choice, Expr, Grammar, Literal, Ref, Repeat, Seq, Special

Unit = tuple  # ("lit", text) | ("cls", chars) | ("term", rule) | ("re", expr) | ("sp", token)


@functools.lru_cache(maxsize=4096)  # asked once per lexeme per point: bounded, tools come from clients
def literal_pieces(text: str) -> tuple[str, ...]:
    """A literal as its separators one by one and the runs of word characters between them."""
    pieces: list[str] = []
    for ch in text:
        if pieces and (ch.isalnum() or ch == "_") and (pieces[-1][-1].isalnum() or pieces[-1][-1] == "_"):
            pieces[-1] += ch
        else:
            pieces.append(ch)
    return tuple(pieces)


class Lexemes:
    """The lexemes the printed grammar has where, with `folded` rules as one lexeme each and
    the literals in `split` written piece by piece: `siblings`, the sets of lexemes that may
    start at one point, each with the lexemes that may come right after it there."""

    def __init__(self, grammar: Grammar, folded: frozenset[str], split: frozenset[str]):
        self.grammar, self.folded, self.split = grammar, folded, split
        self.first: dict[str, tuple[frozenset, bool]] = {}
        self.rule_starts: dict[str, frozenset] = {}
        self.siblings: dict[frozenset, frozenset] = {}  # each set of siblings: its lexemes
        self._inline: dict[int, bool] = {}  # by id: hashing a frozen expression walks all of it
        self._first_known: dict[int, tuple] | None = None
        rules = [n for n in reachable(grammar) if n not in folded]
        edges = {n: [r for r in refs(grammar.rules[n]) if r not in folded] for n in rules}
        components = strong_components(edges)
        cyclic = [len(c) > 1 or c[0] in edges[c[0]] for c in components]
        # each pass in the order of the components (callees first, or callers first), swept again
        # inside a cycle until nothing changes (the sets only grow, so it ends): linear in the
        # grammar however long its chains of rules, no recursion
        in_order = list(zip(components, cyclic))
        follow_units: dict[str, frozenset] = {n: frozenset() for n in rules}
        self.follow: dict[str, frozenset] = {n: frozenset() for n in rules}

        def first(name: str) -> None:
            self.first[name] = self.first_of(grammar.rules[name])

        def rule_follow_units(name: str) -> None:  # the lexemes that may follow each rule
            self._follow_units(grammar.rules[name], follow_units[name], follow_units)

        def rule_starts(name: str) -> None:
            self.rule_starts[name] = self.starts(grammar.rules[name], follow_units[name])

        def rule_follow(name: str) -> None:  # the same with (lexeme, lexemes after it) pairs
            self.walk(grammar.rules[name], self.follow[name], _units(self.follow[name]), record=False)

        for component, again in in_order:
            _until_stable(component, again, self.first, first)
        # the rules' first lexemes are final: an expression's are too, and asked for at every
        # point of the walks below (by id, as `_inline`)
        self._first_known = {}
        for component, again in reversed(in_order):
            _until_stable(component, again, follow_units, rule_follow_units)
        for component, again in in_order:
            _until_stable(component, again, self.rule_starts, rule_starts)
        for component, again in reversed(in_order):
            _until_stable(component, again, self.follow, rule_follow)
        for name in rules:
            self.walk(grammar.rules[name], self.follow[name], _units(self.follow[name]), record=True)

    def inline(self, e: Repeat) -> bool:
        known = self._inline.get(id(e))
        if known is None:
            known = self._inline[id(e)] = _inline(e)
        return known

    def units(self, e: Expr) -> list:
        if isinstance(e, Literal):
            if not e.text:
                return []
            return [("lit", p) for p in literal_pieces(e.text)] if e.text in self.split else [("lit", e.text)]
        if isinstance(e, CharClass):
            return [("cls", e.chars)]
        if isinstance(e, Special):
            return [("sp", e.token)]
        return []

    def first_of(self, e: Expr) -> tuple[frozenset, bool]:
        """The lexemes `e` may start with, and whether it may be empty."""
        known = self._first_known
        if known is not None:
            found = known.get(id(e))
            if found is None:
                found = known[id(e)] = (self._first_of(e), e)  # holding `e`: its id stays its own
            return found[0]
        return self._first_of(e)

    def _first_of(self, e: Expr) -> tuple[frozenset, bool]:
        if isinstance(e, (Literal, CharClass, Special)):
            units = self.units(e)
            return (frozenset(units[:1]), not units)
        if isinstance(e, Ref):
            if e.name in self.folded:
                return frozenset({("term", e.name)}), False
            return self.first.get(e.name, (frozenset(), False))
        if isinstance(e, Seq):
            out: set = set()
            for item in e.items:
                first, empty = self.first_of(item)
                out |= first
                if not empty:
                    return frozenset(out), False
            return frozenset(out), True
        if isinstance(e, Choice):
            parts = [self.first_of(o) for o in e.options]
            return frozenset().union(*(p[0] for p in parts)), any(p[1] for p in parts)
        if isinstance(e, Repeat):
            if self.inline(e):
                return frozenset({("re", e)}), e.min == 0
            first, empty = self.first_of(e.item)
            return first, empty or e.min == 0
        raise TypeError(f"not an IR expression: {e!r}")

    def starts(self, e: Expr, after: frozenset) -> frozenset:
        """The lexemes `e` may start with, each paired with what may come right after it, when
        the lexemes `after` follow `e`."""
        if isinstance(e, (Literal, CharClass, Special)):
            units = self.units(e)
            return frozenset({(units[0], frozenset(units[1:2]) if len(units) > 1 else after)}) if units else frozenset()
        if isinstance(e, Ref):
            if e.name in self.folded:
                return frozenset({(("term", e.name), after)})
            return self.rule_starts.get(e.name, frozenset())
        if isinstance(e, Seq):
            out: set = set()
            for i, item in enumerate(e.items):
                out |= self.starts(item, self._after(e.items[i + 1:], after))
                if not self.first_of(item)[1]:
                    break
            return frozenset(out)
        if isinstance(e, Choice):
            return frozenset().union(*(self.starts(o, after) for o in e.options))
        if isinstance(e, Repeat):
            if self.inline(e):
                return frozenset({(("re", e), after)})
            again = self.first_of(e.item)[0] if e.max is None or e.max > 1 else frozenset()
            return self.starts(e.item, after | again)
        raise TypeError(f"not an IR expression: {e!r}")

    def _follow_units(self, e: Expr, then: frozenset, follow: dict) -> None:
        """Add what may follow each rule `e` refers to, when `then` follows `e`."""
        if isinstance(e, Ref):
            if e.name not in self.folded:
                follow[e.name] = follow[e.name] | then
        elif isinstance(e, Seq):
            rest = then
            for item in reversed(e.items):
                self._follow_units(item, rest, follow)
                first, empty = self.first_of(item)
                rest = first | rest if empty else first
        elif isinstance(e, Choice):
            for option in e.options:
                self._follow_units(option, then, follow)
        elif isinstance(e, Repeat) and not self.inline(e):
            again = self.first_of(e.item)[0] if e.max is None or e.max > 1 else frozenset()
            self._follow_units(e.item, then | again, follow)

    def _after(self, items, after: frozenset) -> frozenset:
        out: set = set()
        for item in items:
            first, empty = self.first_of(item)
            out |= first
            if not empty:
                return frozenset(out)
        return frozenset(out) | after

    def walk(self, e: Expr, then: frozenset, then_units: frozenset, *, record: bool) -> None:
        """Visit `e`, followed by `then` ((lexeme, what follows it) pairs; `then_units`, their
        lexemes): gather the follow sets of the rules it refers to (first pass), or the sets of
        sibling lexemes (record). The lexemes of a set travel beside it, so that no step walks a
        set in Python: an object of n optional members has n sets of up to n lexemes."""
        first, empty = self.first_of(e)
        if record:
            here = self.starts(e, then_units)
            units = first | then_units if empty else first
            if empty:
                here |= then
            if len(units) > 1:
                self.siblings[here] = units
        if isinstance(e, Ref):
            if e.name not in self.folded and not record:
                self.follow[e.name] = self.follow[e.name] | then
        elif isinstance(e, Seq):
            rest, rest_units = then, then_units
            for item in reversed(e.items):
                self.walk(item, rest, rest_units, record=record)
                here = self.starts(item, rest_units)
                first, empty = self.first_of(item)
                rest, rest_units = (here | rest, first | rest_units) if empty else (here, first)
        elif isinstance(e, Choice):
            for option in e.options:
                self.walk(option, then, then_units, record=record)
        elif isinstance(e, Repeat) and not self.inline(e):
            if e.max is None or e.max > 1:
                then_units = then_units | self.first_of(e.item)[0]
                then = then | self.starts(e.item, then_units)
            self.walk(e.item, then, then_units, record=record)


def _until_stable(component: list[str], cyclic: bool, state: dict, sweep: Callable[[str], None]) -> None:
    """Sweep the rules of `component` once, or, in a cycle, until what `state` holds for them
    stops changing."""
    while True:
        before = [state.get(n) for n in component]
        for name in component:
            sweep(name)
        if not cyclic or [state.get(n) for n in component] == before:
            return


def _units(pairs: frozenset) -> frozenset:
    return frozenset(u for u, _ in pairs)


def _inline(e: Repeat) -> bool:
    """A repetition the Lark printers write as one lexeme (see `dialects._LarkPrinter.expr`)."""
    return not any(True for _ in refs(e.item)) and not has_special(e.item)
