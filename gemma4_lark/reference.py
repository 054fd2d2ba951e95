"""The hand-written oracle: a strict call-block reader and a strict streaming scanner, written from
the documentation and the grammar's text, never from the code that implements them, so that
running them against `gemma4_lark.parse_call` and `StreamParser(strict=True)` tests something.

Nothing here imports the production parsing, decoding or streaming code (Lark, the grammar, the
fast path, the lenient recovery, the stream parser; a test checks it): only the shared vocabulary,
the token constants (`tokens`), the event classes (`events`) and the diagnostic type. Where the
rules come from:

* `read_call`: the language of the grammar's `call_block` rule (grammar/gemma4.lark, its terminals
  as the comments describe them), read by a hand-written pushdown reader with an explicit stack (no
  Python recursion, whatever the nesting), building the values SPEC section 3 and docs/README.md
  give: strings verbatim, integers exact up to 4,300 digits, floats as doubles, `null`, `None` and
  `none` as None, bare words as str, objects in insertion order, a repeated key's last value at
  its first place. It refuses what the grammar refuses, with the codes of docs/schema.md: `too-deep`
  when a bracket opens past `max_depth` before anything else is wrong, `syntax` for the rest.
* `ReferenceScanner`: strict streaming as docs/streaming.md and the strict column of
  docs/leniency.md ("Stray markup") describe it: the same options and events as
  `StreamParser(strict=True)`, block boundaries found by looking, in each state, for the earliest
  of that state's markers in one buffer.
"""

from __future__ import annotations

import re
import secrets
import sys
from dataclasses import dataclass, field

from . import tokens
from .diagnostics import Diagnostic, LineIndex
from .events import (
    Stop, StrayMarkup, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from .error_base import Gemma4Error

_DELIMITER = tokens.STRING_DELIMITER
BLANKS = " \t\r\n"  # the grammar's insignificant whitespace: ASCII only
_LETTERS_DIGITS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_NAME_CHARS = frozenset(_LETTERS_DIGITS + "_.:-")    # a tool's name (MCP-style `server:tool` too)
_KEY_CHARS = frozenset(_LETTERS_DIGITS + "_.$@-")    # a bare key
_DIGITS = frozenset("0123456789")
_NOT_IN_WORD = frozenset(BLANKS + ",{}[]\"'")       # what a bare word's characters are not
_AFTER_NUMBER = frozenset(BLANKS + ",}]<")          # what may follow a number (or nothing)
_MARKUP_NAME = frozenset("abcdefghijklmnopqrstuvwxyz_")
_LITERALS = {"true": True, "false": False, "null": None, "None": None, "none": None}
_ESCAPE = "<escape>"  # FunctionGemma's string delimiter: inside a bare word it is text, reported
_MAX_INTEGER_DIGITS = 4300  # CPython's default int/str limit; a process's lower limit wins
_HEAD_WINDOW = 256  # tool_call_start: `call:NAME{` complete within the block's first 256 characters


# --- the strict block reader ----------------------------------------------------------------------
@dataclass(frozen=True)
class Reading:
    """What `read_call` found: a call (`name`, `arguments`, `warnings`: the `duplicate-key` and
    `functiongemma-escape` findings a valid block carries), or, when `code` is set (`syntax` or
    `too-deep`), why the block is not one, at offset `pos`."""

    name: str | None = None
    arguments: dict | None = None
    warnings: list = field(default_factory=list)
    code: str | None = None
    pos: int = 0
    message: str = ""


class _Refused(Gemma4Error):
    def __init__(self, code: str, pos: int, message: str):
        super().__init__(message)
        self.code, self.pos, self.message = code, pos, message


def read_call(block: str, *, max_depth: int = 512) -> Reading:
    """Read `block` as the grammar's `call_block`, strictly. Never raises (for a str)."""
    reader = _BlockReader(block, max_depth)
    try:
        name, arguments = reader.call()
    except _Refused as refused:
        return Reading(code=refused.code, pos=refused.pos, message=refused.message)
    return Reading(name, arguments, sorted(reader.warnings, key=lambda d: d.pos))


def _integer_digit_limit() -> int:
    interpreter = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return min(_MAX_INTEGER_DIGITS, interpreter) if interpreter else _MAX_INTEGER_DIGITS


class _BlockReader:
    def __init__(self, text: str, max_depth: int):
        self.text = text
        self.n = len(text)
        self.i = 0
        self.max_depth = max_depth
        self.warnings: list[Diagnostic] = []
        self._lines = None

    def refuse(self, message: str, code: str = "syntax"):
        raise _Refused(code, self.i, message)

    def warn(self, code: str, message: str, pos: int, end: int) -> None:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        line, column = self._lines.line_and_column(pos)
        self.warnings.append(Diagnostic("warning", code, message, line, column, pos, end))

    def skip_blanks(self) -> None:
        text, n, i = self.text, self.n, self.i
        while i < n and text[i] in BLANKS:
            i += 1
        self.i = i

    def literal(self, expected: str) -> None:
        self.skip_blanks()
        if not self.text.startswith(expected, self.i):
            self.refuse(f"expected `{expected}`")
        self.i += len(expected)

    def run_of(self, chars: frozenset) -> str:
        text, n, start = self.text, self.n, self.i
        i = start
        while i < n and text[i] in chars:
            i += 1
        self.i = i
        return text[start:i]

    # `<|tool_call>` `call:` NAME object `<tool_call|>`, blanks between
    def call(self):
        self.literal(tokens.TOOL_CALL_OPEN)
        self.literal(tokens.CALL_KEYWORD)
        self.skip_blanks()
        name = self.run_of(_NAME_CHARS)
        if not name:
            self.refuse("expected the tool's name")
        self.skip_blanks()
        if not self.text.startswith("{", self.i):
            self.refuse("expected `{` (the arguments)")
        arguments = self.value()
        self.literal(tokens.TOOL_CALL_CLOSE)
        self.skip_blanks()
        if self.i != self.n:
            self.refuse(f"text after `{tokens.TOOL_CALL_CLOSE}`")
        return name, arguments

    def value(self):
        """The value at the current position, containers and all, with an explicit stack of the
        open ones: each entry [container, closer, key waiting for its value]."""
        text = self.text
        stack: list = []
        while True:
            self.skip_blanks()
            i = self.i
            opener = text[i] if i < self.n else ""
            if opener in ("{", "["):
                if len(stack) + 1 > self.max_depth:
                    self.refuse(f"nesting deeper than {self.max_depth} levels", "too-deep")
                self.i += 1
                container = {} if opener == "{" else []
                closer = "}" if opener == "{" else "]"
                self.skip_blanks()
                if self.text.startswith(closer, self.i):  # empty
                    self.i += 1
                    value = container
                else:
                    stack.append([container, closer, self.key() if opener == "{" else None])
                    continue
            else:
                value = self.scalar()
            # the value is complete: it goes into the container it stands in, and what follows is a
            # comma (another member or item) or the closer (which completes that container)
            while True:
                if not stack:
                    return value
                top = stack[-1]
                container, closer, key = top
                if type(container) is dict:
                    if key in container:  # the last value wins, at the first key's place
                        self.warn("duplicate-key", f"duplicate key `{key[:40]}`: the last value wins",
                                  key.pos, key.pos)
                    container[str(key)] = value
                else:
                    container.append(value)
                self.skip_blanks()
                if self.text.startswith(",", self.i):
                    self.i += 1
                    if type(container) is dict:
                        top[2] = self.key()
                    break
                if self.text.startswith(closer, self.i):
                    self.i += 1
                    stack.pop()
                    value = container
                    continue
                self.refuse(f"expected `,` or `{closer}`")

    def key(self):
        """A member's key and its colon: a bare key or a delimited string, remembering where it
        stood (a repeated key is reported there)."""
        self.skip_blanks()
        start = self.i
        if self.text.startswith(_DELIMITER, start):
            key = _Located(self.string(), start)
        else:
            key = _Located(self.run_of(_KEY_CHARS), start)
            if not key:
                self.refuse("expected a key")
        self.literal(":")
        return key

    def string(self) -> str:
        start = self.i + len(_DELIMITER)
        end = self.text.find(_DELIMITER, start)
        if end < 0:
            self.refuse(f"a string never closed by {_DELIMITER}")
        self.i = end + len(_DELIMITER)
        return self.text[start:end]

    def scalar(self):
        text, i = self.text, self.i
        if i >= self.n:
            self.refuse("expected a value, found the end")
        if text.startswith(_DELIMITER, i):
            return self.string()
        first, second = text[i], text[i + 1: i + 2]
        if first in _DIGITS or first == "." or (first in "+-" and second and (second in _DIGITS or second == ".")):
            return self.number()
        if not self.word_char(i):
            self.refuse("expected a value")
        return self.bare_word()

    def number(self):
        """A decimal number: `-`, digits, a fraction, an exponent; whatever follows must end it."""
        text, n, start = self.text, self.n, self.i
        i = start + (text[start] == "-")
        whole = i
        while i < n and text[i] in _DIGITS:
            i += 1
        has_whole = i > whole
        is_float = False
        if i < n and text[i] == ".":
            i += 1
            fraction = i
            while i < n and text[i] in _DIGITS:
                i += 1
            if not has_whole and i == fraction:
                self.refuse("`.` alone is not a number")
            is_float = True
        elif not has_whole:
            self.refuse("a value starting like a number is not one")
        if i < n and text[i] in "eE":
            j = i + 1 + (i + 1 < n and text[i + 1] in "+-")
            exponent = j
            while j < n and text[j] in _DIGITS:
                j += 1
            if j > exponent:
                i, is_float = j, True
        if i < n and text[i] not in _AFTER_NUMBER:
            self.i = i
            self.refuse("a number must end where the value does")
        word = text[start:i]
        if is_float:
            value = float(word)
            if value in (float("inf"), float("-inf")):
                self.refuse(f"`{word[:40]}` is beyond a double")
        else:
            digits = len(word) - word.startswith("-")
            if digits > _integer_digit_limit():
                self.refuse(f"an integer of {digits} digits is too long")
            value = int(word)
        self.i = i
        return value

    def markup_at(self, i: int) -> bool:
        """A control token's shape at text[i] (`<|word>`, `<|word|>`, `<word|>`) or the string
        delimiter: what a bare word cannot hold."""
        text, n = self.text, self.n
        if text.startswith(_DELIMITER, i):
            return True
        j = i + 1
        piped = text.startswith("|", j)
        j += piped
        name = j
        while j < n and text[j] in _MARKUP_NAME:
            j += 1
        if j == name:
            return False
        if piped:
            return text.startswith(">", j) or text.startswith("|>", j)
        return text.startswith("|>", j)

    def word_char(self, i: int) -> bool:
        ch = self.text[i]
        return ch not in _NOT_IN_WORD and (ch != "<" or not self.markup_at(i))

    def bare_word(self):
        """Word characters with blanks between them (not around): an unquoted word, or a literal
        when it is exactly one; FunctionGemma's `<escape>` in it is reported."""
        text, n, start = self.text, self.n, self.i
        last = i = start
        while i < n:
            if text[i] in BLANKS:
                i += 1
            elif self.word_char(i):
                last = i
                i += 1
            else:
                break
        word = text[start:last + 1]
        self.i = last + 1
        if word in _LITERALS:
            return _LITERALS[word]
        if _ESCAPE in word:
            self.warn("functiongemma-escape", f"FunctionGemma's {_ESCAPE} inside an unquoted value",
                      start + word.find(_ESCAPE), start + word.rfind(_ESCAPE) + len(_ESCAPE))
        return word


class _Located(str):
    """A key that remembers where it was written."""

    __slots__ = ("pos",)

    def __new__(cls, text: str, pos: int):
        located = str.__new__(cls, text)
        located.pos = pos
        return located


# --- the strict streaming scanner -----------------------------------------------------------------
_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
_THOUGHT_LABELLED = (tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN.rstrip("\n"))  # the newline is optional
_TEXT, _THINKING, _BLOCK, _STRING = "text", "thinking", "block", "string"


def _default_id() -> str:
    return "call_" + secrets.token_hex(12)


def _markers(mode: str, parse_thinking: bool) -> tuple:
    """What means something in `mode`, strictly (docs/streaming.md; docs/leniency.md "Stray
    markup", strict column)."""
    if mode == _TEXT:
        found = (tokens.TOOL_CALL_OPEN, *_STOPS, tokens.TOOL_CALL_CLOSE)
        if parse_thinking:
            found += (*_THOUGHT_LABELLED, tokens.CHANNEL_OPEN, tokens.CHANNEL_CLOSE)
        return found
    if mode == _THINKING:
        return (tokens.CHANNEL_CLOSE, tokens.TOOL_CALL_OPEN, *_STOPS, *_THOUGHT_LABELLED, tokens.CHANNEL_OPEN)
    if mode == _BLOCK:
        return (_DELIMITER, tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN,
                tokens.TOOL_RESPONSE_OPEN)
    return (_DELIMITER,)  # inside a string only its delimiter counts


@dataclass
class _Block:
    start: int
    id: str
    pieces: list = field(default_factory=list)
    size: int = 0
    head: str = ""          # the first _HEAD_WINDOW characters, until the head is decided
    decided: bool = False
    head_end: int | None = None


class ReferenceScanner:
    """Chunks of model output in, the events of `StreamParser(strict=True)` out, written
    independently: the same options (`strict` may only be True: recovery is StreamParser's), the
    same events. Raises what StreamParser's `feed` raises for a non-str chunk and after `flush`."""

    def __init__(self, *, parse_thinking: bool = True, start_in_thinking: bool = False, strict: bool = True,
                 id_factory=None, max_block_chars: int = 4 * 1024 * 1024, max_depth: int = 512):
        if not strict:
            raise ValueError("the reference reads strictly only; StreamParser(strict=False) recovers blocks")
        self.parse_thinking = parse_thinking
        self.id_factory = id_factory or _default_id
        self.max_block_chars = max_block_chars
        self.max_depth = max_depth
        self.buf = ""
        self.offset = 0  # stream offset of buf[0]
        self.mode = _TEXT
        self.block: _Block | None = None
        self.calls = 0   # call events so far: the next one's index
        self.done = False
        self.waiting: list = []  # events due before the first chunk's
        self.patterns = {mode: re.compile("|".join(re.escape(m) for m in sorted(
            _markers(mode, parse_thinking), key=len, reverse=True))) for mode in (_TEXT, _THINKING, _BLOCK, _STRING)}
        if start_in_thinking and parse_thinking:
            self.mode = _THINKING
            self.waiting.append(ThinkingStart((0, 0)))

    def feed(self, chunk: str) -> list:
        if self.done:
            raise RuntimeError("feed() after flush()")
        if not isinstance(chunk, str):
            raise TypeError(f"chunks must be str, not {type(chunk).__name__}")
        self.buf += chunk
        return self._run(final=False)

    def flush(self) -> list:
        if self.done:
            return []
        events = self._run(final=True)
        self.done = True
        if self.mode == _THINKING:
            events.append(ThinkingEnd((self.offset, self.offset)))
        elif self.block is not None:
            self._end_block(events, self.offset, closed=False)
        return events

    def _run(self, final: bool) -> list:
        events, self.waiting = self.waiting, []
        buf, pos = self.buf, 0
        while pos < len(buf):
            found = self.patterns[self.mode].search(buf, pos)
            hold = None if final else self._hold(buf, pos, found)
            stop = hold if hold is not None else (found.start() if found else len(buf))
            self._account(events, buf[pos:stop], self.offset + pos)
            pos = stop
            if hold is not None or found is None:
                break
            pos = self._on_marker(events, found.group(), self.offset + pos, pos)
        self.buf = buf[pos:]
        self.offset += pos
        return events

    def _hold(self, buf: str, pos: int, found) -> int | None:
        """Where the suffix that more input could still turn into a marker (or into a longer one
        than found there) starts; each marker holds one `<`, its first character."""
        at = found.start() if found else buf.rfind("<", pos)
        if at < 0:
            return None
        tail = buf[at:]
        markers = _markers(self.mode, self.parse_thinking)
        return at if any(len(tail) < len(m) and m.startswith(tail) for m in markers) else None

    def _account(self, events: list, piece: str, start: int) -> None:
        if not piece:
            return
        if self.mode == _TEXT:
            events.append(Text(piece, (start, start + len(piece))))
        elif self.mode == _THINKING:
            events.append(ThinkingDelta(piece, (start, start + len(piece))))
        else:
            self._grow(events, piece)

    def _on_marker(self, events: list, marker: str, start: int, pos: int) -> int:
        """Handle `marker` at stream offset `start` (buffer position `pos`); where reading goes on."""
        end = start + len(marker)
        after = pos + len(marker)
        mode = self.mode
        if mode == _STRING:  # its closing delimiter
            self._grow(events, marker)
            self.mode = _BLOCK
            return after
        if mode == _BLOCK:
            if marker == _DELIMITER:  # strict: every delimiter outside a string opens one
                self._grow(events, marker)
                self.mode = _STRING
                return after
            if marker == tokens.TOOL_CALL_CLOSE:
                self._grow(events, marker)
                self._end_block(events, end, closed=True)
                return after
            self._end_block(events, start, closed=False)  # ended unclosed; the marker is read as text reads it
            return pos
        if marker == tokens.TOOL_CALL_OPEN:
            if mode == _THINKING:  # a call inside an unclosed thought ends the thought
                events.append(ThinkingEnd((start, start)))
            self.mode = _BLOCK
            self.block = _Block(start, self.id_factory())
            self._grow(events, marker)
        elif marker in _STOPS:
            if mode == _THINKING:
                events.append(ThinkingEnd((start, start)))
                self.mode = _TEXT
            events.append(Stop(marker, (start, end)))
        elif marker == tokens.CHANNEL_CLOSE and mode == _THINKING:
            events.append(ThinkingEnd((start, end)))
            self.mode = _TEXT
        elif marker in _THOUGHT_LABELLED and mode == _TEXT:
            events.append(ThinkingStart((start, end)))
            self.mode = _THINKING
        else:  # a closer with nothing open, an opener inside a thought, an unlabelled channel (strict)
            events.append(StrayMarkup(marker, (start, end)))
        return after

    # --- blocks ------------------------------------------------------------------------------------
    def _grow(self, events: list, piece: str) -> None:
        block = self.block
        block.pieces.append(piece)
        block.size += len(piece)
        if block.decided:
            return
        block.head = (block.head + piece)[:_HEAD_WINDOW]
        brace = block.head.find("{")
        if brace < 0:
            block.decided = len(block.head) >= _HEAD_WINDOW
            return
        block.decided = True
        words = block.head[len(tokens.TOOL_CALL_OPEN):brace].strip(BLANKS)
        if not words.startswith(tokens.CALL_KEYWORD):
            return
        name = words[len(tokens.CALL_KEYWORD):].strip(BLANKS)
        if name and all(c in _NAME_CHARS for c in name):
            block.head_end = block.start + brace + 1
            events.append(ToolCallStart(block.id, self.calls, name, (block.start, block.head_end)))

    def _end_block(self, events: list, end: int, closed: bool) -> None:
        block, self.block = self.block, None
        self.mode = _TEXT
        raw = "".join(block.pieces)
        span = (block.head_end if block.head_end is not None else block.start, end)
        index, self.calls = self.calls, self.calls + 1
        if block.size > self.max_block_chars:
            events.append(ToolCallError(block.id, index, raw[:self.max_block_chars],
                                        f"block of {block.size} characters exceeds {self.max_block_chars}", span,
                                        code="too-large"))
        elif not closed:
            events.append(ToolCallError(block.id, index, raw, f"not closed by {tokens.TOOL_CALL_CLOSE}", span,
                                        code="unclosed"))
        else:
            reading = read_call(raw, max_depth=self.max_depth)
            if reading.code is None:
                events.append(ToolCallEnd(block.id, index, reading.name, reading.arguments, raw, reading.warnings,
                                          False, span))
            else:
                events.append(ToolCallError(block.id, index, raw, reading.message, span, code=reading.code))
