"""Regular languages as automata: pattern trees read from Python regular expressions, automata
over them (determinized, minimized, intersected); `_expressions` turns them back into IR. What a
terminal's pattern means to Lark's lexer, and so which strings it takes, is `_token_language`'s.

Automata work over "atoms": the code-point ranges that no character class of the construction
splits, plus `MARK` and `END` (the end of the input), two symbols beyond Unicode.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._compat import sre_constants, sre_parse
from ..error_base import Gemma4Error
from .ir import MAX_CODE_POINT, complement_ranges, merge_ranges


MARK = MAX_CODE_POINT + 1
END = MAX_CODE_POINT + 2
ALL = ((0, END),)
TEXT = ((0, MAX_CODE_POINT),)


class CannotDerive(ValueError, Gemma4Error):
    """A pattern whose language this module cannot state exactly (an unsupported construct, or a
    terminal whose meaning depends on more than the follow language tells)."""


# --- patterns as trees ------------------------------------------------------------------------------
# ("set", ranges) | ("cat", items) | ("alt", options) | ("rep", item, min, max, lazy)
# | ("look", positive, item) | ("and", a, b) | ("not", a) | ("mark_transparent", a)
EPS = ("cat", ())


def rset(ranges) -> tuple:
    return ("set", merge_ranges(ranges))


def cat(*items) -> tuple:
    flat = []
    for i in items:
        flat.extend(i[1] if i[0] == "cat" else (i,))
    return flat[0] if len(flat) == 1 else ("cat", tuple(flat))


def alt(*options) -> tuple:
    return options[0] if len(options) == 1 else ("alt", tuple(options))


def star(item) -> tuple:
    return ("rep", item, 0, None, False)


def literal(text: str) -> tuple:
    return cat(*(rset(((ord(c), ord(c)),)) for c in text)) if text else EPS


def from_pattern(pattern: str, flags: str | list = "") -> tuple:
    """A Python regular expression (the subset the grammar's terminals use) as a pattern tree."""
    f = 0
    for flag in flags:
        f |= {"s": re.S, "i": re.I, "m": re.M, "x": re.X, "u": 0}[flag]
    if f & (re.I | re.M):
        raise CannotDerive("flags i and m are not supported")
    return _sre(sre_parse.parse(pattern, f), bool(f & re.S))


def _sre(items, dotall: bool) -> tuple:
    out = []
    c = sre_constants
    for op, av in items:
        if op is c.LITERAL:
            out.append(rset(((av, av),)))
        elif op is c.NOT_LITERAL:
            out.append(("set", _negate(((av, av),))))
        elif op is c.ANY:
            out.append(("set", TEXT if dotall else _negate(((10, 10),))))
        elif op is c.IN:
            out.append(("set", _sre_class(av)))
        elif op is c.BRANCH:
            out.append(alt(*(_sre(b, dotall) for b in av[1])))
        elif op is c.SUBPATTERN:
            if av[1] or av[2]:
                raise CannotDerive("inline flags are not supported")
            out.append(_sre(av[3], dotall))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT):
            lo, hi, sub = av
            out.append(("rep", _sre(sub, dotall), lo, None if hi == c.MAXREPEAT else hi, op is c.MIN_REPEAT))
        elif op in (c.ASSERT, c.ASSERT_NOT):
            if av[0] != 1:
                raise CannotDerive("look-behinds are not supported")
            out.append(("look", op is c.ASSERT, _sre(av[1], dotall)))
        else:
            raise CannotDerive(f"regex construct {op} is not supported")
    return cat(*out) if out else EPS


def _sre_class(items) -> tuple:
    c = sre_constants
    ranges, negated = [], False
    for op, av in items:
        if op is c.NEGATE:
            negated = True
        elif op is c.LITERAL:
            ranges.append((av, av))
        elif op is c.RANGE:
            ranges.append(av)
        else:  # \d, \w, \s are Unicode-wide in Python: the grammar spells its classes out
            raise CannotDerive(f"class item {op} is not supported")
    merged = merge_ranges(ranges)
    return _negate(merged) if negated else merged


def _negate(ranges) -> tuple:
    """The complement within text (never MARK or END)."""
    return complement_ranges(merge_ranges(ranges))


def ranges_in(tree, acc: set):
    kind = tree[0]
    if kind == "set":
        acc.add(tree[1])
    elif kind in ("cat", "alt"):
        for t in tree[1]:
            ranges_in(t, acc)
    elif kind == "rep":
        ranges_in(tree[1], acc)
    elif kind == "look":
        ranges_in(tree[2], acc)
    elif kind == "and":
        ranges_in(tree[1], acc)
        ranges_in(tree[2], acc)
    elif kind in ("not", "mark_transparent"):
        ranges_in(tree[1], acc)


def has_lookaround(tree) -> bool:
    kind = tree[0]
    if kind == "look":
        return True
    if kind in ("cat", "alt"):
        return any(has_lookaround(t) for t in tree[1])
    if kind == "rep":
        return has_lookaround(tree[1])
    return False


def has_lazy(tree) -> bool:
    kind = tree[0]
    if kind == "rep":
        return tree[4] or has_lazy(tree[1])
    if kind in ("cat", "alt"):
        return any(has_lazy(t) for t in tree[1])
    if kind == "look":
        return has_lazy(tree[2])
    return False


# --- atoms ------------------------------------------------------------------------------------------
class Alphabet:
    """The ranges no class splits: every class is a union of atoms."""

    def __init__(self, classes):
        cuts = {0, MARK, END, END + 1}
        for ranges in classes:
            for lo, hi in ranges:
                cuts.add(lo)
                cuts.add(hi + 1)
        bounds = sorted(cuts)
        self.atoms = [(a, b - 1) for a, b in zip(bounds, bounds[1:])]
        self._starts = [a for a, _ in self.atoms]
        self.mark = self.atom_of(MARK)
        self.end = self.atom_of(END)

    def atom_of(self, code: int) -> int:
        import bisect
        return bisect.bisect_right(self._starts, code) - 1

    def atoms_in(self, ranges) -> frozenset[int]:
        out = set()
        for lo, hi in ranges:
            i = self.atom_of(lo)
            while i < len(self.atoms) and self.atoms[i][1] <= hi:
                out.add(i)
                i += 1
        return frozenset(out)

    def ranges_of(self, atoms) -> tuple:
        return merge_ranges(self.atoms[a] for a in atoms)

    def text_atoms(self) -> frozenset[int]:
        return self.atoms_in(TEXT)


# --- automata ---------------------------------------------------------------------------------------
@dataclass
class DFA:
    """A complete deterministic automaton over the atoms of `alphabet`: `trans[state][atom]`."""

    alphabet: Alphabet
    trans: list
    accept: frozenset
    start: int = 0

    def live(self) -> frozenset:
        """The states from which some accepting state is reachable."""
        back: dict[int, set] = {}
        for s, row in enumerate(self.trans):
            for t in row:
                back.setdefault(t, set()).add(s)
        seen, stack = set(self.accept), list(self.accept)
        while stack:
            for p in back.get(stack.pop(), ()):
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        return frozenset(seen)

    def run(self, state: int, codes) -> int:
        for code in codes:
            state = self.trans[state][self.alphabet.atom_of(code)]
        return state

    def accepts(self, text: str) -> bool:
        return self.run(self.start, map(ord, text)) in self.accept


class _NFA:
    def __init__(self, alphabet: Alphabet):
        self.alphabet = alphabet
        self.eps: list[set] = []
        self.edges: list[list] = []  # (atoms, target)

    def state(self) -> int:
        self.eps.append(set())
        self.edges.append([])
        return len(self.eps) - 1

    def build(self, tree) -> tuple[int, int]:
        kind = tree[0]
        if kind == "set":
            a, b = self.state(), self.state()
            self.edges[a].append((self.alphabet.atoms_in(tree[1]), b))
            return a, b
        if kind == "cat":
            a = b = self.state()
            for item in tree[1]:
                s, e = self.build(item)
                self.eps[b].add(s)
                b = e
            return a, b
        if kind == "alt":
            a, b = self.state(), self.state()
            for option in tree[1]:
                s, e = self.build(option)
                self.eps[a].add(s)
                self.eps[e].add(b)
            return a, b
        if kind == "rep":
            _, item, lo, hi, _lazy = tree
            a = b = self.state()
            for _ in range(lo):
                s, e = self.build(item)
                self.eps[b].add(s)
                b = e
            if hi is None:
                s, e = self.build(item)
                self.eps[b].add(s)
                self.eps[e].add(s)
                end = self.state()
                self.eps[b].add(end)
                self.eps[e].add(end)
                return a, end
            end = self.state()
            self.eps[b].add(end)
            for _ in range(hi - lo):
                s, e = self.build(item)
                self.eps[b].add(s)
                self.eps[e].add(end)
                b = e
            return a, end
        if kind == "mark_transparent":
            first = len(self.eps)
            s, e = self.build(tree[1])
            mark = frozenset({self.alphabet.mark})
            for q in range(first, len(self.eps)):
                self.edges[q].append((mark, q))
            return s, e
        if kind in ("and", "not"):
            return self.embed(to_dfa(tree, self.alphabet))
        if kind == "look":
            raise CannotDerive("a look-around outside the match encoding")
        raise CannotDerive(f"unknown pattern node {kind}")

    def embed(self, dfa: DFA) -> tuple[int, int]:
        live = dfa.live()
        base = {s: self.state() for s in range(len(dfa.trans)) if s in live}
        end = self.state()
        for s, q in base.items():
            by_target: dict[int, set] = {}
            for atom, t in enumerate(dfa.trans[s]):
                if t in base:
                    by_target.setdefault(t, set()).add(atom)
            for t, atoms in by_target.items():
                self.edges[q].append((frozenset(atoms), base[t]))
            if s in dfa.accept:
                self.eps[q].add(end)
        start = base.get(dfa.start)
        if start is None:  # the empty language
            start = self.state()
        return start, end

    def closure(self, states) -> frozenset:
        seen, stack = set(states), list(states)
        while stack:
            for t in self.eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)


def _determinize(nfa: _NFA, start: int, final: int, *, minimal: bool = True) -> DFA:
    n = len(nfa.alphabet.atoms)
    first = nfa.closure({start})
    index = {first: 0}
    order = [first]
    trans = []
    for current in order:  # grows while walked
        row = []
        moves: list[set] = [set() for _ in range(n)]
        for q in current:
            for atoms, t in nfa.edges[q]:
                for a in atoms:
                    moves[a].add(t)
        closed: dict[frozenset, int] = {}  # atoms that move alike (most do) share one closure
        for a in range(n):
            moved = frozenset(moves[a])
            found = closed.get(moved)
            if found is None:
                target = nfa.closure(moved)
                if target not in index:
                    index[target] = len(order)
                    order.append(target)
                found = closed[moved] = index[target]
            row.append(found)
        trans.append(row)
    accept = frozenset(i for i, states in enumerate(order) if final in states)
    d = DFA(nfa.alphabet, trans, accept)
    return minimize(d) if minimal else d


def to_dfa(tree, alphabet: Alphabet, *, minimal: bool = True) -> DFA:
    kind = tree[0]
    if kind == "not":
        d = to_dfa(tree[1], alphabet)
        return DFA(alphabet, d.trans, frozenset(range(len(d.trans))) - d.accept, d.start)
    if kind == "and":
        return intersect(to_dfa(tree[1], alphabet), to_dfa(tree[2], alphabet))
    nfa = _NFA(alphabet)
    s, e = nfa.build(tree)
    return _determinize(nfa, s, e, minimal=minimal)


def intersect(a: DFA, b: DFA) -> DFA:
    n = len(a.alphabet.atoms)
    index = {(a.start, b.start): 0}
    order = [(a.start, b.start)]
    trans = []
    for p, q in order:
        row = []
        for x in range(n):
            pair = (a.trans[p][x], b.trans[q][x])
            if pair not in index:
                index[pair] = len(order)
                order.append(pair)
            row.append(index[pair])
        trans.append(row)
    accept = frozenset(i for i, (p, q) in enumerate(order) if p in a.accept and q in b.accept)
    return minimize(DFA(a.alphabet, trans, accept))


def minimize(d: DFA) -> DFA:
    """Reachable states only, equivalent states merged (Moore's refinement); the start is 0."""
    reach, stack = {d.start}, [d.start]
    while stack:
        for t in d.trans[stack.pop()]:
            if t not in reach:
                reach.add(t)
                stack.append(t)
    states = sorted(reach)
    block = {s: int(s in d.accept) for s in states}
    while True:
        sig = {s: (block[s],) + tuple(block[t] for t in d.trans[s]) for s in states}
        ids: dict = {}
        new = {s: ids.setdefault(sig[s], len(ids)) for s in states}
        if len(ids) == len(set(block.values())):
            break
        block = new
    # renumber so that the start is 0, in walk order (stable output)
    order, index = [block[d.start]], {block[d.start]: 0}
    rep = {}
    for s in states:
        rep.setdefault(block[s], s)
    trans = []
    for b in order:
        row = []
        for t in d.trans[rep[b]]:
            tb = block[t]
            if tb not in index:
                index[tb] = len(order)
                order.append(tb)
            row.append(index[tb])
        trans.append(row)
    accept = frozenset(index[block[s]] for s in states if s in d.accept)
    return DFA(d.alphabet, trans, accept, 0)


def is_empty(d: DFA) -> bool:
    return d.start not in d.live()
