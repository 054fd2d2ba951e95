"""StreamParser: chunks of model output in, events out. Sans-IO, like h11: no I/O, no threads.

This layer only buffers and finds block boundaries. A finished call block is decoded by the strict
parser of the grammar (`gemma4_lark.parse_call`); when that rejects it and the parser is not
strict, by the lenient decoder when one is available.

How the cost stays linear: each chunk is scanned once, from where the last scan stopped. The only
text scanned twice is a held-back suffix that could still become a marker (shorter than the longest
marker), re-read with the next chunk. An open call block is kept as a list of pieces, joined once
when it closes, so a block arriving in tiny chunks costs no repeated copying.
"""

from __future__ import annotations

import functools
import secrets

import gemma4_lark
from gemma4_lark import tokens
from gemma4_lark.diagnostics import Diagnostic, line_and_column
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.reference import decode_call
from gemma4_lark.grammar import terminal_pattern

from gemma4_lark.events import (
    Event, Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)

# States. _STRING is inside a `<|"|>` string of a call block, where only the delimiter counts.
_TEXT, _THINKING, _CALL, _STRING = "text", "thinking", "call", "string"

_THOUGHT_OPENERS = (tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN[:-1])  # the newline is optional
_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
# Inside a call block, outside its strings: what ends the block. Only the first closes it properly;
# the others end an unclosed block (and are then handled as they would be in text).
_CALL_ENDS = (tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN, tokens.TOOL_RESPONSE_OPEN)
# How far into a block to look for the `{` that completes `call:NAME{`.
_MAX_HEAD = 256


def default_id_factory() -> str:
    """`call_` and 24 random hex digits. Raises nothing."""
    return "call_" + secrets.token_hex(12)


def _by_length(markers):
    return tuple(sorted(markers, key=len, reverse=True))


@functools.lru_cache(maxsize=2)
def _scan_table(parse_thinking: bool) -> dict:
    """Per state: the markers by the character that follows their `<` (any other `<` is skipped
    at once), every proper prefix of a marker (what may be held back), and the longest marker's
    length. Built once per setting, not per parser: a server makes a parser per response."""
    markers_of = {
        _TEXT: _by_length((tokens.TOOL_CALL_OPEN,) + _STOPS + (_THOUGHT_OPENERS if parse_thinking else ())),
        _THINKING: _by_length((tokens.CHANNEL_CLOSE, tokens.TOOL_CALL_OPEN) + _STOPS),
        _CALL: _by_length(_CALL_ENDS + (tokens.STRING_DELIMITER,)),
        _STRING: (tokens.STRING_DELIMITER,),
    }
    table = {}
    for state, markers in markers_of.items():
        by_second: dict = {}
        for marker in markers:  # longest first, so the longest match wins
            by_second.setdefault(marker[1], []).append(marker)
        prefixes = frozenset(m[:k] for m in markers for k in range(1, len(m)))
        table[state] = (by_second, prefixes, len(markers[0]))
    return table


class StreamParser:
    """Feed chunks of model output; get events.

    Options: `parse_thinking` (read the thought channel; off: its markup stays in the text),
    `start_in_thinking` (the prompt ended inside `<|channel>thought\\n`), `strict` (a block the
    grammar rejects is an error, never recovered), `id_factory` (a callable minting call ids),
    `max_block_chars` and `max_depth` (bounds on one call block).
    """

    def __init__(self, *, parse_thinking: bool = True, start_in_thinking: bool = False, strict: bool = False,
                 id_factory=None, max_block_chars: int = 4 * 1024 * 1024, max_depth: int = 512):
        self.parse_thinking = parse_thinking
        self.strict = strict
        self.max_block_chars = max_block_chars
        self.max_depth = max_depth
        self._new_id = id_factory or default_id_factory
        self._scan_table = _scan_table(parse_thinking)
        self._state = _TEXT
        self._pending = ""      # held back: could still become a marker
        self._pos = 0           # stream offset of the start of `_pending`
        self._finished = False
        # Bare-call recovery (not strict): at the start of the output, or right after a thought's
        # `<channel|>`, a `call:` with no `<|tool_call>` before it opens a block (tokenizers that
        # skip special tokens strip the opener). Anywhere else `call:` is prose.
        self._armed = not strict
        self._bare = False
        self._call_count = 0
        # the open thought
        self._thought: list[str] = []
        # the open call block
        self._block: list[str] = []
        self._block_start = 0
        self._block_size = 0
        self._block_id = ""
        self._head_end = -1     # stream offset just after `call:NAME{`, once seen
        self._head_scanned = 0
        self._oversized = False
        if start_in_thinking and parse_thinking:
            self._state = _THINKING
            self._start_events = [ThinkingStart((0, 0))]
        else:
            self._start_events = []

    # --- public API -----------------------------------------------------------------------------
    def feed(self, chunk: str) -> list[Event]:
        """Events that `chunk` completes (possibly none).

        Problems in the text become events, never exceptions. Raises `TypeError` when `chunk` is
        not a str and `RuntimeError` after `flush()`.
        """
        if type(chunk) is not str:
            raise TypeError(f"chunks must be str, not {type(chunk).__name__}")
        if self._finished:
            raise RuntimeError("feed() after flush(): the stream is over")
        # Fast path, most chunks of most streams: nothing held back and no `<` in sight, so the
        # chunk is text, thought or block content as a whole.
        if not self._pending and not self._start_events and "<" not in chunk and not self._armed:
            # (what _consume does, inlined: this runs for nearly every chunk, and the call
            # measured about a quarter of the path's instructions)
            if not chunk:
                return []
            start = self._pos
            end = self._pos = start + len(chunk)
            state = self._state
            if state is _TEXT:
                return [Text(chunk, (start, end))]
            if state is _THINKING:
                self._thought.append(chunk)
                return [ThinkingDelta(chunk, (start, end))]
            events = []
            self._add_to_block(chunk, start, events)
            return events
        events = self._start_events
        if events:
            self._start_events = []
        else:
            events = []
        self._scan(self._pending + chunk, events, final=False)
        return events

    def flush(self) -> list[Event]:
        """The end of the stream: release what was held back and close what is open. Raises
        nothing; a second call returns []."""
        if self._finished:
            return []
        events = self._start_events
        self._start_events = []
        self._scan(self._pending, events, final=True)
        self._finished = True
        if self._state == _THINKING:
            self._end_thinking(events, self._pos, self._pos)
        elif self._state in (_CALL, _STRING):
            self._end_block(events, self._pos, closed=False)
        return events

    # --- scanning -------------------------------------------------------------------------------
    @staticmethod
    def _match(data: str, j: int, by_second: dict, prefixes: frozenset, longest: int, final: bool):
        """At `data[j] == "<"`: the marker that starts there, "hold" if more input could still
        make one (or a longer one), or None."""
        if not final and len(data) - j < longest and data[j:] in prefixes:
            return "hold"
        for marker in by_second.get(data[j + 1] if j + 1 < len(data) else "", ()):
            if data.startswith(marker, j):
                return marker
        return None

    def _scan(self, data: str, events: list, final: bool) -> None:
        base = self._pos
        i = 0
        n = len(data)
        last = n - 1
        find = data.find
        while i < n:
            if self._armed and self._state is _TEXT:
                k = i
                while k < n and data[k] in " \t\r\n":
                    k += 1
                if k < n or final:
                    bare = tokens.CALL_KEYWORD
                    if data.startswith(bare, k):
                        if i < k:
                            self._consume(data, i, k, base, events)
                        self._open_block("", base + k, bare=True)
                        i = k
                        continue
                    if not final and bare.startswith(data[k:]) and k < n:
                        if i < k:
                            self._consume(data, i, k, base, events)
                        self._pending = data[k:]
                        self._pos = base + k
                        return
                    if k < n:
                        self._armed = False
                elif not final:  # only whitespace so far: emit it, stay armed
                    self._consume(data, i, n, base, events)
                    i = n
                    break
            by_second, prefixes, longest = self._scan_table[self._state]
            j = find("<", i)
            found = None
            while j != -1:
                if j == last or data[j + 1] in by_second:
                    found = self._match(data, j, by_second, prefixes, longest, final)
                    if found is not None:
                        break
                j = find("<", j + 1)
            if j == -1:
                j = n
            if i < j:
                self._consume(data, i, j, base, events)
            if found is None:
                break
            if found == "hold":
                self._pending = data[j:]
                self._pos = base + j
                return
            i = self._on_marker(found, data, j, base, events)
        self._pending = ""
        self._pos = base + n

    def _consume(self, data: str, i: int, j: int, base: int, events: list) -> None:
        """data[i:j] (not empty) holds no marker: emit it or add it to the open block."""
        state = self._state
        if state == _TEXT:
            events.append(Text(data[i:j], (base + i, base + j)))
        elif state == _THINKING:
            piece = data[i:j]
            self._thought.append(piece)
            events.append(ThinkingDelta(piece, (base + i, base + j)))
        else:
            self._add_to_block(data[i:j], base + i, events)

    def _on_marker(self, marker: str, data: str, j: int, base: int, events: list) -> int:
        """Handle the marker at data[j]; return where scanning goes on."""
        start = base + j
        end = start + len(marker)
        state = self._state
        if state is _STRING:  # the only marker here: the string's closing delimiter
            self._state = _CALL
            self._add_to_block(marker, start, events)
            return j + len(marker)
        if state is _CALL:
            if marker == tokens.STRING_DELIMITER:
                self._state = _STRING
                self._add_to_block(marker, start, events)
                return j + len(marker)
            if marker == tokens.TOOL_CALL_CLOSE:
                self._add_to_block(marker, start, events)
                self._end_block(events, end, closed=True)
                return j + len(marker)
            # `<turn|>`, `<eos>`, `<|tool_response>` or a new `<|tool_call>` ends an unclosed block;
            # the marker itself is then read as text would read it.
            self._end_block(events, start, closed=False)
            return j
        self._armed = False
        if marker == tokens.TOOL_CALL_OPEN:
            if state == _THINKING:  # a call inside unclosed thinking ends the thinking
                self._end_thinking(events, start, start)
            self._open_block(marker, start)
            return j + len(marker)
        if marker in _STOPS:
            if state == _THINKING:
                self._end_thinking(events, start, start)
            events.append(Stop(marker, (start, end)))
            return j + len(marker)
        if marker == tokens.CHANNEL_CLOSE:
            self._end_thinking(events, start, end)
            self._armed = not self.strict
            return j + len(marker)
        # a thought opener, in text
        events.append(ThinkingStart((start, end)))
        self._state = _THINKING
        return j + len(marker)

    # --- thinking -------------------------------------------------------------------------------
    def _end_thinking(self, events: list, start: int, end: int) -> None:
        events.append(ThinkingEnd("".join(self._thought), (start, end)))
        self._thought = []
        self._state = _TEXT

    # --- call blocks ----------------------------------------------------------------------------
    def _open_block(self, opener: str, start: int, bare: bool = False) -> None:
        self._state = _CALL
        self._armed = False
        self._bare = bare
        self._block = [opener] if opener else []
        self._block_start = start
        self._block_size = len(opener)
        self._block_id = self._new_id()
        self._head_end = -1
        self._head_scanned = len(opener)
        self._oversized = False

    def _add_to_block(self, piece: str, start: int, events: list) -> None:
        self._block_size += len(piece)
        if self._oversized:
            return
        self._block.append(piece)
        if self._head_end < 0 and self._head_scanned < _MAX_HEAD and not self._bare:
            self._find_head(piece, start, events)
        if self._block_size > self.max_block_chars:
            self._oversized = True
            kept = "".join(self._block)[: self.max_block_chars]
            self._block = [kept]

    def _find_head(self, piece: str, start: int, events: list) -> None:
        """Emit tool_call_start once `call:NAME{` is complete (its `{` within the block's first
        _MAX_HEAD characters)."""
        offset = self._block_size - len(piece)  # where `piece` starts in the block
        brace = piece.find("{")
        if brace < 0 or offset + brace >= _MAX_HEAD:
            self._head_scanned = offset + len(piece)
            return
        self._head_scanned = _MAX_HEAD  # look no further
        head = "".join(self._block)[len(tokens.TOOL_CALL_OPEN): offset + brace].strip(" \t\r\n")
        if not head.startswith(tokens.CALL_KEYWORD):
            return
        name = head[len(tokens.CALL_KEYWORD):].strip(" \t\r\n")
        if not terminal_pattern("NAME").fullmatch(name):
            return
        self._head_end = start + brace + 1
        events.append(ToolCallStart(self._block_id, self._call_count, name, (self._block_start, self._head_end)))

    def _end_block(self, events: list, end: int, closed: bool) -> None:
        self._state = _TEXT
        raw = "".join(self._block)
        self._block = []
        start = self._head_end if self._head_end >= 0 else self._block_start
        span = (start, end)
        if self._bare:
            # recovered only when it decodes to a call; otherwise it was prose after all
            self._bare = False
            decoded = decode_call(raw, max_depth=self.max_depth)
            if decoded.call is None:
                events.append(Text(raw, span))
                return
            events.append(ToolCallEnd(self._block_id, self._next_index(), decoded.call.name, decoded.call.arguments,
                                      raw, decoded.diagnostics, True, span))
            return
        index = self._next_index()
        if self._oversized:
            events.append(ToolCallError(
                self._block_id, index, raw,
                f"block exceeds {self.max_block_chars} characters ({self._block_size}); raw holds the first"
                f" {self.max_block_chars}", span))
            return
        events.append(self._decode(raw, closed, index, span))

    def _next_index(self) -> int:
        index = self._call_count
        self._call_count += 1
        return index

    def _decode(self, raw: str, closed: bool, index: int, span: tuple):
        """The strict parser first; when it rejects the block and this parser is not strict, the
        lenient decoder, with the grammar's error and each recovery as diagnostics."""
        diagnostics = []
        text = raw
        if not closed:
            if self.strict:
                return ToolCallError(self._block_id, index, raw, f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", span)
            text = raw + tokens.TOOL_CALL_CLOSE
            line, column = line_and_column(raw, len(raw))
            diagnostics.append(Diagnostic(
                "warning", "missing-closer", f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", line, column, len(raw)))
        try:
            call = gemma4_lark.parse_call(text, max_depth=self.max_depth)
        except GemmaSyntaxError as err:
            message = str(err).split("\n", 1)[0]
            if self.strict or "nesting deeper" in err.message:
                return ToolCallError(self._block_id, index, raw, message, span)
            decoded = decode_call(raw, max_depth=self.max_depth)
            if decoded.call is None:
                return ToolCallError(self._block_id, index, raw, message, span)
            syntax = Diagnostic("error", "syntax", err.message, err.line, err.column, err.pos)
            return ToolCallEnd(self._block_id, index, decoded.call.name, decoded.call.arguments, raw,
                               [syntax] + decoded.diagnostics, True, span)
        return ToolCallEnd(self._block_id, index, call.name, call.arguments, raw, diagnostics, False, span)
