"""Printers: an `ir.Grammar` in each engine's own grammar language.

- `llguidance`: llguidance's Lark dialect. Rules whose language is regular (no special token, no
  recursion) become terminals, so each is one lexeme of llguidance's lexer; special tokens are
  written by name, `<|tool_call>`, which llguidance resolves in the tokenizer.
- `lark`: portable Python Lark (Earley, dynamic lexer). Plain Lark has no tokenizer, so special
  tokens are their text.
- `gbnf`: llama.cpp's GBNF. Special tokens use its token syntax, `<|tool_call>` (the token whose
  text that is; llama.cpp refuses the grammar when the text is not one token of the vocabulary).
- `xgrammar`: xgrammar's EBNF (GBNF's syntax). It has no way to name a special token in a rule, so
  special tokens are their text there; see docs/constrained-decoding.md for what that asks of the
  tokenizer.

All printers write the same language; only lexing hints and spellings differ.
"""

from __future__ import annotations

import functools
import re
from typing import Callable

from .ir import (
    CharClass, Choice, Expr, Grammar, Literal, Ref, Repeat, Seq, Special, class_ranges, class_text,
    escape_code_point, merge_ranges,
)


# --- analysis ---------------------------------------------------------------------------------------
def refs(expr: Expr):
    """Every rule name `expr` refers to."""
    if isinstance(expr, Ref):
        yield expr.name
    elif isinstance(expr, (Seq, Choice)):
        for item in (expr.items if isinstance(expr, Seq) else expr.options):
            yield from refs(item)
    elif isinstance(expr, Repeat):
        yield from refs(expr.item)


def _has_special(expr: Expr) -> bool:
    if isinstance(expr, Special):
        return True
    if isinstance(expr, (Seq, Choice)):
        return any(_has_special(e) for e in (expr.items if isinstance(expr, Seq) else expr.options))
    if isinstance(expr, Repeat):
        return _has_special(expr.item)
    return False


def regular_rules(grammar: Grammar) -> frozenset[str]:
    """The rules whose language a regular expression can write: no special token, and no rule on
    any path of references from them refers back to itself (nor to a rule that is not regular).

    Linear in the size of the grammar: the strongly connected components of the references
    (Tarjan's, iterative), each verdict found once. A rule in a cycle is not regular; a rule
    outside one is regular when its body has no special token and every rule it refers to is."""
    missing = [n for body in grammar.rules.values() for n in refs(body) if n not in grammar.rules]
    if missing:
        raise ValueError(f"rule {missing[0]!r} is referred to but not defined")
    edges = {name: list(dict.fromkeys(refs(body))) for name, body in grammar.rules.items()}
    verdict: dict[str, bool] = {}
    for component in _components(edges):  # each after every component it reaches: children decided
        cyclic = len(component) > 1 or component[0] in edges[component[0]]
        for member in component:
            verdict[member] = (not cyclic and not _has_special(grammar.rules[member])
                               and all(verdict[t] for t in edges[member]))
    return frozenset(name for name in grammar.rules if verdict[name])


def reachable(grammar: Grammar) -> list[str]:
    """The rules the start rule reaches, start first, then in order of first reference."""
    order, seen = [], set()
    stack = [grammar.start]
    while stack:
        name = stack.pop(0)
        if name in seen:
            continue
        seen.add(name)
        order.append(name)
        stack.extend(n for n in refs(grammar.rules[name]) if n not in seen)
    return order


# --- greedy lexing (llguidance) ------------------------------------------------------------------
# llguidance's lexer is greedy: where two lexemes may start, it follows the longer as long as the
# text continues it, and never goes back. So a lexeme `,` beside a lexeme `,th:1` refuses `,ta:`:
# after `,t` only `,th:1` is alive, and `a` kills it. Folding a regular rule into one lexeme can
# create such a pair; `greedy_safe` finds them and undoes the folding, and splits a literal that
# holds a separator (`",th:"` as `"," "th" ":"`), until no lexeme can run past a sibling's end
# into text the grammar gives the sibling's follower.
_Unit = tuple  # ("lit", text) | ("cls", chars) | ("term", rule) | ("re", expr) | ("sp", token)


@functools.lru_cache(maxsize=4096)  # asked once per lexeme per point: bounded, tools come from clients
def _literal_pieces(text: str) -> tuple[str, ...]:
    """A literal as its separators one by one and the runs of word characters between them."""
    pieces: list[str] = []
    for ch in text:
        if pieces and (ch.isalnum() or ch == "_") and (pieces[-1][-1].isalnum() or pieces[-1][-1] == "_"):
            pieces[-1] += ch
        else:
            pieces.append(ch)
    return tuple(pieces)


class _Lexemes:
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
        components = _components(edges)
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
            return [("lit", p) for p in _literal_pieces(e.text)] if e.text in self.split else [("lit", e.text)]
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
    """A repetition the Lark printers write as one lexeme (see `_LarkPrinter.expr`)."""
    return not any(True for _ in refs(e.item)) and not _has_special(e.item)


def _components(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of `edges`, each after every component it reaches
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            name, i = work.pop()
            if i == 0:
                index[name] = low[name] = len(index)
                stack.append(name)
                on_stack.add(name)
            if i < len(edges[name]):
                work.append((name, i + 1))
                target = edges[name][i]
                if target not in index:
                    work.append((target, 0))
                continue
            for target in edges[name]:  # every child is done: take the lowest reachable index
                if target in on_stack:
                    low[name] = min(low[name], low[target])
            if low[name] == index[name]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == name:
                        break
                out.append(component)
    return out


# Repetitions bounded beyond this many are read as unbounded by the greedy check's automata.
_AUTOMATON_BOUND = 32


class _Automata:
    """Each lexeme as an automaton (over the grammar's rules), built when first asked for."""

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        self.trees: dict[str, tuple] = {}
        self.firsts: dict[str, tuple] = {}
        self.dfas: dict[tuple, tuple] = {}
        self.alphabets: dict[frozenset, object] = {}
        self.unit_classes: dict[_Unit, frozenset] = {}
        self.unit_firsts: dict[_Unit, tuple] = {}

    def tree(self, e: Expr) -> tuple:
        from . import regular
        if isinstance(e, Literal):
            return regular.literal(e.text)
        if isinstance(e, CharClass):
            return regular.rset(class_ranges(e.chars))
        if isinstance(e, Ref):
            if e.name not in self.trees:
                self.trees[e.name] = self.tree(self.grammar.rules[e.name])
            return self.trees[e.name]
        if isinstance(e, Seq):
            return regular.cat(*(self.tree(i) for i in e.items))
        if isinstance(e, Choice):
            return regular.alt(*(self.tree(o) for o in e.options))
        if isinstance(e, Repeat):
            # a long bound (a number's digits) read as none: the automata stay small, and a larger
            # language only makes the greedy check stricter (it may unfold a lexeme it need not)
            wide = e.max is not None and e.max > _AUTOMATON_BOUND
            return ("rep", self.tree(e.item), min(e.min, _AUTOMATON_BOUND), None if wide else e.max, False)
        raise ValueError("a special token is not text")

    def classes(self, unit: _Unit) -> frozenset:
        """The character classes of `unit`'s automaton (its alphabet's cuts)."""
        if unit not in self.unit_classes:
            found, stack = set(), [self.unit_tree(unit)]
            while stack:
                t = stack.pop()
                if t[0] == "set":
                    found.add(t[1])
                elif t[0] in ("cat", "alt"):
                    stack.extend(t[1])
                elif t[0] == "rep":
                    stack.append(t[1])
            self.unit_classes[unit] = frozenset(found)
        return self.unit_classes[unit]

    def dfa(self, unit: _Unit, classes: frozenset):
        """`unit`'s automaton over the alphabet that `classes` cut, and its live states: built
        once per alphabet (the units checked against one lexeme mostly share one)."""
        key = (unit, classes)
        if key not in self.dfas:
            from . import regular
            if classes not in self.alphabets:
                self.alphabets[classes] = regular.Alphabet(classes)
            # not minimized: the check walks products of reachable states, for which any DFA of
            # the language does; Moore's refinement costs a round per state of a long literal
            d = regular.to_dfa(self.unit_tree(unit), self.alphabets[classes], minimal=False)
            self.dfas[key] = (d, d.live())
        return self.dfas[key]

    def unit_tree(self, unit: _Unit) -> tuple:
        kind, value = unit
        if kind == "lit":
            return self.tree(Literal(value))
        if kind == "cls":
            return self.tree(CharClass(value))
        if kind == "term":
            return self.tree(Ref(value))
        return self.tree(Repeat(value.item, max(1, value.min), value.max))  # `re`: never empty

    def first_chars(self, unit: _Unit) -> tuple:
        """The ranges of the characters `unit`'s text may start with (none for a token);
        asked for each pair a lexeme is in, so kept per lexeme."""
        if unit not in self.unit_firsts:
            self.unit_firsts[unit] = self._first_chars(unit)
        return self.unit_firsts[unit]

    def _first_chars(self, unit: _Unit) -> tuple:
        kind, value = unit
        if kind == "sp":
            return ()
        if kind == "lit":
            return ((ord(value[0]), ord(value[0])),)
        if kind == "cls":
            return class_ranges(value)
        return self.starts(Ref(value) if kind == "term" else value.item)[0]

    def starts(self, e: Expr) -> tuple[tuple, bool]:
        """The ranges of the first characters of `e`'s texts, and whether it may be empty
        (memoized per rule: linear in the grammar, however often rules are shared)."""
        if isinstance(e, Literal):
            return (((ord(e.text[0]), ord(e.text[0])),) if e.text else ()), not e.text
        if isinstance(e, CharClass):
            return class_ranges(e.chars), False
        if isinstance(e, Ref):
            if e.name not in self.firsts:
                self.firsts[e.name] = self.starts(self.grammar.rules[e.name])
            return self.firsts[e.name]
        if isinstance(e, Seq):
            out: list = []
            for item in e.items:
                first, empty = self.starts(item)
                out.extend(first)
                if not empty:
                    return merge_ranges(out), False
            return merge_ranges(out), True
        if isinstance(e, Choice):
            parts = [self.starts(o) for o in e.options]
            return merge_ranges(r for p in parts for r in p[0]), any(p[1] for p in parts)
        if isinstance(e, Repeat):
            first, empty = self.starts(e.item)
            return first, empty or e.min == 0
        return (), False  # a special token: no text

    def reach(self, e: Expr, text: str, at: frozenset) -> frozenset:
        """How far into `text` a string of `e` can get from each position of `at`; len(text)
        once `text` is all read (what comes after it does not matter)."""
        end = len(text)
        if not at:
            return at
        if isinstance(e, Literal):
            out = set()
            for p in at:
                if p == end or text.startswith(e.text, p):
                    out.add(min(end, p + len(e.text)) if p != end else end)
                elif e.text.startswith(text[p:]):
                    out.add(end)
            return frozenset(out)
        if isinstance(e, CharClass):
            ranges = class_ranges(e.chars)
            return frozenset(end if p == end else p + 1 for p in at
                             if p == end or any(lo <= ord(text[p]) <= hi for lo, hi in ranges))
        if isinstance(e, Ref):
            return self.reach(self.grammar.rules[e.name], text, at)
        if isinstance(e, Seq):
            for item in e.items:
                at = self.reach(item, text, at)
            return at
        if isinstance(e, Choice):
            return frozenset().union(*(self.reach(o, text, at) for o in e.options))
        if isinstance(e, Repeat):
            # bounds read as the automata read them (`tree`): the two must agree, or a verdict
            # would depend on which of them happened to be asked first
            lo = min(e.min, _AUTOMATON_BOUND)
            hi = None if e.max is not None and e.max > _AUTOMATON_BOUND else e.max
            out = set(at) if lo == 0 else set()
            current, count = at, 0
            while current and (hi is None or count < hi) and count <= end + lo:
                current = self.reach(e.item, text, current)
                count += 1
                if count >= lo:
                    new = current - out
                    out |= current
                    if not new and count > lo:
                        break
            return frozenset(out)
        return frozenset()  # a special token: no text

    def runs_past(self, a: _Unit, b: _Unit, followers: frozenset, classes: frozenset) -> bool:
        """Whether the greedy lexer, offered `a` and `b` at one point, can take a text of `a`
        and the start of what follows it (a lexeme of `followers`) for the start of `b`, and
        then find neither `b` complete nor any way on: some text of `a`, then two or more
        characters that start a follower, of which all but the last keep `b` alive (and
        incomplete) and the last ends it while the follower goes on. `classes`: the character
        classes of every lexeme checked this round, so that each lexeme's automaton is built
        once, not once per partner (a lexeme of n keys against n keys: n^2)."""
        if a[0] == "sp" or b[0] == "sp":
            return False
        if (a[0] == "lit" and b[0] == "term" and (b, classes) not in self.dfas
                and len(a[1]) not in self.reach(Ref(b[1]), a[1], frozenset({0}))):
            return False  # no text of `b` starts with the literal: cheap to tell before `b` has an automaton
        for n in followers:
            if n[0] == "sp":
                continue
            (db, live_b), (dn, live_n) = (self.dfa(u, classes) for u in (b, n))
            alphabet = self.alphabets[classes]
            atoms = range(len(alphabet.atoms))
            # phase 1: `a` and `b` side by side until `a` is complete
            after_a = set()
            if a[0] == "lit":  # one path: `b` read along it (no automaton for each literal)
                qb = db.start
                for ch in a[1]:
                    qb = db.trans[qb][alphabet.atom_of(ord(ch))]
                    if qb not in live_b:
                        break
                else:
                    after_a.add(qb)
            else:
                da, live_a = self.dfa(a, classes)
                seen = {(da.start, db.start)}
                stack = [(da.start, db.start)]
                while stack:
                    qa, qb = stack.pop()
                    for x in atoms:
                        pair = (da.trans[qa][x], db.trans[qb][x])
                        if pair[0] in live_a and pair[1] in live_b and pair not in seen:
                            seen.add(pair)
                            stack.append(pair)
                            if pair[0] in da.accept:
                                after_a.add(pair[1])
            # phase 2: the follower and `b`; its first character leaves `a` complete behind it,
            # so `b` must survive it and die on a later one, incomplete before it
            seen2 = set()
            stack2 = []
            for qb in after_a:
                for x in atoms:
                    pair = (dn.trans[dn.start][x], db.trans[qb][x])
                    if pair[0] in live_n and pair[1] in live_b and pair not in seen2:
                        seen2.add(pair)
                        stack2.append(pair)
            while stack2:
                qn, qb = stack2.pop()
                for x in atoms:
                    pair = (dn.trans[qn][x], db.trans[qb][x])
                    if pair[0] not in live_n:
                        continue
                    if pair[1] not in live_b:
                        if qb not in db.accept:
                            return True
                    elif pair not in seen2:
                        seen2.add(pair)
                        stack2.append(pair)
        return False


def greedy_safe(grammar: Grammar, regular: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Which of the `regular` rules to print as one lexeme each, and which literals to write
    piece by piece (`_literal_pieces`), so that no lexeme can run past a sibling's end (see
    above). Each round unfolds or splits at least one lexeme, so it ends."""
    # structure is never folded (`Grammar.structure`): a union of two objects, one of them one
    # lexeme (`{a:2,b:1}`) beside one that is not (`{` `a` `:` any value), would have the lexeme
    # run past the other's `{`, `a` and `:` and refuse `{a:3}`; the check below looks one lexeme
    # past a sibling at one point, and such lexemes meet after a lexeme their paths share
    folded = _folded_over(grammar, frozenset(regular - {grammar.start} - grammar.structure))
    split: frozenset[str] = frozenset()
    # the rules whose lexemes stand apart by construction (`Grammar.marks_apart`) are not
    # checked, when the other rules enter them only through rules that open and close with a
    # marker (a call block): to the rules around, each is then a marker
    apart = grammar.marks_apart
    entries = {t for name, body in grammar.rules.items() if name not in apart for t in refs(body) if t in apart}
    if not all(_between_markers(grammar.rules[name]) for name in entries):
        apart = frozenset()
    checked = Grammar(grammar.start, {**grammar.rules, **{n: Special("") for n in apart if n != grammar.start}}) \
        if apart else grammar
    automata = _Automata(checked)
    verdicts: dict[tuple, bool] = {}
    while True:
        lexemes = _Lexemes(checked, folded - apart, split)
        unfold, more_split = _runs_past_siblings(lexemes, automata, verdicts)
        if not unfold and not more_split:
            return folded, split
        folded, split = _folded_over(grammar, folded - unfold), split | more_split


def _between_markers(e: Expr) -> bool:
    """Whether `e` opens and closes with a special token."""
    return isinstance(e, Seq) and bool(e.items) and isinstance(e.items[0], Special) and isinstance(e.items[-1], Special)


def _folded_over(grammar: Grammar, folded: frozenset[str]) -> frozenset[str]:
    """`folded` without the rules that refer to a rule no longer in it, and those that refer to
    them...: a terminal cannot name a rule (llguidance refuses the grammar: "unknown name"), so
    a rule unfolded beside its siblings unfolds every folded rule that holds it. Linear: each
    rule is taken out once, through the rules that refer to it."""
    callers: dict[str, list[str]] = {}
    for name in folded:
        for target in refs(grammar.rules[name]):
            callers.setdefault(target, []).append(name)
    out = set(folded)
    stack = [name for name in callers if name not in folded]
    while stack:
        for caller in callers.get(stack.pop(), ()):
            if caller in out:
                out.discard(caller)
                stack.append(caller)
    return frozenset(out)


def _runs_past_siblings(lex: _Lexemes, automata: _Automata, verdicts: dict) -> tuple[set, set]:
    """The folded rules and the literals that some sibling lexeme can run past (`runs_past`).

    Each pair of siblings is checked once, however many sets it is in: an object of n optional
    members has n sets of up to n siblings, so a walk of every pair of every set costs n^3. The
    candidates (a folded rule, or a literal of two or more pieces) are met three ways:
    - a folded rule, against every sibling not yet checked against it (a set difference);
    - a literal, against the lexemes beside it that are no literals, each remembering the
      literals it was checked against;
    - a literal, against the literals it starts with (only those can run past it: `a` must be
      read whole on a path of `b`, and `b` go on), found once by sorting the literals.
    The sets themselves are compared in C (their unions and differences); Python only visits a
    pair the first time it meets it."""
    unfold: set = set()
    more_split: set = set()
    all_pairs = frozenset().union(*lex.siblings)
    afters: dict = {}
    for u, after in all_pairs:
        afters.setdefault(u, []).append(after)
    units = set(afters).union(*(after for _, after in all_pairs))
    classes = frozenset().union(*(automata.classes(u) for u in units if u[0] != "sp"))

    def check(a, b, after):
        if a == b or b[1] in (unfold if b[0] == "term" else more_split):
            return
        if not _overlap(automata.first_chars(a), automata.first_chars(b)):
            return
        key = (a, b, after)
        if key not in verdicts:
            verdicts[key] = automata.runs_past(a, b, after, classes)
        if verdicts[key]:
            (unfold if b[0] == "term" else more_split).add(b[1])

    terms = frozenset(u for u in afters if u[0] == "term")
    literals = frozenset(u for u in afters if u[0] == "lit" and len(_literal_pieces(u[1])) >= 2)
    others = frozenset(u for u in afters if u[0] != "lit")
    pending = {b: {(a, after) for a in prefix for after in afters[a]}
               for b, prefix in _literal_prefixes([u for u in afters if u[0] == "lit"], literals).items()}
    seen_by_term: dict = {}
    seen_by_other: dict = {}
    # the largest sets first: the smaller ones are mostly inside them, so they find nothing new
    for group, group_units in sorted(lex.siblings.items(), key=lambda item: -len(item[0])):
        for b in group_units & terms:
            seen = seen_by_term.setdefault(b, set())
            for a, after in group.difference(seen):
                check(a, b, after)
            seen.update(group)
        here = group_units & literals
        if here:
            for a in group_units & others:
                for after in afters[a]:
                    if (a, after) in group:
                        seen = seen_by_other.setdefault((a, after), set())
                        for b in here.difference(seen):
                            check(a, b, after)
                        seen.update(here)
            for b in here.intersection(pending):
                waiting = pending[b]
                for pair in [p for p in waiting if p in group]:
                    waiting.discard(pair)
                    check(pair[0], b, pair[1])
                if not waiting:
                    del pending[b]
    return unfold, more_split


def _literal_prefixes(lits: list, of: frozenset) -> dict:
    """For each literal lexeme of `of`, the literal lexemes of `lits` its text starts with (and
    is longer than), when it has any: in sorted order a text's prefixes come before it, on a
    stack of the texts that start one another (linear in the texts, and in what it returns)."""
    out: dict = {}
    stack: list = []
    for u in sorted(lits, key=lambda u: u[1]):
        while stack and not u[1].startswith(stack[-1][1]):
            stack.pop()
        if stack and u in of:
            out[u] = list(stack)
        stack.append(u)
    return out


def _overlap(a: tuple, b: tuple) -> bool:
    return any(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1 in a for lo2, hi2 in b)


# --- shared spelling --------------------------------------------------------------------------------
def quote(text: str, *, wide: bool = False) -> str:
    """A double-quoted literal every dialect reads alike: `\\"`, `\\\\`, `\\n`, `\\r`, `\\t`, and
    `\\xNN` for other control characters (`wide`: `\\u00NN`, for the lark dialects: llguidance's
    lark reader takes no `\\xNN` before 1.8, and vLLM 0.32 ships 1.7.6; GBNF readers mangle `\\u`);
    everything else as itself."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}" if wide else f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# Characters a regex reads as operators somewhere (Rust's `regex` refuses a backslash before any
# other punctuation, `\\<` included).
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def _regex_char(c: int) -> str:
    """One character in a regex (in a class or not) the way Python's `re`, Rust's `regex` and
    Lark's reading of `/.../` (which turns `\\xNN` into the character itself before `re` sees
    it) all take literally: operators behind a backslash, `/` (Lark's delimiter) and control
    characters as `\\xNN`, the rest as itself."""
    ch = chr(c)
    if ch in _REGEX_META:
        return "\\" + ch
    if c < 0x20 or c == 0x7F or ch == "/":
        return f"\\x{c:02x}"
    if 0xD800 <= c <= 0xDFFF or c > 0xFFFF:
        return escape_code_point(c)
    return ch


def regex(expr: Expr, rules=None) -> str:
    """A regular expression for a regular `expr`, in the syntax Python's `re` and Rust's `regex`
    share (every punctuation character escaped, so neither reads an operator into it). `rules`
    resolves references (to regular rules)."""
    if isinstance(expr, Literal):
        return "".join(_regex_char(ord(c)) for c in expr.text) if expr.text else "(?:)"
    if isinstance(expr, CharClass):
        return "[" + class_text(class_ranges(expr.chars), item=_regex_char) + "]"
    if isinstance(expr, Ref):
        if rules is None:
            raise ValueError(f"reference to {expr.name!r} in a regex without rules")
        return "(?:" + regex(rules[expr.name], rules) + ")"
    if isinstance(expr, Seq):
        return "".join(_atom_regex(e, rules) if isinstance(e, Choice) else regex(e, rules) for e in expr.items)
    if isinstance(expr, Choice):
        return "|".join(regex(e, rules) for e in expr.options)
    if isinstance(expr, Repeat):
        return _atom_regex(expr.item, rules) + _quantifier(expr.min, expr.max)
    raise ValueError(f"{type(expr).__name__} has no regex (a special token is not text)")


def _atom_regex(expr: Expr, rules) -> str:
    text = regex(expr, rules)
    single = isinstance(expr, CharClass) or (isinstance(expr, Literal) and len(expr.text) == 1)
    return text if single else "(?:" + text + ")"


def _quantifier(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if (lo, hi) == (1, 1):
        return ""
    if hi is None:
        return "{%d,}" % lo
    return "{%d}" % lo if lo == hi else "{%d,%d}" % (lo, hi)


def _unique_names(grammar: Grammar, start: str, spelled: Callable[[str], str], separator: str) -> dict[str, str]:
    """Each rule's printed name: `start` for the start rule, `spelled(name)` for the others,
    then `2`, `3`... after `separator` where another rule (or the start) took it, so that
    no two rules print as one. Distinct names map to distinct spellings."""
    names = {grammar.start: start}
    taken = {start}
    for name in sorted(grammar.rules):  # sorted: the same names whatever the rules' order
        if name == grammar.start:
            continue
        base = label = spelled(name)
        n = 1
        while label in taken:
            n += 1
            label = f"{base}{separator}{n}"
        names[name] = label
        taken.add(label)
    return names


# --- the Lark family (llguidance, lark) --------------------------------------------------------------
class _LarkPrinter:
    """llguidance's dialect and plain Lark differ in three spellings: special tokens, bounded
    repetition, and how an empty match is written."""

    def __init__(self, grammar: Grammar, *, special: Callable[[str], str], bounded: Callable[[str, int, int | None], str],
                 greedy: bool = False, empty_terminals: bool = True):
        self.grammar = grammar
        self.special = special
        self.bounded = bounded
        self.regular = regular_rules(grammar)
        if not empty_terminals:  # Python Lark's Earley lexers refuse a terminal that matches ""
            self.regular = _without_empty(grammar, self.regular)
        self.split: frozenset[str] = frozenset()
        if greedy:  # the engine's lexer is greedy: only the lexemes it cannot misread
            self.regular, self.split = greedy_safe(grammar, self.regular)
        # the start rule is `start` (a rule, even when it holds one terminal: lowercase); the
        # others keep their names, terminals upper-cased, made unique where that meets another
        # (a rule named `start` that does not start, `ab` folded beside a rule `AB`)
        self.names = _unique_names(grammar, "start", lambda n: n.upper() if n in self.regular else n, "_")

    def text(self, header: str) -> str:
        lines = [header] if header else []
        for name in reachable(self.grammar):
            body = self.grammar.rules[name]
            is_terminal = name in self.regular and name != self.grammar.start
            label = self.names[name]
            lines.append(f"{label}: {self.expr(body, terminal=is_terminal, top=True)}")
        return "\n".join(lines) + "\n"

    def expr(self, e: Expr, *, terminal: bool, top: bool = False) -> str:
        if isinstance(e, Literal):
            if not terminal and e.text in self.split:
                return " ".join(quote(p, wide=True) for p in _literal_pieces(e.text))
            return quote(e.text, wide=True)
        if isinstance(e, Special):
            if terminal:
                raise ValueError("a special token inside a terminal")
            return self.special(e.token)
        if isinstance(e, CharClass):
            return "/" + regex(e) + "/"
        if isinstance(e, Ref):
            return self.names[e.name]
        if isinstance(e, Seq):
            return " ".join(self._atom(i, terminal) if isinstance(i, Choice) else self.expr(i, terminal=terminal)
                            for i in e.items)
        if isinstance(e, Choice):
            return " | ".join(self.expr(o, terminal=terminal) for o in e.options)
        if isinstance(e, Repeat):
            if not terminal and self._inline_regular(e.item):
                # one lexeme, not a rule repeating one-character lexemes (llguidance's docs warn
                # that the latter is slow, up to refusing the grammar)
                if e.min == 0:  # a lexeme never matches the empty string: optional instead
                    return "/" + regex(Repeat(e.item, 1, e.max)) + "/?"
                return "/" + regex(e) + "/"
            return self.bounded(self._atom(e.item, terminal), e.min, e.max)
        raise TypeError(f"not an IR expression: {e!r}")

    def _inline_regular(self, e: Expr) -> bool:
        return not any(True for _ in refs(e)) and not _has_special(e)

    def _atom(self, e: Expr, terminal: bool) -> str:
        text = self.expr(e, terminal=terminal)
        single = isinstance(e, (Special, CharClass, Ref)) or (isinstance(e, Literal) and " " not in text.strip('"'))
        return text if single and not (isinstance(e, Literal) and not terminal and e.text in self.split) else "(" + text + ")"


def _braces(item: str, lo: int, hi: int | None) -> str:
    return item + _quantifier(lo, hi)


def _tilde(item: str, lo: int, hi: int | None) -> str:
    q = _quantifier(lo, hi)
    if not q.startswith("{"):
        return item + q
    if hi is None:  # Lark has no open range: the minimum, then any more
        return f"{item}~{lo} {item}*"
    return f"{item}~{lo}" if lo == hi else f"{item}~{lo}..{hi}"


def to_llguidance(grammar: Grammar) -> str:
    return _LarkPrinter(grammar, special=lambda t: t, bounded=_braces, greedy=True).text("%llguidance {}\n")


def to_lark(grammar: Grammar) -> str:
    return _LarkPrinter(grammar, special=quote, bounded=_tilde, empty_terminals=False).text("")


def _without_empty(grammar: Grammar, regular: frozenset[str]) -> frozenset[str]:
    """`regular` without the rules that match the empty string (a string's content may be empty)
    and the rules that refer to them: those stay rules, whose optional pieces the printer writes
    `/.../?`. Linear: each rule looked at again only when a rule it refers to turns out nullable,
    then each demotion passed to the rules that refer to it once."""
    users: dict[str, list[str]] = {}
    for name, body in grammar.rules.items():
        for target in set(refs(body)):
            users.setdefault(target, []).append(name)
    nullable: set[str] = set()
    pending = list(grammar.rules)
    while pending:
        name = pending.pop()
        if name not in nullable and _matches_empty(grammar.rules[name], nullable):
            nullable.add(name)
            pending.extend(users.get(name, ()))
    demoted = set()
    pending = [name for name in nullable if name in regular]
    while pending:
        name = pending.pop()
        if name in demoted:
            continue
        demoted.add(name)
        pending.extend(u for u in users.get(name, ()) if u in regular)
    return regular - demoted


def _matches_empty(e: Expr, nullable: set[str]) -> bool:
    if isinstance(e, Literal):
        return e.text == ""
    if isinstance(e, (Special, CharClass)):
        return False
    if isinstance(e, Ref):
        return e.name in nullable
    if isinstance(e, Seq):
        return all(_matches_empty(i, nullable) for i in e.items)
    if isinstance(e, Choice):
        return any(_matches_empty(o, nullable) for o in e.options)
    return e.min == 0 or _matches_empty(e.item, nullable)


# --- the BNF family (gbnf, xgrammar) -----------------------------------------------------------------
# Words xgrammar's EBNF reads as values, not rule names (its lexer makes booleans of them).
_BNF_RESERVED = {"true", "false"}


def _bnf_name(name: str) -> str:
    name = name.replace("_", "-")
    return name + "-rule" if name in _BNF_RESERVED else name


def _bnf_char(c: int) -> str:
    """One character in a GBNF class: `-`, `]`, `^` and the other punctuation as `\\xNN` (GBNF
    has no backslash escape for most of them), letters, digits and the rest as themselves."""
    ch = chr(c)
    if ch.isascii() and not (ch.isalnum() or ch in " _"):
        return f"\\x{c:02x}"
    if 0xD800 <= c <= 0xDFFF or c > 0xFFFF:
        return escape_code_point(c)
    return ch


# llama.cpp decodes UTF-8 leniently: a lead byte F5 to FF (or F4 then 90 to BF) makes a value
# beyond U+10FFFF, ED then A0 to BF a surrogate, and a negated class `[^<]` takes them all, though
# they are no UTF-8 (llguidance refuses them). So GBNF classes are written positive, over Unicode
# scalar values only: `[^<]` is `[\x00-\x3b\x3d-\ud7ff\ue000-\U0010ffff]`.
_SURROGATES = (0xD800, 0xDFFF)


def _scalar_values(ranges) -> tuple[tuple[int, int], ...]:
    out = []
    for lo, hi in ranges:
        if lo < _SURROGATES[0]:
            out.append((lo, min(hi, _SURROGATES[0] - 1)))
        if hi > _SURROGATES[1]:
            out.append((max(lo, _SURROGATES[1] + 1), hi))
    if not out:
        raise ValueError("a character class of surrogates only matches no UTF-8")
    return tuple(out)


def _gbnf_class_char(c: int) -> str:
    return _bnf_char(c) if c < 0x80 else escape_code_point(c)


def _bnf_class(chars: str) -> str:
    item = _gbnf_class_char
    spans = _scalar_values(class_ranges(chars))
    return "[" + "".join(item(lo) if lo == hi else item(lo) + ("" if hi == lo + 1 else "-") + item(hi)
                         for lo, hi in spans) + "]"


# xgrammar (0.2.9) reads every hex digit after `\x`: `[\x2d\x2e0-9]` is `-`, then U+2E0 to `9`,
# a reversed range it refuses. GBNF readers (llama.cpp, llguidance's) take two digits and some
# mangle `\u`. So the xgrammar export puts a class's escaped characters after the ones written
# as themselves, where no hex digit follows them, and writes `\u00NN` where one still would.
_HEX_ESCAPE_BEFORE_HEX = re.compile(r"(\\\\)|\\x([0-9a-f]{2})(?=[0-9A-Fa-f])")


def _xgrammar_escapes(text: str) -> str:
    return _HEX_ESCAPE_BEFORE_HEX.sub(lambda m: m.group(1) or "\\u00" + m.group(2), text)


# xgrammar's matcher, like llama.cpp's, takes the three bytes of a surrogate (ED A0 80) under a
# negated class (integration/xgrammar/test_xgrammar_utf8.py), and llguidance, which reads the
# structural tag's grammars too, refuses a surrogate escape in a class. So xgrammar classes are
# written positive over scalar values, as GBNF's are: `[^<]` is `[\x00-\x3b\x3d-\ud7ff\ue000-X]`,
# with U+10FFFF itself for X.
def _xgrammar_class(chars: str) -> str:
    spans = _scalar_values(merge_ranges(class_ranges(chars)))

    def item(c: int) -> str:
        # beyond the BMP as the character itself: llguidance's GBNF reader (which reads the
        # structural tag's grammars) turns `\U0010ffff` into `\U10ffff`, which its regex refuses
        return chr(c) if c > 0xFFFF else _gbnf_class_char(c)

    def plain(c: int) -> bool:
        return not item(c).startswith("\\")

    # the ranges whose ends are written as themselves first, the escaped ones last (U+10FFFF's
    # among them): no hex digit then follows an escape
    spans = sorted(spans, key=lambda r: (not plain(r[0]), not plain(r[1]), r))
    body = "".join(item(lo) if lo == hi else item(lo) + ("" if hi == lo + 1 else "-") + item(hi) for lo, hi in spans)
    return "[" + _xgrammar_escapes(body) + "]"


def _bnf(grammar: Grammar, special: Callable[[str], str], *, xgrammar: bool = False) -> str:
    names = _unique_names(grammar, "root", _bnf_name, "-")

    def expr(e: Expr) -> str:
        if isinstance(e, Literal):
            return _xgrammar_escapes(quote(e.text)) if xgrammar else quote(e.text)
        if isinstance(e, Special):
            return special(e.token)
        if isinstance(e, CharClass):
            return _xgrammar_class(e.chars) if xgrammar else _bnf_class(e.chars)
        if isinstance(e, Ref):
            return names[e.name]
        if isinstance(e, Seq):
            if not e.items and xgrammar:
                return '""'  # xgrammar's EBNF refuses an empty alternative (`( a | )`); GBNF takes it
            return " ".join(atom(i) if isinstance(i, Choice) else expr(i) for i in e.items)
        if isinstance(e, Choice):
            return " | ".join(expr(o) for o in e.options)
        if isinstance(e, Repeat):
            return atom(e.item) + _quantifier(e.min, e.max)
        raise TypeError(f"not an IR expression: {e!r}")

    def atom(e: Expr) -> str:
        text = expr(e)
        return text if isinstance(e, (Literal, Special, CharClass, Ref)) else "(" + text + ")"

    return "".join(f"{names[n]} ::= {expr(grammar.rules[n])}\n" for n in reachable(grammar))


def _gbnf_token(token: str) -> str:
    if not (token.startswith("<") and token.endswith(">")) or any(c in token[1:-1] for c in "<> \t\r\n"):
        raise ValueError(f"GBNF cannot name the token {token!r} by its text")
    return token


def to_gbnf(grammar: Grammar) -> str:
    return _bnf(grammar, _gbnf_token)


def to_xgrammar(grammar: Grammar) -> str:
    return _bnf(grammar, lambda token: _xgrammar_escapes(quote(token)), xgrammar=True)


PRINTERS: dict[str, Callable[[Grammar], str]] = {
    "llguidance": to_llguidance,
    "lark": to_lark,
    "gbnf": to_gbnf,
    "xgrammar": to_xgrammar,
}
