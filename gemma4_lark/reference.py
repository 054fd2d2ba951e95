"""The hand-written implementation: a lenient decoder and a streaming scanner, written without the
grammar so that testing one against the other means something.

Nothing here imports Lark or the grammar-backed modules (a test checks it). The decoder works the
way OMP's does, walking brackets and splitting at top-level commas while skipping `<|"|>` spans, and
on every input the grammar accepts it returns what the strict parser returns. Outside the language it
recovers what can be recovered safely and records each recovery as a diagnostic:

* a missing `<|tool_call>` or `<tool_call|>`, a stray `:` before `call:`, spaces around its colon;
* a missing closing brace or bracket (decode what is there), a mismatched closer;
* text after the object; empty members and trailing commas (skipped);
* a string whose closing delimiter never comes (it runs to the end, less the closers the open
  objects need), and `<|"|>` inside a string that is not followed by `,` `}` `]` `:` or the end
  (read as a literal `"`, as models use it for Python's triple quotes);
* JSON-quoted `"strings"` (decoded as JSON), single-quoted `'strings'`, `key=value`;
* the Python-style `call:NAME(key=value, ...)` shell;
* a value that starts like a number but is not one (`432+1`): kept as text.

It never raises. It returns no call when there is no `call:NAME` head to anchor one.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field

from . import tokens
from .diagnostics import Diagnostic, line_and_column
from .events import (
    Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from .model import ToolCall

_DELIM = tokens.STRING_DELIMITER
_WS = " \t\r\n"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-")
# A bare key that is anything else means the member split went wrong (an undelimited string
# with commas and colons): the decoder gives up rather than invent arguments.
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$@")
_DIGITS = frozenset("0123456789")
_LITERALS = {"true": True, "false": False, "null": None, "None": None, "none": None}
_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)


@dataclass(frozen=True)
class Decoded:
    """What `decode_call` found: the call (or None) and how it got there."""

    call: ToolCall | None
    diagnostics: list = field(default_factory=list)


def _is_name(text: str) -> bool:
    return bool(text) and all(c in _NAME_CHARS for c in text)


def _number(text: str):
    """int or float when `text` is a complete decimal number, else None."""
    body = text[1:] if text[:1] == "-" else text
    if not body:
        return None
    if body.isascii() and body.isdigit():
        return int(text)
    mantissa, exponent = body, ""
    for mark in "eE":
        if mark in body:
            mantissa, _, exponent = body.partition(mark)
            break
    if exponent:
        digits = exponent[1:] if exponent[0] in "+-" else exponent
        if not (digits.isascii() and digits.isdigit()):
            return None
    elif body[-1:] in "eE":
        return None
    whole, dot, fraction = mantissa.partition(".")
    if not (whole or fraction) or not all(c in _DIGITS for c in whole + fraction):
        return None
    if not dot and not exponent:
        return None
    value = float(text)
    return None if value in (float("inf"), float("-inf")) else value


def _looks_numeric(text: str) -> bool:
    """Begins like a number (`[+-]?[0-9.]`: docs/spec/BARE_WORD.md)."""
    if text[:1] in _DIGITS or text[:1] == ".":
        return True
    return text[:1] in ("+", "-") and len(text) > 1 and (text[1] in _DIGITS or text[1] == ".")


class _Decoder:
    """One pass over a block body. Positions in diagnostics are offsets into the whole block."""

    def __init__(self, text: str, max_depth: int):
        self.text = text
        self.max_depth = max_depth
        self.diagnostics: list[Diagnostic] = []

    def note(self, code: str, message: str, pos: int, severity: str = "warning") -> None:
        line, column = line_and_column(self.text, pos)
        self.diagnostics.append(Diagnostic(severity, code, message, line, column, pos))

    def skip_ws(self, pos: int, end: int) -> int:
        text = self.text
        while pos < end and text[pos] in _WS:
            pos += 1
        return pos

    # --- strings -------------------------------------------------------------------------------
    def delimited(self, pos: int, end: int, closers_needed: list) -> tuple[str, int]:
        """A `<|"|>` string at `pos`: (its text, the position after it)."""
        text = self.text
        start = pos + len(_DELIM)
        pieces = []
        piece_start = start
        search = start
        while True:
            q = text.find(_DELIM, search, end)
            if q < 0:
                break
            after = self.skip_ws(q + len(_DELIM), end)
            if after >= end or text[after] in ",}]:" or text[after] == ")" and ")" in closers_needed:
                pieces.append(text[piece_start:q])
                return '"'.join(pieces), q + len(_DELIM)
            # a delimiter inside the string: the model meant a quote character
            self.note("interior-delimiter", f"{_DELIM} inside a string read as a quote", q)
            pieces.append(text[piece_start:q])
            piece_start = search = q + len(_DELIM)
        # never closed: the string runs to the end, less the closers the open structures need
        body = text[piece_start:end]
        self.note("unterminated-string", f"the string opened here is never closed by {_DELIM}", pos)
        tail = body.rstrip(_WS)
        needed = "".join(reversed(closers_needed))
        if needed and tail.endswith(needed):
            body = tail[: len(tail) - len(needed)]
            pieces.append(body)
            return '"'.join(pieces), piece_start + len(body)
        pieces.append(body)
        return '"'.join(pieces), end

    def quoted(self, pos: int, end: int) -> tuple[str, int]:
        """A JSON `"string"` or a `'string'` at `pos`."""
        text = self.text
        quote = text[pos]
        q = pos + 1
        while q < end and text[q] != quote:
            q += 2 if text[q] == "\\" else 1
        if q >= end:
            self.note("unterminated-string", f"the {quote}-quoted string opened here is never closed", pos)
            return text[pos + 1:end], end
        raw = text[pos:q + 1]
        if quote == '"':
            self.note("json-string", "JSON-quoted string decoded as JSON", pos)
            try:
                return json.loads(raw), q + 1
            except ValueError:
                return raw[1:-1], q + 1
        self.note("single-quoted-string", "single-quoted string", pos)
        return raw[1:-1], q + 1

    # --- values --------------------------------------------------------------------------------
    def scalar(self, pos: int, end: int, stops: str) -> tuple[object, int]:
        """An unquoted value: up to the next top-level delimiter."""
        text = self.text
        q = pos
        while q < end and text[q] not in stops:
            if text.startswith(_DELIM, q):
                break
            q += 1
        word = text[pos:q].strip(_WS)
        if word in _LITERALS:
            return _LITERALS[word], q
        if _looks_numeric(word):
            number = _number(word)
            if number is not None:
                return number, q
            self.note("malformed-number", f"`{word}` starts like a number but is not one; kept as text", pos)
        return word, q

    def value(self, pos: int, end: int, stack: list) -> tuple[object, int, bool]:
        """(value, position after it, True when it opened a container now on `stack`)."""
        text = self.text
        if text.startswith(_DELIM, pos):
            value, after = self.delimited(pos, end, [c["closer"] for c in stack])
            return value, after, False
        ch = text[pos]
        if ch in "\"'":
            value, after = self.quoted(pos, end)
            return value, after, False
        if ch in "{[":
            if len(stack) >= self.max_depth:
                self.note("too-deep", f"nesting deeper than {self.max_depth} levels", pos, "error")
                raise _Abandon(self.diagnostics)
            container = {} if ch == "{" else []
            stack.append({"value": container, "closer": "}" if ch == "{" else "]", "key": None, "count": 0})
            return container, pos + 1, True
        closers = "".join(c["closer"] for c in stack)
        value, after = self.scalar(pos, end, "," + closers + "}]")
        return value, after, False

    def key(self, pos: int, end: int, stack: list) -> tuple[str | None, int]:
        text = self.text
        if text.startswith(_DELIM, pos):
            return self.delimited(pos, end, [c["closer"] for c in stack])
        if text[pos] in "\"'":
            return self.quoted(pos, end)
        q = pos
        while q < end and text[q] not in ":=,})]":
            q += 1
        key = text[pos:q].strip(_WS)
        if not key or not all(c in _KEY_CHARS for c in key):
            self.note("unreadable-key", f"`{key[:40]}` cannot be a key: the arguments cannot be read safely", pos, "error")
            raise _Abandon(self.diagnostics)
        return key, q

    def container(self, pos: int, end: int, opener: str) -> tuple[object, int]:
        """The object (or the `(...)` shell) or list that starts at `pos`, iteratively."""
        text = self.text
        root_closer = ")" if opener == "(" else ("}" if opener == "{" else "]")
        root = [] if opener == "[" else {}
        stack = [{"value": root, "closer": root_closer, "key": None, "count": 0}]
        pos += 1
        expect_value_for = None  # the key waiting for its value, in an object
        after_comma = False
        while stack:
            top = stack[-1]
            pos = self.skip_ws(pos, end)
            if pos >= end:
                self.note("missing-bracket", f"missing `{top['closer']}`: the block ends first", pos)
                stack.pop()
                continue
            ch = text[pos]
            is_object = isinstance(top["value"], dict)
            if ch in "}])":
                if ch != top["closer"]:
                    self.note("mismatched-closer", f"`{ch}` where `{top['closer']}` closes", pos)
                if after_comma:
                    self.note("trailing-comma", "trailing comma", pos)
                if expect_value_for is not None:
                    self.note("missing-value", f"no value for `{expect_value_for}`", pos)
                    expect_value_for = None
                stack.pop()
                pos += 1
                after_comma = False
                continue
            if ch == ",":
                if top["count"] == 0 or after_comma or expect_value_for is not None:
                    self.note("empty-member", "empty member", pos)
                expect_value_for = None
                after_comma = True
                pos += 1
                continue
            if top["count"] and not after_comma and expect_value_for is None:
                self.note("missing-comma", "missing comma between members", pos)
            if is_object and expect_value_for is None:
                key, pos = self.key(pos, end, stack)
                pos = self.skip_ws(pos, end)
                if pos < end and text[pos] in ":=":
                    if text[pos] == "=":
                        self.note("equals", "`=` instead of `:`", pos)
                    pos += 1
                    expect_value_for = key
                    after_comma = False
                    continue
                self.note("missing-value", f"member `{key}` has no value", pos)
                top["count"] += 1
                after_comma = False
                continue
            value, pos, opened = self.value(pos, end, stack)
            if is_object:
                top["value"][expect_value_for] = value
                expect_value_for = None
            else:
                top["value"].append(value)
            top["count"] += 1
            after_comma = False
            if opened:
                continue
        return root, pos


class _Abandon(Exception):
    """The block is beyond recovery (too deep, or its members cannot be told apart)."""

    def __init__(self, diagnostics=()):
        super().__init__()
        self.diagnostics = list(diagnostics)


def decode_call(block: str, *, max_depth: int = 512) -> Decoded:
    """Decode one call block, leniently. Never raises."""
    try:
        return _decode_call(block, max_depth)
    except _Abandon as abandon:
        return Decoded(None, abandon.diagnostics)
    except Exception as exc:  # the promise is "never raises": a bug here must not crash a stream
        return Decoded(None, [Diagnostic("error", "internal", f"reference decoder failed: {exc!r}", 1, 1, 0)])


def _decode_call(block: str, max_depth: int) -> Decoded:
    d = _Decoder(block, max_depth)
    text = block
    end = len(text)
    # the closer, or what ended the block instead
    tail = text.rstrip(_WS)
    if tail.endswith(tokens.TOOL_CALL_CLOSE):
        end = len(tail) - len(tokens.TOOL_CALL_CLOSE)
    else:
        for marker in _STOPS:
            if tail.endswith(marker):
                end = len(tail) - len(marker)
                break
        d.note("missing-closer", f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", end)
    pos = d.skip_ws(0, end)
    if text.startswith(tokens.TOOL_CALL_OPEN, pos):
        pos = d.skip_ws(pos + len(tokens.TOOL_CALL_OPEN), end)
    else:
        d.note("missing-opener", f"the block does not start with {tokens.TOOL_CALL_OPEN}", pos)
    if text.startswith(":", pos) and text.startswith("call", d.skip_ws(pos + 1, end)):
        d.note("stray-colon", "stray `:` before `call:`", pos)
        pos = d.skip_ws(pos + 1, end)
    if not text.startswith("call", pos):
        return Decoded(None, d.diagnostics)
    colon = d.skip_ws(pos + 4, end)
    if not text.startswith(":", colon):
        return Decoded(None, d.diagnostics)
    if colon != pos + 4:
        d.note("spaced-head", "spaces before the `:` of `call:`", pos + 4)
    pos = d.skip_ws(colon + 1, end)
    q = pos
    while q < end and text[q] not in "{(" and not text.startswith(tokens.CHANNEL_OPEN, q):
        q += 1
    name = text[pos:q].strip(_WS)
    if q >= end or not _is_name(name) or text.startswith(tokens.CHANNEL_OPEN, q):
        return Decoded(None, d.diagnostics)
    if text[q] == "(":
        d.note("paren-call", "call written as NAME(key=value, ...)", q)
    arguments, after = d.container(q, end, text[q])
    if not isinstance(arguments, dict):  # pragma: no cover - containers opened by { or ( are objects
        return Decoded(None, d.diagnostics)
    rest = d.skip_ws(after, end)
    if rest < end:
        d.note("text-after-object", "text after the arguments' closing brace ignored", rest)
    return Decoded(ToolCall(name, arguments), sorted(d.diagnostics, key=lambda x: x.pos))


# --- the streaming scanner ------------------------------------------------------------------------
def _default_id() -> str:
    return "call_" + secrets.token_hex(12)


class ReferenceScanner:
    """Chunks of model output in, the events of `gemma4_incremental.StreamParser` out: the same
    options, the same event types, written independently.

    Where StreamParser jumps from `<` to `<`, this one keeps the unprocessed input in one buffer and,
    in each state, looks for the earliest occurrence of any of that state's markers.
    """

    _HEAD_LIMIT = 256

    def __init__(self, *, parse_thinking: bool = True, start_in_thinking: bool = False, strict: bool = False,
                 id_factory=None, max_block_chars: int = 4 * 1024 * 1024, max_depth: int = 512):
        self.parse_thinking = parse_thinking
        self.strict = strict
        self.id_factory = id_factory or _default_id
        self.max_block_chars = max_block_chars
        self.max_depth = max_depth
        self.buf = ""
        self.offset = 0                  # stream offset of buf[0]
        self.mode = "text"
        self.done = False
        self.calls = 0
        self.thought = ""
        self.armed = not strict          # a bare `call:` may open a block here
        self.block = None                # the open block, a dict
        self.pending_events = []
        if start_in_thinking and parse_thinking:
            self.mode = "thinking"
            self.pending_events.append(ThinkingStart((0, 0)))

    # markers per mode, longest first where one is a prefix of another
    def _markers(self):
        if self.mode == "text":
            found = [tokens.TOOL_CALL_OPEN, *_STOPS]
            if self.parse_thinking:
                found += [tokens.CHANNEL_OPEN + "thought\n", tokens.CHANNEL_OPEN + "thought"]
            return found
        if self.mode == "thinking":
            return [tokens.CHANNEL_CLOSE, tokens.TOOL_CALL_OPEN, *_STOPS]
        if self.block["in_string"]:
            return [_DELIM]
        return [_DELIM, tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN,
                tokens.TOOL_RESPONSE_OPEN]

    def feed(self, chunk: str) -> list:
        if self.done:
            raise RuntimeError("feed() after flush()")
        if not isinstance(chunk, str):
            raise TypeError("chunks must be str")
        self.buf += chunk
        return self._run(final=False)

    def flush(self) -> list:
        if self.done:
            return []
        events = self._run(final=True)
        self.done = True
        if self.mode == "thinking":
            events.append(ThinkingEnd(self.thought, (self.offset, self.offset)))
            self.thought = ""
        elif self.mode == "call":
            self._close_block(events, self.offset, closed=False)
        return events

    # --- the loop -------------------------------------------------------------------------------
    def _take(self, n: int) -> str:
        piece, self.buf = self.buf[:n], self.buf[n:]
        self.offset += n
        return piece

    def _run(self, final: bool) -> list:
        events, self.pending_events = self.pending_events, []
        while self.buf:
            if self.armed and self.mode == "text":
                stripped = len(self.buf) - len(self.buf.lstrip(_WS))
                rest = self.buf[stripped:]
                if not rest and not final:
                    self._emit(events, self._take(len(self.buf)))
                    break
                if rest.startswith(tokens.CALL_KEYWORD):
                    self._emit(events, self._take(stripped))
                    self._open(events, "", bare=True)
                    continue
                if rest and tokens.CALL_KEYWORD.startswith(rest) and not final:
                    self._emit(events, self._take(stripped))
                    break
                if rest:
                    self.armed = False
            markers = self._markers()
            best = None
            for marker in markers:
                at = self.buf.find(marker)
                if at >= 0 and (best is None or at < best[0] or at == best[0] and len(marker) > len(best[1])):
                    best = (at, marker)
            hold = None if final else self._partial(markers, best)
            if hold is not None and (best is None or hold <= best[0]):
                self._emit(events, self._take(hold))
                break
            if best is None:
                self._emit(events, self._take(len(self.buf)))
                break
            at, marker = best
            self._emit(events, self._take(at))
            self._marker(events, marker)
        return events

    def _partial(self, markers, best):
        """Where the held-back suffix starts: from a `<` whose tail could still grow into a marker
        (or into a longer marker than the one found there)."""
        limit = max(len(m) for m in markers)
        for at in range(max(0, len(self.buf) - limit + 1), len(self.buf)):
            if self.buf[at] != "<":
                continue
            tail = self.buf[at:]
            if any(len(m) > len(tail) and m.startswith(tail) for m in markers):
                return at
        return None

    def _emit(self, events, piece: str) -> None:
        """Account for `piece`, just taken from the buffer, in the current mode."""
        if not piece:
            return
        start = self.offset - len(piece)
        if self.mode == "text":
            events.append(Text(piece, (start, self.offset)))
        elif self.mode == "thinking":
            self.thought += piece
            events.append(ThinkingDelta(piece, (start, self.offset)))
        else:
            self._grow(events, piece, start)

    def _marker(self, events, marker: str) -> None:
        start = self.offset
        mode = self.mode
        if mode == "call":
            if marker == _DELIM:
                self.block["in_string"] = not self.block["in_string"]
                self._grow(events, self._take(len(marker)), start)
            elif marker == tokens.TOOL_CALL_CLOSE:
                self._grow(events, self._take(len(marker)), start)
                self._close_block(events, self.offset, closed=True)
            else:  # ends an unclosed block; read again in text
                self._close_block(events, start, closed=False)
            return
        self.armed = False
        if marker == tokens.TOOL_CALL_OPEN:
            if mode == "thinking":
                events.append(ThinkingEnd(self.thought, (start, start)))
                self.thought = ""
            self._take(len(marker))
            self._open(events, marker)
        elif marker in _STOPS:
            if mode == "thinking":
                events.append(ThinkingEnd(self.thought, (start, start)))
                self.thought = ""
                self.mode = "text"
            self._take(len(marker))
            events.append(Stop(marker, (start, self.offset)))
        elif marker == tokens.CHANNEL_CLOSE:
            self._take(len(marker))
            events.append(ThinkingEnd(self.thought, (start, self.offset)))
            self.thought = ""
            self.mode = "text"
            self.armed = not self.strict
        else:  # a thought opener
            self._take(len(marker))
            events.append(ThinkingStart((start, self.offset)))
            self.mode = "thinking"

    # --- blocks ----------------------------------------------------------------------------------
    def _open(self, events, opener: str, bare: bool = False) -> None:
        self.mode = "call"
        self.armed = False
        self.block = {"text": opener, "start": self.offset - len(opener), "id": self.id_factory(), "size": len(opener),
                      "in_string": False, "head_end": None, "head_done": bare, "bare": bare}

    def _grow(self, events, piece: str, start: int) -> None:
        block = self.block
        before = block["size"]
        block["size"] += len(piece)
        if before <= self.max_block_chars:
            block["text"] = (block["text"] + piece)[: self.max_block_chars + 1]
        if block["head_done"]:
            return
        brace = block["text"].find("{", before)
        if brace < 0 or brace >= self._HEAD_LIMIT:
            if block["size"] >= self._HEAD_LIMIT:
                block["head_done"] = True
            return
        block["head_done"] = True
        head = block["text"][len(tokens.TOOL_CALL_OPEN):brace].strip(_WS)
        if head.startswith(tokens.CALL_KEYWORD) and _is_name(head[len(tokens.CALL_KEYWORD):].strip(_WS)):
            block["head_end"] = block["start"] + brace + 1
            events.append(ToolCallStart(block["id"], self.calls, head[len(tokens.CALL_KEYWORD):].strip(_WS),
                                        (block["start"], block["head_end"])))

    def _close_block(self, events, end: int, closed: bool) -> None:
        block, self.block = self.block, None
        self.mode = "text"
        span = (block["head_end"] if block["head_end"] is not None else block["start"], end)
        raw = block["text"][: self.max_block_chars]
        if block["size"] > self.max_block_chars:
            events.append(ToolCallError(block["id"], self._index(), raw,
                                        f"block exceeds {self.max_block_chars} characters ({block['size']}); raw holds the"
                                        f" first {self.max_block_chars}", span))
            return
        if self.strict and not closed:
            events.append(ToolCallError(block["id"], self._index(), raw,
                                        f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", span))
            return
        decoded = decode_call(raw, max_depth=self.max_depth)
        if decoded.call is None and block["bare"]:
            events.append(Text(raw, span))
            return
        index = self._index()
        if decoded.call is None or self.strict and decoded.diagnostics:
            message = decoded.diagnostics[0].message if decoded.diagnostics else "no call head"
            events.append(ToolCallError(block["id"], index, raw, message, span))
            return
        recovered = block["bare"] or any(d.code != "missing-closer" for d in decoded.diagnostics)
        events.append(ToolCallEnd(block["id"], index, decoded.call.name, decoded.call.arguments, raw,
                                  decoded.diagnostics, recovered, span))

    def _index(self) -> int:
        self.calls += 1
        return self.calls - 1
