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

from typing import Callable

from .ir import (
    CharClass, Choice, Expr, Grammar, Literal, Ref, Repeat, Seq, Special, class_ranges, class_text,
    escape_code_point,
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
    any path of references from them refers back to itself (nor to a rule that is not regular)."""
    missing = [n for body in grammar.rules.values() for n in refs(body) if n not in grammar.rules]
    if missing:
        raise ValueError(f"rule {missing[0]!r} is referred to but not defined")
    verdict: dict[str, bool] = {}

    def regular(name: str, path: tuple[str, ...]) -> bool:
        if name in verdict:
            return verdict[name]
        if name in path:
            return False
        body = grammar.rules[name]
        ok = not _has_special(body) and all(regular(n, path + (name,)) for n in refs(body))
        if not ok or not path:  # a verdict reached inside a cycle's walk may depend on the path
            verdict[name] = ok
        return ok

    return frozenset(name for name in grammar.rules if regular(name, ()))


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


# --- shared spelling --------------------------------------------------------------------------------
def quote(text: str) -> str:
    """A double-quoted literal every dialect reads alike: `\\"`, `\\\\`, `\\n`, `\\r`, `\\t`, and
    `\\xNN` for other control characters; everything else as itself."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
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


# --- the Lark family (llguidance, lark) --------------------------------------------------------------
class _LarkPrinter:
    """llguidance's dialect and plain Lark differ in three spellings: special tokens, bounded
    repetition, and how an empty match is written."""

    def __init__(self, grammar: Grammar, *, special: Callable[[str], str], bounded: Callable[[str, int, int | None], str]):
        self.grammar = grammar
        self.special = special
        self.bounded = bounded
        self.regular = regular_rules(grammar)
        self.names = {n: (n.upper() if n in self.regular else n) for n in grammar.rules}
        if grammar.start in self.regular:
            self.names[grammar.start] = grammar.start  # a rule (lowercase) that holds one terminal

    def text(self, header: str) -> str:
        lines = [header] if header else []
        for name in reachable(self.grammar):
            body = self.grammar.rules[name]
            is_terminal = name in self.regular and self.names[name] != name
            label = self.names[name] if name != self.grammar.start else "start"
            lines.append(f"{label}: {self.expr(body, terminal=is_terminal, top=True)}")
        return "\n".join(lines) + "\n"

    def expr(self, e: Expr, *, terminal: bool, top: bool = False) -> str:
        if isinstance(e, Literal):
            return quote(e.text)
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
        return text if isinstance(e, (Literal, Special, CharClass, Ref)) else "(" + text + ")"


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
    return _LarkPrinter(grammar, special=lambda t: t, bounded=_braces).text("%llguidance {}\n")


def to_lark(grammar: Grammar) -> str:
    return _LarkPrinter(grammar, special=quote, bounded=_tilde).text("")


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


def _bnf_class(chars: str) -> str:
    return "[" + class_text(class_ranges(chars), item=_bnf_char) + "]"


def _bnf(grammar: Grammar, special: Callable[[str], str]) -> str:
    names = {n: _bnf_name(n) for n in grammar.rules}
    names[grammar.start] = "root"
    if len(set(names.values())) != len(names):
        raise ValueError("two rule names differ only by `_` and `-`")

    def expr(e: Expr) -> str:
        if isinstance(e, Literal):
            return quote(e.text)
        if isinstance(e, Special):
            return special(e.token)
        if isinstance(e, CharClass):
            return _bnf_class(e.chars)
        if isinstance(e, Ref):
            return names[e.name]
        if isinstance(e, Seq):
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
    return _bnf(grammar, quote)


PRINTERS: dict[str, Callable[[Grammar], str]] = {
    "llguidance": to_llguidance,
    "lark": to_lark,
    "gbnf": to_gbnf,
    "xgrammar": to_xgrammar,
}
