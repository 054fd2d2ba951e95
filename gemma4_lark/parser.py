"""The strict parser: one function per start rule of the grammar.

Each function accepts exactly the language of `grammar/gemma4.lark` and raises `GemmaSyntaxError`
for anything else. The two Lark parsers are built once per process (from Lark's cache when it has
one) on first use. Values are built by the call-block fast path and the lean LALR driver, or, with
the accelerators off (`gemma4_lark.accelerators`), by Lark's own LALR parser alone.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from . import accelerators, fastpath, grammar
from .errors import GemmaSyntaxError, from_lark
from .model import OutputDocument, ToolCall, ToolDeclaration, ToolResponse, Thought, Transcript
from .diagnostics import LineIndex
from .values import (
    DEFAULT_MAX_DEPTH, Build, DepthExceeded, LosslessBuild, IntegerTooLong, NumberOutOfRange, ParseState, current,
    integer_digit_limit,
)

from ._names import module_getattr as _module_getattr

if TYPE_CHECKING:
    from .lalr import LeanLALR

# The strict parser's public surface; the parsers it builds and the entry at an offset
# (`block_parser`, `parse_from`, ...) are the library's own, used by its other modules.
__all__ = [
    "DEFAULT_MAX_DEPTH", "parse_call", "parse_declaration", "parse_output_document", "parse_response", "parse_thought",
    "parse_transcript", "parse_value",
]


@functools.lru_cache(maxsize=1)
def block_parser() -> LeanLALR:
    """The parser for the block start rules (its lexer knows nothing of free text). Lark loads
    with the first of these parsers: a block the fast path takes needs none."""
    from .lalr import LeanLALR
    return LeanLALR(grammar.build(grammar.BLOCK_STARTS), Build())


@functools.lru_cache(maxsize=1)
def document_parser() -> LeanLALR:
    """The parser for thoughts, model outputs and transcripts."""
    from .lalr import LeanLALR
    return LeanLALR(grammar.build(grammar.DOCUMENT_STARTS), Build())


@functools.lru_cache(maxsize=2)
def lossless_parser(blocks: bool) -> LeanLALR:
    """The same parsers with `LosslessBuild`: for decoding against the declared tools, whose
    typing needs each scalar's text and position. Built on first use only."""
    from .lalr import LeanLALR
    starts = grammar.BLOCK_STARTS if blocks else grammar.DOCUMENT_STARTS
    return LeanLALR(grammar.build(starts), LosslessBuild())


def parse(text: str, start: str, *, max_depth: int = DEFAULT_MAX_DEPTH, duplicates: list | None = None):
    """Parse `text` with the grammar's start rule `start`; the value built by the transformer.

    `duplicates`, when given, receives (key, pos) for every repeated key in an object.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return parse_from(text, 0, start, max_depth=max_depth, duplicates=duplicates)


def parse_from(text: str, pos: int, start: str, *, max_depth: int = DEFAULT_MAX_DEPTH,
               duplicates: list | None = None, lines: LineIndex | None = None, lossless: bool = False,
               fast: bool = True):
    """Parse `text[pos:]` as `parse` does, without copying it: positions (in errors and in
    `duplicates`) are offsets into `text`. `lines` (a LineIndex of `text`) spares each error
    counting lines from the start, for callers that parse one text at many offsets. `lossless`:
    build with `LosslessBuild` (scalars as `Scalar`s, calls as `LosslessCall`s; internal).
    `fast`: try the fast path first (off for a caller that just tried it; the result is the same).
    With the accelerators off, neither the fast path nor the lean driver runs: Lark's own parser
    builds the value."""
    plain = not accelerators.ENABLED
    if fast and not plain and start == "call_block" and not pos and not lossless:
        # accept-only: None leaves it to LALR, which also reports repeated keys where asked to
        call = fastpath.parse_call(text, max_depth, unique_keys=duplicates is not None)
        if call is not None:
            return call
    blocks = start in grammar.BLOCK_STARTS
    if lossless:
        parser = lossless_parser(blocks)
    else:
        parser = block_parser() if blocks else document_parser()
    import lark  # loaded by the parser above

    state = ParseState(max_depth=max_depth)
    token = current.set(state)
    try:
        result = parser.parse_with_lark(text, start, pos) if plain else parser.parse(text, start, pos)
    except DepthExceeded as exc:
        raise GemmaSyntaxError(
            f"nesting deeper than {exc.max_depth} levels", source=text, pos=exc.pos,
            text=text[exc.pos], lines=lines, code="too-deep",
        ) from None
    except NumberOutOfRange as exc:
        raise GemmaSyntaxError(f"number out of range: `{exc.text}` is beyond a double",
                               source=text, pos=exc.pos, text=exc.text, lines=lines) from None
    except IntegerTooLong as exc:
        raise GemmaSyntaxError(
            f"integer too long: {exc.digits:,} digits (the limit is {integer_digit_limit():,})",
            source=text, pos=exc.pos, text=exc.text, lines=lines,
        ) from None
    except lark.exceptions.UnexpectedInput as exc:
        raise from_lark(exc, text, start=pos, lines=lines) from None
    finally:
        current.reset(token)
        if duplicates is not None:  # also those found before a syntax error
            duplicates.extend(state.duplicates)
    return result


def parse_call(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, duplicates: list | None = None,
               fast: bool = True) -> ToolCall:
    """`<|tool_call>call:NAME{...}<tool_call|>` -> ToolCall(name, arguments). `duplicates`, when
    given, receives (key, pos) for every repeated key (the last value wins). `fast`: try the fast
    path first (off for a caller that just tried it: the result is the same).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth` and numbers beyond a double included; `TypeError`
    when `text` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return parse_from(text, 0, "call_block", max_depth=max_depth, duplicates=duplicates, fast=fast)


def parse_lossless_call(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, duplicates: list | None = None):
    """`parse_call`, keeping each scalar's text and position: a `LosslessCall` (internal, for
    decoding against the declared tools). Raises what `parse_call` raises."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return parse_from(text, 0, "call_block", max_depth=max_depth, lossless=True, duplicates=duplicates)


def parse_response(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> ToolResponse:
    """`<|tool_response>response:NAME{...}<tool_response|>` -> ToolResponse(name, fields).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth` and numbers beyond a double included; `TypeError`
    when `text` is not a str.
    """
    return parse(text, "response_block", max_depth=max_depth)


def parse_declaration(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> ToolDeclaration:
    """`<|tool>declaration:NAME{...}<tool|>` -> ToolDeclaration(name, fields).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth` and numbers beyond a double included; `TypeError`
    when `text` is not a str.
    """
    return parse(text, "declaration_block", max_depth=max_depth)


def parse_value(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH):
    """One value of the value language -> str, int, float, bool, None, list or dict.

    Integers are exact up to 4,300 digits (`values.MAX_INTEGER_DIGITS`, CPython's default limit
    for printing an int).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth`, an integer longer than that and a float beyond a
    double's range included; `TypeError` when `text` is not a str.
    """
    return parse(text, "value_document", max_depth=max_depth)


def parse_thought(text: str) -> Thought:
    """`<|channel>thought\\n...<channel|>` -> Thought(text).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language; `TypeError` when `text` is not a str.
    """
    return parse(text, "thought")


def parse_output_document(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> OutputDocument:
    """A whole model output (text, thoughts, calls, a final stop marker) -> OutputDocument, read
    strictly as the grammar's `model_output` (`gemma4_incremental.parse_output` reads it as a
    stream, leniently, and never raises for the text).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth` and numbers beyond a double included; `TypeError`
    when `text` is not a str.
    """
    return parse(text, "model_output", max_depth=max_depth)


def parse_transcript(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Transcript:
    """A whole prompt or conversation -> Transcript(turns, bos).

    Raises `GemmaSyntaxError` (a `ValueError`, with line, column and position) for text outside the
    language, nesting deeper than `max_depth` and numbers beyond a double included; `TypeError`
    when `text` is not a str.
    """
    return parse(text, "transcript", max_depth=max_depth)


# The names of one release before: they still work, and warn (docs/architecture.md, "Names").
__getattr__ = _module_getattr(__name__, renamed={"parse_model_output": "parse_output_document"})
