"""What a terminal of the grammar takes, as Lark's lexer reads it: its pattern (look-arounds and
lazy repetitions included) turned into the plain regular language an engine can lex, as an
automaton (`_regular`'s).

A terminal's pattern means what Lark's lexer makes of it (see the grammar's header): matched at a
position of the input, with Python's leftmost-first semantics, look-arounds that may see past the
terminal into what follows it, and lazy repetitions that stop as early as they can. Engines accept
none of that; they want the set of strings the terminal stands for. That set depends on what can
follow the terminal, so it is computed here from the pattern and a follow language:

    t belongs to the terminal  iff  for every follow f, the pattern matched on t·f takes exactly t

The pattern is read into an automaton over the input with a marker `MARK` where the match ends
(look-aheads are intersections with what comes after them, transparent to the marker); walking it
over t, then the marker, then the follow decides whether a match ends at t, and threads started at
each earlier position decide whether a shorter match (a lazy pattern) would have ended first. When
the answer differs between two follows (the context, not the terminal, decides) the derivation
refuses (`CannotDerive`) rather than guess.
"""

from __future__ import annotations

from ._regular import (
    ALL, DFA, END, MARK, Alphabet, CannotDerive, alt, cat, from_pattern, has_lazy, has_lookaround, intersect, is_empty,
    minimize, ranges_in, rset, star, to_dfa,
)


# --- the match encoding -------------------------------------------------------------------------------
def _encode(tree, cont):
    """The strings `u` = (what the pattern matches) MARK (the rest of the input) whose pattern
    match continues with `cont` after `tree`: look-aheads become intersections with what follows
    them, reading through the marker."""
    kind = tree[0]
    if kind == "set":
        return cat(tree, cont)
    if kind == "cat":
        for item in reversed(tree[1]):
            cont = _encode(item, cont)
        return cont
    if kind == "alt":
        return alt(*(_encode(o, cont) for o in tree[1]))
    if kind == "rep":
        if has_lookaround(tree[1]):
            raise CannotDerive("a look-around inside a repetition")
        return cat(tree, cont)
    if kind == "look":
        # the look-ahead's pattern, then anything: its own look-aheads see to the end of the input
        seen = ("mark_transparent", _encode(tree[2], star(rset(ALL))))
        return ("and", cont, seen if tree[1] else ("not", seen))
    raise CannotDerive(f"unknown pattern node {kind}")


def token_language(pattern: str, flags="", follow=None) -> DFA:
    """The strings the terminal `pattern` takes, as the lexer reads it, when what follows it is one
    of the strings of `follow` (a pattern tree over text and END; None: anything).

    A pattern with a lazy repetition takes the shortest match, any other a match that ends where
    the follow lets it. A pattern whose top level is an alternation with a lazy first option
    (`(?:A+?(?=X)|A+)`) takes the first option's shortest match when it has one, else the later
    option's: the first decides every follow but the end of the input, the later one the end
    (where the first finds nothing), and a string belongs only if both agree on it.
    Raises `CannotDerive` when the follow language does not decide the question.
    """
    tree = from_pattern(pattern, flags)
    follow_tree = follow if follow is not None else star(rset(ALL))
    classes: set = set()
    ranges_in(tree, classes)
    ranges_in(follow_tree, classes)
    alphabet = Alphabet(classes)
    mark_then_rest = cat(rset(((MARK, MARK),)), star(rset(ALL)))
    f = to_dfa(follow_tree, alphabet)
    split = _split_first_option(tree)
    if split is None:
        q = to_dfa(_encode(tree, mark_then_rest), alphabet)
        return _token_automaton(q, f, shortest=has_lazy(tree))
    first, later = split
    end = to_dfa(rset(((END, END),)), alphabet)
    not_end = intersect(f, DFA(alphabet, end.trans, frozenset(range(len(end.trans))) - end.accept, end.start))
    q1 = to_dfa(_encode(first, mark_then_rest), alphabet)
    result = _token_automaton(q1, not_end, shortest=True) if not is_empty(not_end) else None
    if not is_empty(intersect(f, end)):
        q2 = to_dfa(_encode(later, mark_then_rest), alphabet)
        at_end = intersect(_token_automaton(q1, end, shortest=True, none_anywhere=True),
                           _token_automaton(q2, end, shortest=False))
        result = at_end if result is None else intersect(result, at_end)
    if result is None:
        raise CannotDerive("an empty follow language")
    return result


def _split_first_option(tree):
    """(prefix then first option, prefix then the later options) for `prefix (?:A|B)` with A
    lazy; None for any other shape."""
    items = tree[1] if tree[0] == "cat" else (tree,)
    for i, item in enumerate(items):
        if item[0] == "alt" and has_lazy(item[1][0]):
            rest = item[1][1:]
            return (cat(*items[:i], item[1][0], *items[i + 1:]), cat(*items[:i], alt(*rest), *items[i + 1:]))
    return None


def _token_automaton(q: DFA, follow: DFA, *, shortest: bool, none_anywhere: bool = False) -> DFA:
    """The token automaton of match automaton `q` under `follow`. `none_anywhere`: instead, the
    strings in which no match ends at all (for any follow)."""
    a = q.alphabet
    text = sorted(a.text_atoms())
    live = q.live()
    verdicts: dict[int, str] = {}

    def verdict(state: int) -> str:
        """'all', 'none' or 'some': whether the rest of the input can be every follow, none, some."""
        if state not in verdicts:
            if state not in live:
                verdicts[state] = "none"
            else:
                residual = DFA(a, q.trans, q.accept, state)
                meet = intersect(residual, follow)
                if is_empty(meet):
                    verdicts[state] = "none"
                else:
                    missing = intersect(follow, DFA(a, q.trans, frozenset(range(len(q.trans))) - q.accept, state))
                    verdicts[state] = "all" if is_empty(missing) else "some"
        return verdicts[state]

    def after_mark(state: int) -> int:
        return q.trans[state][a.mark]

    start = (q.start, frozenset())
    index = {start: 0}
    order = [start]
    trans, accept = [], set()
    dead_key = (None, frozenset())
    for main, threads in order:
        if main is None:  # the sink
            i = index[dead_key]
            trans.append([i] * len(a.atoms))
            continue
        ending = verdict(after_mark(main))
        blocked = [verdict(r) for r in threads]
        if none_anywhere:
            if ending == "none" and all(v == "none" for v in blocked):
                accept.add(index[(main, threads)])
        elif shortest and (ending == "some" or "some" in blocked):
            raise CannotDerive("the follow language does not decide where the terminal ends")
        elif shortest and ending == "all" and "all" not in blocked:
            accept.add(index[(main, threads)])
        elif not shortest and ending != "none":
            # a greedy terminal: a match that ends here for some follows. Where a longer match
            # would take the follow's first characters (`thought` then a newline), the longer
            # token then a shorter follow spell the same text: the language is the same.
            accept.add(index[(main, threads)])
        row = [0] * len(a.atoms)
        for x in range(len(a.atoms)):
            if x not in text or main not in live:
                key = dead_key
            else:
                moved = {q.trans[r][x] for r in threads}
                if shortest or none_anywhere:
                    moved.add(q.trans[after_mark(main)][x])
                key = (q.trans[main][x], frozenset(r for r in moved if r in live))
            if key not in index:
                index[key] = len(order)
                order.append(key)
            row[x] = index[key]
        trans.append(row)
    return minimize(DFA(a, trans, frozenset(accept)))

