"""`validate`: check a block, a model output or a transcript against the grammar.

The kind of input is told by its first token. A syntax error does not end the check: the rest of
the input is checked again from the next block opener (or turn opener, in a transcript), so one
broken block does not hide problems in the blocks after it.
"""

from __future__ import annotations

from . import tokens
from .grammar import whitespace
from .diagnostics import Diagnostic, LineIndex, message
from .errors import GemmaSyntaxError
from .parser import DEFAULT_MAX_DEPTH, parse_from
from .schema.lexeme import LosslessCall

_WHITESPACE = whitespace()


def _skip_whitespace(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def start_rule_of(text: str) -> tuple[str, str]:
    """(start rule, the token from which to resume after an error) for this input."""
    head = _skip_whitespace(text, 0)  # (an index, not a stripped copy of a text of any size)
    if text.startswith((tokens.BOS, tokens.TURN_OPEN), head):
        return "transcript", tokens.TURN_OPEN
    if text.startswith(tokens.TOOL_OPEN, head):
        return "declaration_blocks", tokens.TOOL_OPEN
    if text.startswith(tokens.TOOL_RESPONSE_OPEN, head) and text.startswith(
            tokens.RESPONSE_KEYWORD, _skip_whitespace(text, head + len(tokens.TOOL_RESPONSE_OPEN))):
        return "response_blocks", tokens.TOOL_RESPONSE_OPEN
    return "model_output", tokens.TOOL_CALL_OPEN


def validate(text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, tools=None) -> list[Diagnostic]:
    """Every problem found in `text`, in order; an empty list means valid.

    Codes: `syntax` (error) and `duplicate-key` (warning: the last value wins). With `tools` (the
    request's tools, OpenAI-wrapped or bare function schemas), every call the grammar accepts is
    also checked against them: `unknown-tool` (error, at the name), `schema` (error, a JSON pointer
    in the message) and `coerced` (warning: a bare value the schema types otherwise than its
    natural reading); docs/schema.md. Raises nothing for a str: problems in the text are reported,
    not raised; `TypeError` for anything else, and for malformed `tools` what
    `gemma4_lark.schema.registry.compile_tools` raises.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    registry = None
    if tools is not None:
        from .schema.registry import compile_tools
        registry = compile_tools(tools)
    start, resume_token = start_rule_of(text)
    diagnostics: list[Diagnostic] = []
    # Each resumed parse reads the text in place from its offset and every position is looked up
    # in one line index, so k errors in n characters cost O(n + k log n), not O(k n).
    lines = LineIndex(text)
    offset = 0
    while offset is not None:
        duplicates: list = []
        try:
            result = parse_from(text, offset, start, max_depth=max_depth, duplicates=duplicates, lines=lines,
                                lossless=registry is not None)
            next_offset = None
            if registry is not None:
                diagnostics.extend(_check_calls(result, registry, lines))
        except GemmaSyntaxError as err:
            diagnostics.append(Diagnostic.from_error(err))
            resume = text.find(resume_token, err.pos + 1)
            next_offset = resume if resume >= 0 else None
        for key, pos in duplicates:
            line, column = lines.line_and_column(pos)
            diagnostics.append(Diagnostic(
                "warning", "duplicate-key", message("duplicate-key", key),
                line, column, pos,
            ))
        offset = next_offset
    diagnostics.sort(key=lambda d: d.pos)
    return diagnostics


def _calls(result) -> list:
    """The calls in a parse result built losslessly: a model output's, or a transcript's turns'."""
    parts = list(getattr(result, "parts", ()))
    for turn in getattr(result, "turns", ()):
        parts.extend(turn.parts)
    return [part for part in parts if isinstance(part, LosslessCall)]


def _check_calls(result, registry, lines: LineIndex) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    for call in _calls(result):
        schema = registry.get(call.name)
        if schema is None:
            line, column = lines.line_and_column(call.pos)
            found.append(Diagnostic("error", "unknown-tool", f"`{call.name[:80]}` is not one of the declared tools",
                                    line, column, call.pos, call.pos + len(call.name)))
            continue
        _, coerced, violations = schema.check(call.arguments, lines, call.pos)
        found += coerced + violations
    return found
