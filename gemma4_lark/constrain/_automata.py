"""Each lexeme of the greedy-lexing check (`_greedy`) as an automaton over the grammar's rules,
and the question the check asks of two of them: can one run past the other's end (`runs_past`)."""

from __future__ import annotations

from ._lexemes import Unit
from .ir import CharClass, Choice, Expr, Grammar, Literal, Ref, Repeat, Seq, class_ranges, merge_ranges


# Repetitions bounded beyond this many are read as unbounded by the greedy check's automata.
_AUTOMATON_BOUND = 32


class Automata:
    """Each lexeme as an automaton (over the grammar's rules), built when first asked for."""

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        self.trees: dict[str, tuple] = {}
        self.firsts: dict[str, tuple] = {}
        self.dfas: dict[tuple, tuple] = {}
        self.alphabets: dict[frozenset, object] = {}
        self.unit_classes: dict[Unit, frozenset] = {}
        self.unit_firsts: dict[Unit, tuple] = {}

    def tree(self, e: Expr) -> tuple:
        from . import _regular as regular
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

    def classes(self, unit: Unit) -> frozenset:
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

    def dfa(self, unit: Unit, classes: frozenset):
        """`unit`'s automaton over the alphabet that `classes` cut, and its live states: built
        once per alphabet (the units checked against one lexeme mostly share one)."""
        key = (unit, classes)
        if key not in self.dfas:
            from . import _regular as regular
            if classes not in self.alphabets:
                self.alphabets[classes] = regular.Alphabet(classes)
            # not minimized: the check walks products of reachable states, for which any DFA of
            # the language does; Moore's refinement costs a round per state of a long literal
            d = regular.to_dfa(self.unit_tree(unit), self.alphabets[classes], minimal=False)
            self.dfas[key] = (d, d.live())
        return self.dfas[key]

    def unit_tree(self, unit: Unit) -> tuple:
        kind, value = unit
        if kind == "lit":
            return self.tree(Literal(value))
        if kind == "cls":
            return self.tree(CharClass(value))
        if kind == "term":
            return self.tree(Ref(value))
        return self.tree(Repeat(value.item, max(1, value.min), value.max))  # `re`: never empty

    def first_chars(self, unit: Unit) -> tuple:
        """The ranges of the characters `unit`'s text may start with (none for a token);
        asked for each pair a lexeme is in, so kept per lexeme."""
        if unit not in self.unit_firsts:
            self.unit_firsts[unit] = self._first_chars(unit)
        return self.unit_firsts[unit]

    def _first_chars(self, unit: Unit) -> tuple:
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

    def runs_past(self, a: Unit, b: Unit, followers: frozenset, classes: frozenset) -> bool:
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
            b_automaton, n_automaton = (self.dfa(u, classes) for u in (b, n))
            if self._follower_ends(n_automaton, b_automaton, self._after(a, b_automaton, classes), classes):
                return True
        return False

    def _after(self, a: Unit, b_automaton: tuple, classes: frozenset) -> set:
        """Phase 1 of `runs_past`: `a` and `b` side by side until `a` is complete. The states
        `b`'s automaton can be in, alive, once a text of `a` is read."""
        db, live_b = b_automaton
        alphabet = self.alphabets[classes]
        after_a = set()
        if a[0] == "lit":  # one path: `b` read along it (no automaton for each literal)
            qb = db.start
            for ch in a[1]:
                qb = db.trans[qb][alphabet.atom_of(ord(ch))]
                if qb not in live_b:
                    break
            else:
                after_a.add(qb)
            return after_a
        da, live_a = self.dfa(a, classes)
        seen = {(da.start, db.start)}
        stack = [(da.start, db.start)]
        while stack:
            qa, qb = stack.pop()
            for x in range(len(alphabet.atoms)):
                pair = (da.trans[qa][x], db.trans[qb][x])
                if pair[0] in live_a and pair[1] in live_b and pair not in seen:
                    seen.add(pair)
                    stack.append(pair)
                    if pair[0] in da.accept:
                        after_a.add(pair[1])
        return after_a

    def _follower_ends(self, n_automaton: tuple, b_automaton: tuple, after_a: set, classes: frozenset) -> bool:
        """Phase 2 of `runs_past`: the follower and `b`, from `b`'s states `after_a`. The
        follower's first character leaves `a` complete behind it, so `b` must survive it and die
        on a later one, incomplete before it."""
        (dn, live_n), (db, live_b) = n_automaton, b_automaton
        atoms = range(len(self.alphabets[classes].atoms))
        seen = set()
        stack = []
        for qb in after_a:
            for x in atoms:
                pair = (dn.trans[dn.start][x], db.trans[qb][x])
                if pair[0] in live_n and pair[1] in live_b and pair not in seen:
                    seen.add(pair)
                    stack.append(pair)
        while stack:
            qn, qb = stack.pop()
            for x in atoms:
                pair = (dn.trans[qn][x], db.trans[qb][x])
                if pair[0] not in live_n:
                    continue
                if pair[1] not in live_b:
                    if qb not in db.accept:
                        return True
                elif pair not in seen:
                    seen.add(pair)
                    stack.append(pair)
        return False
