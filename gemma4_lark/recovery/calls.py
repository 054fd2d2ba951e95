"""The lenient decoder's reading of a block: its opener and closer, each call's head
(`call:NAME{`, and what is recovered around it), the calls one block holds, and what the block
decodes to (`Decoded`). Each call's arguments are `decoder.Decoder`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import tokens
from ..diagnostics import Diagnostic, LineIndex
from ..model import ToolCall
from .decoder import WS, Abandon, Decoder

__all__ = ["Decoded", "decode_call", "decode_calls", "failure_code"]

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-")
_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
# What may follow the arguments' closing brace and be ignored without losing anything the model
# meant: more closers and commas (`{a:1}}`); any other text after the object is dropped text.
_CLOSERS_ONLY = re.compile(r"[ \t\r\n,}\])]*")


@dataclass(frozen=True)
class Decoded:
    """What `decode_call` found: the call (or None) and how it got there. `complete` is False when
    the arguments were cut off (a bracket or a string still open where the block ends); `lossy` is
    True when the reading left text the model wrote out of the call (a key without its value,
    text after the object): the call does not say all the model wrote."""

    call: ToolCall | None
    diagnostics: list = field(default_factory=list)
    complete: bool = True
    lossy: bool = False


def _is_name(text: str) -> bool:
    return bool(text) and all(c in _NAME_CHARS for c in text)


def failure_code(diagnostics) -> str:
    """The `ToolCallError.code` of a block the decoder could not read, from its findings."""
    codes = {d.code for d in diagnostics if d.severity == "error"}
    for code in ("too-deep", "internal"):
        if code in codes:
            return code
    return "syntax"


def decode_call(block: str, *, max_depth: int = 512) -> Decoded:
    """Decode one call block, leniently. Never raises.

    When the block holds further calls after the first (`call:a{...}call:b{...}`), the first is
    returned with a `second-call` diagnostic spanning the rest; `decode_calls` decodes them all.
    """
    segments = decode_calls(block, max_depth=max_depth)
    start, stop, decoded = segments[0]
    if len(segments) == 1:
        return decoded
    lines = LineIndex(block)
    line, column = lines.line_and_column(stop)
    rest = Diagnostic("warning", "second-call", "another call follows in the same block; decode_calls reads it",
                      line, column, stop, len(block))
    found = [d for d in decoded.diagnostics if d.code != "second-call"]
    return Decoded(decoded.call, found + [rest], decoded.complete, decoded.lossy)


def decode_calls(block: str, *, max_depth: int = 512, lossless: bool = False, hints=None, declared=None) -> list:
    """Decode a call block that may hold several calls, leniently. Never raises.

    Returns `(start, end, Decoded)` for each call: its part of the block, `block[start:end]`, and
    what it decodes to (diagnostics relative to `start`). The parts tile the block. A block with no
    call in it is one part whose `call` is None.

    `lossless` (decoding against the declared tools): every scalar of the arguments is a
    `gemma4_lark.schema.lexeme.Scalar` (value, text as written, position relative to `start`),
    for the caller to type by the tool's schema. `hints` (with tools): a function of a call's
    name giving an object with `keys` (the declared keys), `string_keys` (those whose schema
    allows only a string) and `open` (other keys allowed), or None; an undelimited value of such a top-level key may then run to
    the next declared key (`string-run`, docs/leniency.md). `declared` (with tools): the declared
    tools' names; a block opened by `<|tool_call>` whose head lacks its `call` keyword
    (`<|tool_call>:NAME{`) is then a call of NAME when NAME is one of them (`missing-call-keyword`).
    """
    try:
        lines = LineIndex(block)
        end = _body_end(block)
        segments = []
        start = 0
        while True:
            decoded, rest = _decode_call(block, max_depth, lines, start, end, not segments, lossless, hints, declared)
            if rest is None:
                segments.append((start, len(block), decoded))
                return segments
            segments.append((start, rest, decoded))
            start = rest
    except Exception as exc:  # the promise is "never raises": a bug here must not crash a stream
        return [(0, len(block), Decoded(None, [Diagnostic(
            "error", "internal", f"reference decoder failed: {exc!r}", 1, 1, 0, len(block))], False))]


def _body_end(text: str) -> int:
    """Where the arguments end: before `<tool_call|>` (or what ended the block instead)."""
    tail = text.rstrip(WS)
    if tail.endswith(tokens.TOOL_CALL_CLOSE):
        return len(tail) - len(tokens.TOOL_CALL_CLOSE)
    for marker in _STOPS:
        if tail.endswith(marker):
            return len(tail) - len(marker)
    return -1 - len(tail)  # not closed: encoded as a negative number (see _decode_call)


def _decode_call(block: str, max_depth: int, lines: LineIndex, start: int, body_end: int, first: bool,
                 lossless: bool = False, hints=None, declared=None):
    """(Decoded, where a further call starts or None) for the call at block[start:]."""
    d = Decoder(block, max_depth, lines, start, lossless)
    text = block
    closed = body_end >= 0
    end = body_end if closed else -1 - body_end
    try:
        pos = d.skip_ws(start, end)
        opened = False  # by a real `<|tool_call>`
        if not first:
            d.note("second-call", "a further call in the same block", start)
        elif text.startswith(tokens.TOOL_CALL_OPEN, pos):
            pos = d.skip_ws(pos + len(tokens.TOOL_CALL_OPEN), end)
            opened = True
        else:
            d.note("missing-opener", f"the block does not start with {tokens.TOOL_CALL_OPEN}", pos)
        if text.startswith(":", pos) and text.startswith("call", d.skip_ws(pos + 1, end)):
            d.note("stray-colon", "stray `:` before `call:`", pos, end=pos + 1)
            pos = d.skip_ws(pos + 1, end)
        keyword = text.startswith("call", pos)
        if keyword:
            colon = d.skip_ws(pos + 4, end)
            if not text.startswith(":", colon):
                return Decoded(None, d.findings(), False), None
            if colon != pos + 4:
                d.note("spaced-head", "spaces before the `:` of `call:`", pos + 4, end=colon)
        elif opened and declared is not None and text.startswith(":", pos):
            colon = pos  # `<|tool_call>:NAME{`: a call only when NAME is declared (below)
        else:
            return Decoded(None, d.findings(), False), None
        pos = d.skip_ws(colon + 1, end)
        q = pos
        while q < end and text[q] not in "{(" and not text.startswith(tokens.CHANNEL_OPEN, q):
            q += 1
        name = text[pos:q].strip(WS)
        if q >= end or not _is_name(name) or text.startswith(tokens.CHANNEL_OPEN, q):
            return Decoded(None, d.findings(), False), None
        if not keyword:
            # a real opener, then `:` and a declared tool's name: the model's call of it, its
            # `call` keyword left out (OVMS v2); any other name could be anything: no call
            if text[q] != "{" or name not in declared:
                return Decoded(None, d.findings(), False), None
            d.note("missing-call-keyword", f"the head lacks `call` before `:{name[:40]}`", colon, end=colon + 1)
        if text[q] == "(":
            d.note("paren-call", "call written as NAME(key=value, ...)", q, end=q + 1)
        found = hints(name) if hints is not None and text[q] == "{" else None
        if found is not None and found.string_keys:
            d.keys, d.string_keys, d.open_object = found.keys, found.string_keys, found.open
        arguments, after = d.container(q, end, text[q])
        rest = d.skip_ws(after, end)
        further = None
        if rest < end and text.startswith("call", rest) and text.startswith(":", d.skip_ws(rest + 4, end)):
            further = rest
            d.note("second-call", "another call follows in the same block", rest)
        elif rest < end:
            d.note("text-after-object", "text after the arguments' closing brace ignored", rest, end=end)
            if _CLOSERS_ONLY.match(text, rest, end).end() < end:  # more than extra closers: words lost
                d.lossy = True
        if further is None and not closed:
            d.note("missing-closer", f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", end, end=len(text))
        return Decoded(ToolCall(name, arguments), d.findings(), d.complete, d.lossy), further
    except Abandon as abandon:
        return Decoded(None, abandon.diagnostics, False), None
