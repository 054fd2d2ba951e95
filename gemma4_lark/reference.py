"""The hand-written streaming scanner (being rewritten as a strict oracle)."""

from __future__ import annotations

import secrets

from . import tokens
from .events import (
    Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from .recovery import _DELIM, _STOPS, _WS, _is_name, decode_calls, failure_code


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
            # a real opener ends a bare block even inside one of its strings
            return [_DELIM, tokens.TOOL_CALL_OPEN] if self.block["bare"] else [_DELIM]
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
            events.append(ThinkingEnd((self.offset, self.offset)))
        elif self.mode == "call":
            self._close_block(events, self.offset, closed=False, at_end=True)
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
                head = self._bare_head(rest, final)
                if head == "open":
                    self._emit(events, self._take(stripped))
                    self._open(events, "", bare=True)
                    continue
                if head == "wait":
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
            if self.mode == "call" and self.block["bare"] and not self.block["in_string"]:
                # a bare block ends at the `}` that closes its object
                limit = min(len(self.buf), best[0] if best else len(self.buf), len(self.buf) if hold is None else hold)
                depth = self.block["depth"]
                for at in range(limit):
                    ch = self.buf[at]
                    depth += (ch == "{") - (ch == "}")
                    if ch == "}" and depth <= 0:
                        self._emit(events, self._take(at + 1))
                        if self.block is not None:
                            self._close_block(events, self.offset, closed=False)
                            self.armed = True
                        break
                else:
                    self.block["depth"] = depth
                    depth = None
                if depth is not None:
                    continue
            if hold is not None and (best is None or hold <= best[0]):
                self._emit(events, self._take(hold))
                break
            if best is None:
                self._emit(events, self._take(len(self.buf)))
                break
            at, marker = best
            was_block = self.block is not None
            self._emit(events, self._take(at))
            if was_block and self.block is None:  # a bare block outgrew the limit: text, read on as text
                continue
            self._marker(events, marker)
        return events

    def _bare_head(self, rest: str, final: bool) -> str:
        """"open" when `rest` starts with `call:NAME{` within the head limit, "wait" when
        more input could still make it so, "no" otherwise."""
        keyword = tokens.CALL_KEYWORD
        if not rest.startswith(keyword):
            return "wait" if rest and keyword.startswith(rest) and not final else "no"
        window = rest[: self._HEAD_LIMIT]
        for at, ch in enumerate(window):
            if at >= len(keyword) and ch in "{(<":
                name = window[len(keyword):at].strip(_WS)
                return "open" if ch == "{" and _is_name(name) else "no"
        return "wait" if not final and len(window) == len(rest) < self._HEAD_LIMIT else "no"

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
                if self.block is not None:
                    self._close_block(events, self.offset, closed=True)
            else:  # ends an unclosed block; read again in text (an opener, too, inside a bare block's string)
                self._close_block(events, start, closed=False)
            return
        self.armed = False
        if marker == tokens.TOOL_CALL_OPEN:
            if mode == "thinking":
                events.append(ThinkingEnd((start, start)))
            self._take(len(marker))
            self._open(events, marker)
        elif marker in _STOPS:
            if mode == "thinking":
                events.append(ThinkingEnd((start, start)))
                self.mode = "text"
            self._take(len(marker))
            events.append(Stop(marker, (start, self.offset)))
        elif marker == tokens.CHANNEL_CLOSE:
            self._take(len(marker))
            events.append(ThinkingEnd((start, self.offset)))
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
                      "in_string": False, "depth": 0, "head": opener, "head_end": None, "head_done": bare, "bare": bare}

    def _grow(self, events, piece: str, start: int) -> None:
        block = self.block
        before = block["size"]
        block["size"] += len(piece)
        if block["bare"] and block["size"] > self.max_block_chars:
            # a guess that outgrew the limit: prose up to the limit, and what follows is read again as text
            keep = len(piece) - (block["size"] - self.max_block_chars)
            if block["text"] + piece[:keep]:
                events.append(Text(block["text"] + piece[:keep], (block["start"], start + keep)))
            self.buf = piece[keep:] + self.buf
            self.offset -= len(piece) - keep
            self.block = None
            self.mode = "text"
            return
        if before <= self.max_block_chars:
            block["text"] = (block["text"] + piece)[: self.max_block_chars + 1]
        if block["head_done"]:
            return
        block["head"] = (block["head"] + piece)[: self._HEAD_LIMIT]
        brace = block["head"].find("{")
        if brace < 0:
            if len(block["head"]) >= self._HEAD_LIMIT:
                block["head_done"] = True
            return
        block["head_done"] = True
        head = block["head"][len(tokens.TOOL_CALL_OPEN):brace].strip(_WS)
        if head.startswith(tokens.CALL_KEYWORD) and _is_name(head[len(tokens.CALL_KEYWORD):].strip(_WS)):
            block["head_end"] = block["start"] + brace + 1
            events.append(ToolCallStart(block["id"], self.calls, head[len(tokens.CALL_KEYWORD):].strip(_WS),
                                        (block["start"], block["head_end"])))

    def _close_block(self, events, end: int, closed: bool, at_end: bool = False) -> None:
        block, self.block = self.block, None
        self.mode = "text"
        span = (block["head_end"] if block["head_end"] is not None else block["start"], end)
        raw = block["text"][: self.max_block_chars]
        if block["size"] > self.max_block_chars:
            events.append(ToolCallError(block["id"], self._index(), raw,
                                        f"block exceeds {self.max_block_chars} characters ({block['size']}); raw holds the"
                                        f" first {self.max_block_chars}", span, code="too-large"))
            return
        if self.strict and not closed:
            events.append(ToolCallError(block["id"], self._index(), raw,
                                        f"the block is not closed by {tokens.TOOL_CALL_CLOSE}", span, code="unclosed"))
            return
        segments = decode_calls(raw, max_depth=self.max_depth)
        if segments[0][2].call is None and block["bare"]:
            events.append(Text(raw, span))
            return
        if self.strict and len(segments) > 1:  # several calls in one block: not in the grammar
            events.append(ToolCallError(block["id"], self._index(), raw, "several calls in one block", span,
                                        code="syntax"))
            return
        for number, (begin, finish, decoded) in enumerate(segments):
            call_id = block["id"] if number == 0 else self.id_factory()
            where = (span[0] if number == 0 else block["start"] + begin, block["start"] + finish)
            part = raw[begin:finish]
            index = self._index()
            if decoded.call is None or self.strict and decoded.diagnostics:
                message = decoded.diagnostics[0].message if decoded.diagnostics else "no call head"
                events.append(ToolCallError(call_id, index, part, message, where, code=failure_code(decoded.diagnostics)))
                continue
            if not closed and (at_end and not block["bare"] or not decoded.complete):
                events.append(ToolCallError(call_id, index, part, "not closed, and possibly cut off", where,
                                            decoded.call.name, decoded.call.arguments, decoded.diagnostics,
                                            code="unclosed"))
                continue
            recovered = bool(decoded.diagnostics) or not closed or block["bare"]
            events.append(ToolCallEnd(call_id, index, decoded.call.name, decoded.call.arguments, part,
                                      decoded.diagnostics, recovered, where))

    def _index(self) -> int:
        self.calls += 1
        return self.calls - 1
