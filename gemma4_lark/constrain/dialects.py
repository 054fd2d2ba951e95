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

import re
from typing import Callable

from ._analysis import has_special, reachable, refs, regular_rules
from ._greedy import greedy_safe
from ._lexemes import literal_pieces
from .ir import (
    CharClass, Choice, Expr, Grammar, Literal, Ref, Repeat, Seq, Special, class_ranges, class_text,
    escape_code_point, merge_ranges,
)


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
                return " ".join(quote(p, wide=True) for p in literal_pieces(e.text))
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
        return not any(True for _ in refs(e)) and not has_special(e)

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
