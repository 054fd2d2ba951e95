"""The grammar of record (`grammar/gemma4.lark`), translated into the IR.

Nothing here restates the format. The rules come from the loaded grammar's own definitions (Lark's
EBNF trees), the terminals from their patterns, and each terminal's language from
`_token_language.token_language`, which reads the pattern the way Lark's lexer runs it
(look-arounds, lazy repetitions) in the context the parser's tables give it (what can follow it).
What an engine needs on top is done once, here:

- Markers are special tokens: a terminal whose text is one of Gemma's markers
  (`tokens.CONTROL_TOKENS`) becomes a `Special`, and a terminal whose every string starts or ends
  with a marker (a string's `<|"|>`, the thought's `<|channel>`) is split into the marker and the
  text beside it. A marker a terminal may hold inside (a string holding `<turn|>`) may also come
  as its token: the text around it becomes pieces, one lexeme each (`terminal_rules`).
- Ignored whitespace (`%ignore WS`) is written out: optional whitespace after each terminal, inside
  the same lexeme when the terminal is text (so a greedy lexer, llguidance's, never has to decide
  whether `a b ` ends a bare word or starts whitespace), and before the first terminal of a block.
  A terminal that outranks the ignored one (free text) takes that whitespace itself.
- Free text is never followed directly by free text: Lark's lexer would read both as one token, and
  two texts side by side could spell a control token between them.

`_turns` builds the grammars the exports start from with `Builder`: one call block (the language of
`parse_call`), a whole model turn.
"""

from __future__ import annotations

import functools

import lark
from lark.load_grammar import GrammarBuilder

from .. import grammar as source
from .._compat import grammar_definitions, ignored_terminal_names
from .. import tokens
from . import _numbers as numbers, _regular as regular, _token_language
from .ir import Choice, Expr, Literal, Ref, Repeat, Seq, Special, choice, seq
from ._expressions import to_expr
from ._regular import CannotDerive

WS_RULE = "ws"


@functools.lru_cache(maxsize=1)
def _builder() -> GrammarBuilder:
    builder = GrammarBuilder()
    builder.load_grammar(source.grammar_text(), "gemma4")
    return builder


def definitions() -> dict:
    """The grammar's rules and terminals as Lark reads them, before it expands EBNF into BNF."""
    return grammar_definitions(_builder())  # Lark's own reading of the file; its public API offers BNF only


def _ignored() -> tuple[str, ...]:
    return tuple(ignored_terminal_names(_builder()))


def _terminal_defs() -> dict:
    return {t.name: t for t in source.terminals()}


def rule_name(name: str) -> str:
    """A grammar rule's name in the IR: lowercase, without Lark's leading underscores."""
    return name.lstrip("_")


def terminal_rule_name(name: str) -> str:
    """A terminal's rule in the IR: its name in lowercase, marked when a rule has that name."""
    lower = name.lower()
    return lower + "_t" if lower in {rule_name(n) for n in definitions() if n[0].islower() or n[0] == "_"} else lower


# --- follow languages ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _follows(starts: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """For each terminal, the terminals the parser for `starts` accepts right after it ($END for
    the end of the input): read from its LALR tables."""
    table = source.build(starts).parser.parser.parser.parse_table  # the tables the parser runs
    after: dict[str, set] = {}
    for row in table.states.values():
        for symbol, (action, target) in row.items():
            if action.name == "Shift" and symbol.isupper():
                after.setdefault(symbol, set()).update(s for s in table.states[target] if s.isupper() or s == "$END")
    return {k: frozenset(v) for k, v in after.items()}


def _follow_tree(name: str, starts: tuple[str, ...]):
    """What can follow terminal `name`: optional ignored whitespace (unless the terminal outranks
    it and so would have taken it), then the start of a following terminal, then anything; or
    the end of the input. Look-arounds of the following terminals are left out: a larger follow
    language only makes the derivation stricter."""
    defs = _terminal_defs()
    nexts = _follows(starts).get(name, frozenset())
    ignored = [defs[i] for i in _ignored()]
    if all(defs[name].priority > i.priority for i in ignored):
        # free text: the rules never put two side by side (`no_text_after_text`), as the lexer
        # never reads two
        nexts = nexts - {name}
    options = []
    for other in sorted(nexts):
        if other == "$END":
            continue
        options.append(_strip_lookarounds(regular.from_pattern(defs[other].pattern.value, defs[other].pattern.flags)
                                          if defs[other].pattern.type == "re" else regular.literal(defs[other].pattern.value)))
    anything = regular.star(regular.rset(regular.ALL))
    skip = [i for i in ignored if defs[name].priority <= i.priority]
    follow = regular.cat(regular.alt(*options), anything) if options else None
    if follow is not None and skip:
        follow = regular.cat(*(regular.star(regular.from_pattern(i.pattern.value)) for i in skip), follow)
    end = regular.rset(((regular.END, regular.END),))
    if "$END" in nexts:
        tail = regular.cat(*(regular.star(regular.from_pattern(i.pattern.value)) for i in skip), end) if skip else end
        follow = regular.alt(follow, tail) if follow is not None else tail
    if follow is None:
        raise CannotDerive(f"nothing can follow {name}")
    return follow


def _strip_lookarounds(tree):
    kind = tree[0]
    if kind == "look":
        return regular.EPS
    if kind in ("cat", "alt"):
        items = tuple(_strip_lookarounds(t) for t in tree[1])
        return regular.cat(*items) if kind == "cat" else regular.alt(*items)
    if kind == "rep":
        return ("rep", _strip_lookarounds(tree[1]),) + tree[2:]
    return tree


# --- terminals ------------------------------------------------------------------------------------------
def _marker_of(text: str) -> bool:
    return text in tokens.CONTROL_TOKENS


@functools.lru_cache(maxsize=None)
def terminal_language(name: str, starts: tuple[str, ...]):
    """The automaton of the strings the lexer takes for terminal `name` where the parser for
    `starts` expects it."""
    term = _terminal_defs()[name]
    return _token_language.token_language(term.pattern.value, term.pattern.flags, _follow_tree(name, starts))


def terminal_text(name: str, starts: tuple[str, ...]) -> tuple[str, Expr, str]:
    """Terminal `name`'s language where the parser for `starts` expects it, as (the marker every
    string starts with or "", the text between as IR, the marker every string ends with or "").
    Markers the text may hold inside stay text here (`terminal_rules` offers them as tokens)."""
    head, mid, tail = _split_markers(terminal_language(name, starts))
    if name in NUMBER_TERMINALS:
        return head, _number_text(name, mid, starts), tail
    if _accepts_only_empty(mid):
        return head, Seq(()), tail
    if mid.start in mid.accept:
        return head, Repeat(to_expr(_non_empty(mid)), 0, 1), tail
    return head, to_expr(mid), tail


def terminal_chars(name: str, starts: tuple[str, ...]) -> tuple[tuple[int, int], ...] | None:
    """The ranges of the characters C when terminal `name`'s language is exactly C+ (one or more
    characters of one class) where the parser for `starts` expects it; None otherwise."""
    dfa = terminal_language(name, starts)
    live = dfa.live()
    atoms = [x for x, target in enumerate(dfa.trans[dfa.start]) if target in live]
    targets = {dfa.trans[dfa.start][x] for x in atoms}
    if dfa.start in dfa.accept or len(targets) != 1:
        return None
    (then,) = targets
    if then not in dfa.accept or any((dfa.trans[then][x] in live) != (x in atoms) for x in range(len(dfa.trans[then]))):
        return None
    if any(dfa.trans[then][x] != then for x in atoms):
        return None
    return dfa.alphabet.ranges_of(atoms)


@functools.lru_cache(maxsize=None)
def terminal_rules(name: str, starts: tuple[str, ...], base: str, trailing: Expr | None) -> dict[str, Expr]:
    """The rules of terminal `name`: `base`, and the pieces it refers to.

    A marker at either end of every string (a string's `<|"|>`) is the special token. A marker
    the terminal may hold inside (a string may hold `<turn|>`, free text `<|"|>`) may come as the
    special token too, as a tokenizer writes it: then the text around it is split into pieces,
    each a lexeme, following the terminal's automaton through the marker. `trailing` (the ignored
    whitespace) goes inside the last piece's lexeme."""
    term = _terminal_defs()[name]
    if term.pattern.type == "str":
        text = term.pattern.value
        return {base: seq(Special(text) if _marker_of(text) else Literal(text), *([trailing] if trailing else []))}
    head, mid, tail = _split_markers(terminal_language(name, starts))
    rules: dict[str, Expr] = {}
    if name in NUMBER_TERMINALS:
        body: Expr | None = seq(_number_text(name, mid, starts), *([trailing] if trailing and not tail else []))
    else:
        body = _pieces(mid, base, rules, None if tail else trailing)
    parts: list[Expr] = [Special(head)] if head else []
    if body is not None:
        parts.append(body)
    if tail:
        parts.append(Special(tail))
        if trailing:
            parts.append(trailing)
    rules[base] = seq(*parts)
    return rules


# The number terminals: the exports take only the numbers the decoder reads (`numbers`).
NUMBER_TERMINALS = ("INTEGER", "FLOAT")


def _number_text(name: str, dfa, starts: tuple[str, ...]) -> Expr:
    integer = to_expr(_split_markers(terminal_language("INTEGER", starts))[1])
    if name == "INTEGER":
        return numbers.bounded_integer(integer)
    return numbers.finite_float(numbers.digit_class(integer))


def _pieces(dfa, base: str, rules: dict, trailing: Expr | None) -> Expr | None:
    """The strings of `dfa` as pieces of text and marker tokens (see `terminal_rules`); None for
    the empty string alone."""
    live = dfa.live()
    moves: dict[int, dict[tuple[str, int], set]] = {}
    for state in sorted(live):
        for marker in tokens.CONTROL_TOKENS:
            target = dfa.run(state, map(ord, marker))
            if target in live:
                moves.setdefault(state, {}).setdefault((marker, target), set()).add(state)
    if not moves:  # no marker inside: one lexeme
        if _accepts_only_empty(dfa):
            return trailing
        if dfa.start in dfa.accept:  # may be empty: the lexeme optional, never empty itself
            text = to_expr(_non_empty(dfa))
            return choice(seq(text, trailing), trailing) if trailing else Repeat(text, 0, 1)
        return seq(to_expr(dfa), *([trailing] if trailing else []))
    entries = [dfa.start]
    names: dict[int, str] = {}

    def entry(state: int) -> Ref:
        if state not in names:
            names[state] = f"{base}_{len(names)}"
            entries.append(state)
        return Ref(names[state])

    first = entry(dfa.start)
    entries.pop()  # entry() appended the start again
    chunk_names: dict[Expr, str] = {}
    done = set()
    while entries:
        e = entries.pop(0)
        if e in done:
            continue
        done.add(e)
        options: list[Expr] = []
        end = _chunk(dfa, e, dfa.accept)
        if end is not None:
            last = seq(end, *([trailing] if trailing else []))
            name = chunk_names.get(last)
            if name is None:
                name = chunk_names[last] = f"{names[e]}_{len(chunk_names)}"
                rules[name] = last
            options.append(Ref(name))
        # markers that lead from the same states to the same state share one option
        groups: dict[tuple[int, frozenset], list[str]] = {}
        sources_of: dict[tuple[str, int], set] = {}
        for state, by in moves.items():
            for pair, states in by.items():
                sources_of.setdefault(pair, set()).update(states)
        for (marker, target), sources in sorted(sources_of.items()):
            groups.setdefault((target, frozenset(sources)), []).append(marker)
        for (target, sources), markers in sorted(groups.items(), key=lambda g: sorted(g[1])):
            before = _chunk(dfa, e, sources)
            if before is None and e not in sources:
                continue
            piece: list[Expr] = []
            if before is not None:
                name = chunk_names.get(before)
                if name is None:
                    name = chunk_names[before] = f"{names[e]}_{len(chunk_names)}"
                    rules[name] = before
                piece.append(Repeat(Ref(name), 0, 1) if e in sources else Ref(name))
            options.append(seq(*piece, choice(*(Special(m) for m in sorted(markers))), entry(target)))
        body = choice(*options) if options else None
        if e in dfa.accept:
            empty = trailing
            body = (choice(body, empty) if empty is not None else Repeat(body, 0, 1)) if body is not None else empty
        rules[names[e]] = body if body is not None else Literal("")
    return first


def _chunk(dfa, start: int, ends) -> Expr | None:
    """The non-empty text leading from `start` to a state of `ends`, or None when there is none."""
    sub = regular.minimize(_non_empty(regular.DFA(dfa.alphabet, dfa.trans, frozenset(ends), start)))
    return None if regular.is_empty(sub) else to_expr(sub)


def _split_markers(dfa):
    """(marker every string starts with or "", the automaton of what is between, marker every
    string ends with or "")."""
    head = tail = ""
    for marker in sorted(tokens.CONTROL_TOKENS, key=len, reverse=True):
        if not head and _all_start_with(dfa, marker):
            head = marker
            dfa = regular.DFA(dfa.alphabet, dfa.trans, dfa.accept, dfa.run(dfa.start, map(ord, marker)))
    for marker in sorted(tokens.CONTROL_TOKENS, key=len, reverse=True):
        ends = frozenset(s for s in range(len(dfa.trans)) if dfa.run(s, map(ord, marker)) in dfa.accept)
        quotient = regular.DFA(dfa.alphabet, dfa.trans, ends, dfa.start)
        if _all_end_with(dfa, marker) and not regular.is_empty(quotient):
            tail = marker
            dfa = quotient
            break
    return head, regular.minimize(dfa), tail


def _all_start_with(dfa, marker: str) -> bool:
    """Every string of `dfa` starts with `marker` (and it has some)."""
    state = dfa.start
    live = dfa.live()
    for ch in marker:
        a = dfa.alphabet.atom_of(ord(ch))
        if state in dfa.accept:
            return False
        if any(dfa.trans[state][x] in live for x in range(len(dfa.alphabet.atoms)) if x != a):
            return False
        state = dfa.trans[state][a]
    return state in live


def _all_end_with(dfa, marker: str) -> bool:
    """Every string of `dfa` ends with `marker`: the strings that do not are none."""
    alphabet = dfa.alphabet
    not_ending = regular.to_dfa(regular.cat(regular.star(regular.rset(regular.TEXT)), regular.literal(marker)), alphabet)
    others = regular.DFA(alphabet, not_ending.trans, frozenset(range(len(not_ending.trans))) - not_ending.accept)
    return regular.is_empty(regular.intersect(dfa, others)) and not regular.is_empty(dfa)


def _accepts_only_empty(dfa) -> bool:
    live = dfa.live()
    return dfa.start in dfa.accept and all(t not in live for t in dfa.trans[dfa.start])


def _non_empty(dfa):
    """The same automaton without the empty string: a fresh start state with the start's moves."""
    trans = [list(row) for row in dfa.trans] + [list(dfa.trans[dfa.start])]
    return regular.DFA(dfa.alphabet, trans, dfa.accept, len(trans) - 1)


# --- rules ----------------------------------------------------------------------------------------------
class Builder:
    def __init__(self, starts: tuple[str, ...], exclude: frozenset[str] = frozenset()):
        self.starts = starts
        self.exclude = exclude  # grammar rules left out of every alternation that offers them
        self.defs = definitions()
        self.rules: dict[str, Expr] = {}
        self.priority = {t.name: t.priority for t in source.terminals()}
        self.ws_priority = max(_terminal_defs()[i].priority for i in _ignored())

    def rule(self, name: str) -> str:
        """Translate grammar rule `name` (and what it reaches); its IR name."""
        ir_name = rule_name(name)
        if ir_name not in self.rules:
            self.rules[ir_name] = Literal("")  # placeholder while translating (recursion)
            self.rules[ir_name] = self.expr(self.defs[name].tree)
        return ir_name

    def terminal(self, name: str) -> Expr:
        """A reference to terminal `name`'s rule, with the ignored whitespace after it (unless
        the terminal outranks the whitespace: free text takes it itself)."""
        ir_name = terminal_rule_name(name)
        if ir_name not in self.rules:
            trailing = None if self.priority[name] > self.ws_priority else Repeat(self.ws(), 0, 1)
            self.rules[ir_name] = Literal("")  # reserved while its pieces are made
            self.rules.update(terminal_rules(name, self.starts, ir_name, trailing))  # (a cached dict: copied)
        return Ref(ir_name)

    def ws(self) -> Expr:
        if WS_RULE not in self.rules:
            (name,) = _ignored()
            term = _terminal_defs()[name]
            self.rules[WS_RULE] = to_expr(regular.to_dfa(
                regular.from_pattern(term.pattern.value, term.pattern.flags),
                regular.Alphabet({r[1] for r in _sets(regular.from_pattern(term.pattern.value))})))
        return Ref(WS_RULE)

    def expr(self, tree) -> Expr:
        data = tree.data
        if data == "expansions":
            kept = [c for c in tree.children if not self._excluded(c)]
            if not kept:
                raise CannotDerive("every alternative of a rule was left out")
            return choice(*(self.expr(c) for c in kept))
        if data == "alias":
            return self.expr(tree.children[0])
        if data == "expansion":
            return seq(*(self.expr(c) for c in tree.children)) if tree.children else Literal("")
        if data == "expr":
            item, op = tree.children[0], tree.children[1]
            inner = self.expr(item)
            if op == "*":
                return self.no_text_after_text(Repeat(inner, 0, None))
            if op == "+":
                return self.no_text_after_text(Repeat(inner, 1, None))
            if op == "?":
                return Repeat(inner, 0, 1)
            if op == "~":
                lo = int(tree.children[2])
                hi = int(tree.children[3]) if len(tree.children) > 3 else lo
                return Repeat(inner, lo, hi)
            raise CannotDerive(f"operator {op!r} is not supported")
        if data == "value":
            (symbol,) = tree.children
            if isinstance(symbol, lark.grammar.Terminal):
                return self.terminal(symbol.name)
            return Ref(self.rule(symbol.name))
        raise CannotDerive(f"grammar construct {data!r} is not supported")

    def _excluded(self, tree) -> bool:
        """An alternative that is one reference to an excluded rule."""
        while tree.data in ("alias", "expansion", "value") and len(tree.children) >= 1:
            if tree.data == "expansion" and len(tree.children) != 1:
                return False
            child = tree.children[0]
            if not isinstance(child, lark.Tree):
                return isinstance(child, lark.grammar.NonTerminal) and child.name in self.exclude
            tree = child
        return False

    def is_text(self, e: Expr) -> bool:
        """A reference (through references) to the rule of a terminal outranking the ignored
        whitespace: free text, which the lexer never splits in two."""
        texts = {terminal_rule_name(t) for t, p in self.priority.items() if p > self.ws_priority}
        seen = set()
        while isinstance(e, Ref) and e.name not in seen:
            if e.name in texts:
                return True
            seen.add(e.name)
            e = self.rules.get(e.name)
        return False

    def no_text_after_text(self, rep: Repeat) -> Expr:
        """`(text | x | y)*` as `(text? (x | y))* text?`: two texts side by side are one token."""
        item = rep.item
        while isinstance(item, Ref) and isinstance(self.rules.get(item.name), (Ref, Choice)):
            item = self.rules[item.name]
        if not isinstance(item, Choice) or rep.max is not None:
            return rep
        rep = Repeat(item, rep.min, rep.max)
        texts = [o for o in rep.item.options if self.is_text(o)]
        if not texts:
            return rep
        others = [o for o in rep.item.options if not self.is_text(o)]
        text = choice(*texts)
        if not others:
            return Repeat(text, rep.min and 1, 1)
        body = Repeat(seq(Repeat(text, 0, 1), choice(*others)), rep.min, None)
        return seq(body, Repeat(text, 0, 1)) if rep.min == 0 else seq(body, Repeat(text, 0, 1))


def _sets(tree):
    if tree[0] == "set":
        yield tree
    elif tree[0] in ("cat", "alt"):
        for t in tree[1]:
            yield from _sets(t)
    elif tree[0] == "rep":
        yield from _sets(tree[1])
