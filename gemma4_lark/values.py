"""From grammar rules to Python values: the inline transformer run by the LALR parser.

The parser calls these methods as it reduces each rule (no parse tree is built, nothing recurses),
so a 10,000-deep list costs no Python stack. Methods named after terminals receive the terminal's
text and position; other terminals arrive as plain strings. Per-parse state (the nesting limit and the duplicate keys
seen) lives in a context variable, so one parser object serves every thread and task.

Value semantics (docs/README.md, "Values in Python"): strings verbatim, integers exact (up to
`MAX_INTEGER_DIGITS` digits, beyond which the parse fails with a positioned error), floats as
Python floats, `null`,
`None` and `none` as None, bare words as str, objects as dicts in insertion order (the last of a
repeated key wins).
"""

from __future__ import annotations

import contextvars
import itertools
import sys
from dataclasses import dataclass, field

from .model import (
    AwaitingResponse, Media, OutputDocument, StopPart, TextPart, ThinkSwitch, Thought, ThoughtPrefill, ToolCall,
    ToolDeclaration, ToolResponse, Transcript, Turn,
)
from .schema.lexeme import LosslessCall, Scalar
from .tokens import STRING_DELIMITER
from .error_base import Gemma4Error

# What other modules may use; the transformers (`Build`, `LosslessBuild`) and the per-parse state
# (`current`) are the strict parser's own.
__all__ = [
    "DepthExceeded", "IntegerTooLong", "Located", "MAX_INTEGER_DIGITS", "NumberOutOfRange", "check_integer_length",
    "decode_integer", "integer_digit_limit",
]

_DELIMITER_LENGTH = len(STRING_DELIMITER)

# How deep arrays and objects may nest before a parse refuses them: the parsers' default, and
# what the renderers refuse to write (render or refuse, never write what cannot be read back).
DEFAULT_MAX_DEPTH = 512


@dataclass
class ParseState:
    """What one parse tracks while the parser runs."""

    max_depth: int
    depth: int = 0
    duplicates: list = field(default_factory=list)  # (key, pos) of each repeated key


current: contextvars.ContextVar[ParseState] = contextvars.ContextVar("gemma4_parse_state")


_INFINITY = float("inf")


class NumberOutOfRange(Gemma4Error):
    """A number beyond the range of a double."""

    def __init__(self, pos: int, text: str):
        self.pos = pos
        self.text = text


class IntegerTooLong(Gemma4Error):
    """An integer with more digits than `MAX_INTEGER_DIGITS`."""

    def __init__(self, pos: int, text: str, digits: int):
        self.pos = pos
        self.text = text
        self.digits = digits


# The grammar sets no limit on an integer's size; the decoder does. An integer is decoded exactly
# up to CPython's default limit for converting between int and str, 4,300 digits: whatever the
# parser returns can then be printed and JSON-encoded by any consumer in a default interpreter (an
# int of 5,000 digits makes `json.dumps` raise ValueError), and converting it costs microseconds.
# A longer integer is a positioned syntax error, never Python's ValueError. A process that lowered
# the interpreter's limit (`sys.set_int_max_str_digits`) gets that lower bound.
MAX_INTEGER_DIGITS = 4300


def integer_digit_limit() -> int:
    """The most digits an integer may have: MAX_INTEGER_DIGITS, or the interpreter's lower limit."""
    interpreter = getattr(sys, "get_int_max_str_digits", lambda: 0)()  # Python 3.10.7+ has one
    return min(MAX_INTEGER_DIGITS, interpreter) if interpreter else MAX_INTEGER_DIGITS


def check_integer_length(text: str, pos: int) -> None:
    """Raise `IntegerTooLong` if the INTEGER token `text` at `pos` has too many digits."""
    digits = len(text) - text.startswith("-")
    if digits > integer_digit_limit():
        raise IntegerTooLong(pos, text[:20] + "…", digits)


def decode_integer(text: str, pos: int = 0) -> int:
    """The exact value of an INTEGER token; `IntegerTooLong` beyond `integer_digit_limit()` digits."""
    if len(text) > 640:  # the lowest limit an interpreter can have: below it int() always converts
        check_integer_length(text, pos)
    return int(text)


class DepthExceeded(Gemma4Error):
    """Raised from the lexer when brackets nest deeper than the parse allows."""

    def __init__(self, pos: int, max_depth: int):
        self.pos = pos
        self.max_depth = max_depth


class Located(str):
    """A terminal's text that remembers where it stood (for keys: duplicate-key diagnostics)."""

    __slots__ = ("pos",)

    def __new__(cls, text: str, pos: int):
        located = str.__new__(cls, text)
        located.pos = pos
        return located


def _unquote(token: str) -> str:
    return token[_DELIMITER_LENGTH:-_DELIMITER_LENGTH]


class Build:
    """Methods named after the grammar's rules and some of its terminals."""

    # --- terminals ---------------------------------------------------------------------------
    def LBRACE(self, text: str, pos: int) -> str:
        state = current.get()
        state.depth += 1
        if state.depth > state.max_depth:
            raise DepthExceeded(pos, state.max_depth)
        return text

    LBRACKET = LBRACE

    def RBRACE(self, text: str, pos: int) -> str:
        current.get().depth -= 1
        return text

    RBRACKET = RBRACE

    KEY = STRING = FLOAT = Located

    def INTEGER(self, text: str, pos: int) -> str:
        if len(text) > 640:  # checked as it is read, so the error has the token's position
            check_integer_length(text, pos)
        return text

    # --- values ------------------------------------------------------------------------------
    def string(self, token):
        return _unquote(token)

    def integer(self, token):
        return decode_integer(token)

    def float(self, token):
        value = float(token)
        if value in (_INFINITY, -_INFINITY):  # 1e1000 overflows: a number has to be a double
            raise NumberOutOfRange(token.pos, str(token))
        return value

    def true(self, _token):
        return True

    def false(self, _token):
        return False

    def null(self, _token):
        return None

    def bare_word(self, token):
        return str(token)

    def bare_key(self, token):
        return token

    def string_key(self, token):
        return Located(_unquote(token), token.pos)

    def member(self, key, _colon, value):
        return key, value

    def object(self, items):
        # between the braces, every other item is a comma
        result = {str(key): value for key, value in itertools.islice(items, 1, len(items) - 1, 2)}
        if len(result) != (len(items) - 1) // 2:  # a key repeated
            seen = set()
            for key, _ in itertools.islice(items, 1, len(items) - 1, 2):
                if key in seen:
                    current.get().duplicates.append((str(key), key.pos))
                seen.add(key)
        return result

    def array(self, items):
        del items[-1]     # `]`
        del items[::2]    # `[` and the commas, in place: no second list of n items
        return items

    object.children_list = array.children_list = True

    def value_document(self, value):
        return value

    # --- blocks ------------------------------------------------------------------------------
    def call_block(self, _open, _keyword, name, arguments, _close):
        return ToolCall(str(name), arguments)

    def response_block(self, _open, _keyword, name, fields, _close):
        return ToolResponse(str(name), fields)

    def declaration_block(self, _open, _keyword, name, fields, _close):
        return ToolDeclaration(str(name), fields)

    def response_blocks(self, *blocks):
        return list(blocks)

    declaration_blocks = response_blocks

    # --- documents ---------------------------------------------------------------------------
    def text(self, token):
        return TextPart(str(token))

    def thought(self, _open, *rest):
        return Thought(rest[0] if len(rest) == 2 else "")

    def stop_marker(self, token):
        return StopPart(str(token))

    def awaiting_response(self, _token):
        return AwaitingResponse()

    def thought_prefill(self, _token):
        return ThoughtPrefill()

    def think_switch(self, _token):
        return ThinkSwitch()

    def media(self, token):
        return Media(token[2:-2])  # `<|image|>` -> "image"

    def model_output(self, *parts):
        return OutputDocument(list(parts))

    def turn(self, _open, role_line, *parts):
        # the closer is a token (a str), every other item a part
        closed = any(isinstance(p, str) for p in parts)
        return Turn(role_line[:-1], [p for p in parts if not isinstance(p, str)], closed)

    def transcript(self, *items):
        bos = bool(items) and isinstance(items[0], str)
        return Transcript(list(items[1:] if bos else items), bos)


class LosslessBuild(Build):
    """`Build` for decoding against the declared tools: every scalar becomes a `Scalar` holding its
    value, the text it was read from (for a bare one) and its position, and a call block a
    `LosslessCall`, so typing by a schema can read `02134` as the string it was written as. Used
    only through `parser.parse_lossless`; nothing it builds reaches a user untyped."""

    def INTEGER(self, text: str, pos: int) -> str:
        return Located(super().INTEGER(text, pos), pos)

    TRUE = FALSE = NULL = NULL_PYTHON = NULL_OMP = BARE_WORD = NAME = Located

    def string(self, token):
        return Scalar(_unquote(token), None, token.pos)

    def integer(self, token):
        return Scalar(decode_integer(token), str(token), token.pos)

    def float(self, token):
        return Scalar(super().float(token), str(token), token.pos)

    def true(self, token):
        return Scalar(True, str(token), token.pos)

    def false(self, token):
        return Scalar(False, str(token), token.pos)

    def null(self, token):
        return Scalar(None, str(token), token.pos)

    def bare_word(self, token):
        return Scalar(str(token), str(token), token.pos)

    def call_block(self, _open, _keyword, name, arguments, _close):
        return LosslessCall(str(name), arguments, name.pos)
