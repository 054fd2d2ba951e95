"""Greedy lexing (llguidance).

llguidance's lexer is greedy: where two lexemes may start, it follows the longer as long as the
text continues it, and never goes back. So a lexeme `,` beside a lexeme `,th:1` refuses `,ta:`:
after `,t` only `,th:1` is alive, and `a` kills it. Folding a regular rule into one lexeme can
create such a pair; `greedy_safe` finds them and undoes the folding, and splits a literal that
holds a separator (`",th:"` as `"," "th" ":"`), until no lexeme can run past a sibling's end
into text the grammar gives the sibling's follower.
"""

from __future__ import annotations

from ._analysis import refs
from ._automata import Automata
from ._lexemes import Lexemes, literal_pieces
from .ir import Expr, Grammar, Seq, Special


def greedy_safe(grammar: Grammar, regular: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Which of the `regular` rules to print as one lexeme each, and which literals to write
    piece by piece (`literal_pieces`), so that no lexeme can run past a sibling's end (see
    the module's documentation). Each round unfolds or splits at least one lexeme, so it ends."""
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
    automata = Automata(checked)
    verdicts: dict[tuple, bool] = {}
    while True:
        lexemes = Lexemes(checked, folded - apart, split)
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


def _runs_past_siblings(lex: Lexemes, automata: Automata, verdicts: dict) -> tuple[set, set]:
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
    pairs = _SiblingPairs(lex, automata, verdicts)
    # the largest sets first: the smaller ones are mostly inside them, so they find nothing new
    for group, group_units in sorted(lex.siblings.items(), key=lambda item: -len(item[0])):
        pairs.against_terms(group, group_units)
        here = group_units & pairs.literals
        if here:
            pairs.against_others(group, group_units, here)
            pairs.against_prefixes(group, here)
    return pairs.unfold, pairs.more_split


class _SiblingPairs:
    """One round of `_runs_past_siblings`: its verdicts so far (`unfold`, `more_split`) and
    what each candidate was already checked against."""

    def __init__(self, lex: Lexemes, automata: Automata, verdicts: dict):
        self.automata, self.verdicts = automata, verdicts
        self.unfold: set = set()
        self.more_split: set = set()
        all_pairs = frozenset().union(*lex.siblings)
        afters: dict = {}
        for u, after in all_pairs:
            afters.setdefault(u, []).append(after)
        self.afters = afters
        units = set(afters).union(*(after for _, after in all_pairs))
        self.classes = frozenset().union(*(automata.classes(u) for u in units if u[0] != "sp"))
        self.terms = frozenset(u for u in afters if u[0] == "term")
        self.literals = frozenset(u for u in afters if u[0] == "lit" and len(literal_pieces(u[1])) >= 2)
        self.others = frozenset(u for u in afters if u[0] != "lit")
        self.pending = {b: {(a, after) for a in prefix for after in afters[a]}
                        for b, prefix in _literal_prefixes([u for u in afters if u[0] == "lit"], self.literals).items()}
        self.seen_by_term: dict = {}
        self.seen_by_other: dict = {}

    def check(self, a, b, after) -> None:
        if a == b or b[1] in (self.unfold if b[0] == "term" else self.more_split):
            return
        if not _overlap(self.automata.first_chars(a), self.automata.first_chars(b)):
            return
        key = (a, b, after)
        if key not in self.verdicts:
            self.verdicts[key] = self.automata.runs_past(a, b, after, self.classes)
        if self.verdicts[key]:
            (self.unfold if b[0] == "term" else self.more_split).add(b[1])

    def against_terms(self, group: frozenset, group_units: frozenset) -> None:
        """Each folded rule of a set against the siblings it was not yet checked against."""
        for b in group_units & self.terms:
            seen = self.seen_by_term.setdefault(b, set())
            for a, after in group.difference(seen):
                self.check(a, b, after)
            seen.update(group)

    def against_others(self, group: frozenset, group_units: frozenset, here: frozenset) -> None:
        """The literals `here` of a set against the lexemes beside them that are no literals,
        each of those remembering the literals it was checked against."""
        for a in group_units & self.others:
            for after in self.afters[a]:
                if (a, after) not in group:
                    continue
                seen = self.seen_by_other.setdefault((a, after), set())
                for b in here.difference(seen):
                    self.check(a, b, after)
                seen.update(here)

    def against_prefixes(self, group: frozenset, here: frozenset) -> None:
        """The literals `here` of a set against the literals they start with, met in it."""
        for b in here.intersection(self.pending):
            waiting = self.pending[b]
            for pair in [p for p in waiting if p in group]:
                waiting.discard(pair)
                self.check(pair[0], b, pair[1])
            if not waiting:
                del self.pending[b]


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

