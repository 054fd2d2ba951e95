"""Automata back to expressions: the text a DFA (`_regular`'s) accepts, as a regular expression
in the IR, by state elimination, written the way a reader would (single characters as literals,
optional parts as `?`, classes merged)."""

from __future__ import annotations

from ._regular import DFA, CannotDerive
from .ir import CharClass, Choice, Expr, Literal, Repeat, Seq, char_class, choice, seq


def to_expr(d: DFA) -> Expr:
    """A regular expression (IR) for the text `d` accepts, by state elimination. Raises
    `CannotDerive` for the empty language (nothing to write)."""
    a = d.alphabet
    text = a.text_atoms()
    live = d.live()
    if d.start not in live:
        raise CannotDerive("the empty language")
    states = [s for s in range(len(d.trans)) if s in live]
    START, FINAL = -1, -2
    edges: dict[tuple[int, int], Expr] = {}

    def add(i, j, e):
        edges[(i, j)] = choice(edges[(i, j)], e) if (i, j) in edges else e

    edges[(START, d.start)] = Literal("")
    for s in states:
        by_target: dict[int, set] = {}
        for x in text:
            t = d.trans[s][x]
            if t in live:
                by_target.setdefault(t, set()).add(x)
        for t, atoms in by_target.items():
            add(s, t, char_class(a.ranges_of(atoms)))
        if s in d.accept:
            add(s, FINAL, Literal(""))
    remaining = list(states)
    while remaining:
        # eliminate the state with the fewest paths through it first: smaller expressions
        def cost(k):
            ins = sum(1 for (i, j) in edges if j == k and i != k)
            outs = sum(1 for (i, j) in edges if i == k and j != k)
            return ins * outs
        k = min(remaining, key=cost)
        remaining.remove(k)
        loop = edges.pop((k, k), None)
        ins = [(i, e) for (i, j), e in list(edges.items()) if j == k]
        outs = [(j, e) for (i, j), e in list(edges.items()) if i == k]
        for i, _ in ins:
            del edges[(i, k)]
        for j, _ in outs:
            del edges[(k, j)]
        middle = Repeat(loop) if loop is not None else None
        for i, ein in ins:
            for j, eout in outs:
                add(i, j, _seq(ein, middle, eout))
    return _simplify(edges.get((START, FINAL), Literal("")))


def _seq(*parts) -> Expr:
    items = [_one_char(p) for p in parts if p is not None and p != Literal("")]
    if not items:
        return Literal("")
    out: list[Expr] = []
    for item in items:
        if isinstance(item, Literal) and out and isinstance(out[-1], Literal):
            out[-1] = Literal(out[-1].text + item.text)
        else:
            out.append(item)
    return seq(*out)


def _one_char(e: Expr) -> Expr:
    """A class of one character as that character, so that `thought` reads as a word."""
    if isinstance(e, CharClass):
        from .ir import class_ranges
        ranges = class_ranges(e.chars)
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            return Literal(chr(ranges[0][0]))
    return e


def _simplify(e: Expr) -> Expr:
    """Optional parts as `Repeat(x, 0, 1)` instead of a choice with the empty string."""
    if isinstance(e, Seq):
        return _seq(*(_simplify(i) for i in e.items))
    if isinstance(e, Repeat):
        return Repeat(_simplify(e.item), e.min, e.max)
    if isinstance(e, Choice):
        options = []
        for o in e.options:
            o = _simplify(o)
            if o not in options:
                options.append(o)
        empty = Literal("") in options
        rest = [o for o in options if o != Literal("")]
        if not rest:
            return Literal("")
        # one class for single characters side by side
        classes = [o for o in rest if isinstance(o, CharClass)]
        if len(classes) > 1:
            from .ir import class_ranges
            merged = char_class([r for c in classes for r in class_ranges(c.chars)])
            rest = [merged] + [o for o in rest if not isinstance(o, CharClass)]
        body = choice(*rest)
        return Repeat(body, 0, 1) if empty else body
    return e
