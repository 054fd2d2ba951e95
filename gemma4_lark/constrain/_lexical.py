"""What every tool's rules share, read from the grammar: the format's punctuation, and the strings,
numbers and keys as the grammar's STRING, INTEGER, FLOAT and KEY (as `_translate.terminal_text`
derives them: the one derivation every export uses, where a call block's parser expects them);
and rendered text as IR, each punctuation mark a literal of its own."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable, Mapping

from .. import tokens
from ..grammar import BLOCK_STARTS, terminal_literal
from ..render.values import ValueWriter, key_bare_if_possible, python_number
from . import _numbers as numbers, _translate as translate, ir


def class_inside(codes: Iterable[int]) -> str:
    """The inside of a character class for a set of code points."""
    return ir.char_class(ir.merge_ranges((c, c) for c in codes)).chars


def fixed_literal(name: str) -> str:
    text = terminal_literal(name)
    if text is None:
        raise NotImplementedError(f"terminal {name} is no longer a fixed string")
    return text


@dataclass(frozen=True)
class Pieces:
    """What every tool's rules share, built once from the grammar."""

    rules: Mapping[str, ir.Expr]
    lbrace: ir.Expr
    rbrace: ir.Expr
    lbracket: ir.Expr
    rbracket: ir.Expr
    comma: ir.Expr
    colon: ir.Expr
    key_chars: frozenset[int]  # KEY is one or more of these

    @property
    def punctuation_chars(self) -> frozenset[str]:
        """The characters of the format's punctuation: `{ } [ ] , :`, read from the grammar."""
        marks = (self.lbrace, self.rbrace, self.lbracket, self.rbracket, self.comma, self.colon)
        return frozenset("".join(text for mark in marks for text in literal_texts(mark)))


def _text_of(name: str) -> ir.Expr:
    """A terminal without markers: its language as IR."""
    head, body, tail = translate.terminal_text(name, BLOCK_STARTS)
    if head or tail:
        raise NotImplementedError(f"{name} now starts or ends with a marker")
    return body


@functools.lru_cache(maxsize=1)
def shared_pieces() -> Pieces:
    punctuation = {n: ir.Literal(fixed_literal(n)) for n in ("LBRACE", "RBRACE", "LBRACKET", "RBRACKET", "COMMA", "COLON")}
    opener, content, closer = translate.terminal_text("STRING", BLOCK_STARTS)
    if not (opener and closer):
        raise NotImplementedError("STRING is no longer a delimiter, content and a delimiter")
    rules: dict[str, ir.Expr] = {
        # the content as a rule of its own: a regular one, which a printer may make one lexeme
        "tool_string": ir.seq(ir.Special(opener), ir.Ref("tool_string_content"), ir.Special(closer)),
        "tool_string_content": content,
        "tool_integer": _text_of("INTEGER"),
        "tool_float": _text_of("FLOAT"),
        "tool_key": _text_of("KEY"),
    }
    rules["tool_number"] = ir.choice(ir.Ref("tool_integer"), ir.Ref("tool_float"))
    # an `integer` may be written as an integral float (`3.0`): JSON Schema's integers include
    # it, and the renderers write a float 3.0 so
    rules["tool_whole"] = ir.choice(ir.Ref("tool_integer"), numbers.integral_float(_text_of("INTEGER")))
    rules["tool_boolean"] = ir.choice(ir.Literal(fixed_literal("TRUE")), ir.Literal(fixed_literal("FALSE")))
    rules["tool_null"] = ir.Literal(fixed_literal("NULL"))
    key_ranges = translate.terminal_chars("KEY", BLOCK_STARTS)
    if key_ranges is None:
        raise NotImplementedError("KEY is no longer one or more characters of one class")
    key_chars = frozenset(c for c in range(128) if any(lo <= c <= hi for lo, hi in key_ranges))
    p = punctuation
    # any value, as the format writes it (for schemas that allow anything)
    any_member = ir.seq(ir.choice(ir.Ref("tool_key"), ir.Ref("tool_string")), p["COLON"], ir.Ref("tool_any"))
    rules["tool_any_object"] = ir.seq(p["LBRACE"], ir.Repeat(ir.seq(any_member, ir.Repeat(ir.seq(p["COMMA"], any_member))), 0, 1), p["RBRACE"])
    rules["tool_any_array"] = ir.seq(p["LBRACKET"], ir.Repeat(ir.seq(ir.Ref("tool_any"), ir.Repeat(ir.seq(p["COMMA"], ir.Ref("tool_any")))), 0, 1), p["RBRACKET"])
    rules["tool_any"] = ir.choice(*(ir.Ref(n) for n in ("tool_string", "tool_number", "tool_boolean", "tool_null", "tool_any_object", "tool_any_array")))
    return Pieces(rules, p["LBRACE"], p["RBRACE"], p["LBRACKET"], p["RBRACKET"], p["COMMA"], p["COLON"], key_chars)


# ------------------------------------------------------------------------ canonical text ----

# The official renderer's writer for arguments: keys sorted at every level, bare when KEY takes them.
WRITER = ValueWriter(number=python_number, key=key_bare_if_possible, sort_keys=True, unsafe="error")


def text_expr(text: str) -> ir.Expr:
    """Rendered text as IR: the string delimiters as `Special`, the strings' texts literal, and
    the structure around them as `marks_apart` writes it."""
    parts: list[ir.Expr] = []
    for i, piece in enumerate(text.split(tokens.STRING_DELIMITER)):
        if i:
            parts.append(ir.Special(tokens.STRING_DELIMITER))
        if piece:
            parts.append(ir.Literal(piece) if i % 2 else marks_apart(piece))
    return ir.seq(*parts) if parts else ir.Seq(())


def marks_apart(text: str) -> ir.Expr:
    """Text outside strings as IR: each of the format's punctuation marks (`{ } [ ] , :`) a literal
    of its own, the runs between them literals. So no literal of a tool's rules holds a mark
    beside other text: a greedy lexer offered `{a:1}` (a constant) beside `{` (an object) would
    follow the long literal and never come back (docs/constrained-decoding.md, How they are made)."""
    marks = shared_pieces().punctuation_chars
    parts: list[ir.Expr] = []
    run = ""
    for char in text:
        if char in marks:
            if run:
                parts.append(ir.Literal(run))
                run = ""
            parts.append(ir.Literal(char))
        else:
            run += char
    if run:
        parts.append(ir.Literal(run))
    return ir.seq(*parts) if parts else ir.Seq(())


def literal_texts(expr: ir.Expr):
    """The text of every Literal in `expr` itself (not in the rules it refers to)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Literal):
            yield e.text
        elif isinstance(e, ir.Seq):
            stack.extend(e.items)
        elif isinstance(e, ir.Choice):
            stack.extend(e.options)
        elif isinstance(e, ir.Repeat):
            stack.append(e.item)

