"""The scan: chunks in, events out, driven by the state table (`_states`).

It only buffers and finds boundaries. Each chunk is scanned once, from where the last scan
stopped; the only text scanned twice is a held-back suffix that could still become a marker
(shorter than the longest marker), the late `thought\\n` label, or the head of a bare call (at most
`MAX_HEAD` characters), re-read with the next chunk. At each marker the table says what happens;
a finished block is handed to `gemma4_lark.blocks.decide_block`, which says what it is.

Memory: the open block (at most `max_block_chars` kept) and a bounded hold-back; a thought is not
kept at all once its deltas are out (`ThinkingEnd` carries no text).
"""

from __future__ import annotations


from gemma4_lark import tokens
from gemma4_lark.grammar import whitespace
from gemma4_lark.blocks import BlockCall, BlockPolicy, decide_block
from gemma4_lark.events import (
    StrayMarkup, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from gemma4_lark.textmarkers import spelled_markers

from . import _block_jump, _states as S
from ._actions import WIDTH, compiled
from ._bare import bare_head, scan_bare, scan_prose
from ._labels import channel_label
from ._markers import match
from ._block import MAX_HEAD, OpenBlock, call_name

__all__ = ["StreamMachine"]

_BLANKS = whitespace()


class StreamMachine:
    """The scan's state: where the stream stands (`state`, one of `_states.STATES`), what is held
    back (`pending`, from stream offset `pos`), the open block, and in token mode the offsets where
    a marker's special token starts (`marks`; None: markers by text)."""

    def __init__(self, policy: BlockPolicy, table: S.StateTable, new_id, start_in_thinking: bool,
                 block_jump: bool, marks: set | None = None):
        self.policy = policy
        self.limit = policy.max_block_chars
        self.table = table
        self.scan_table = table.scan
        self.rows = compiled(table)
        self.new_id = new_id
        self.block_rest = _block_jump.block_rest(policy.strict) if block_jump else None
        self.marks = marks
        self.state = S.THOUGHT if start_in_thinking else table.initial
        self.start_events = [ThinkingStart((0, 0))] if start_in_thinking else []
        self.pending = ""      # held back: could still become a marker
        self.pos = 0           # stream offset of the start of `pending`
        self.block: OpenBlock | None = None
        self.restart = 0       # where the scan goes on after a bare block turned to text
        self.call_count = 0    # blocks' outcomes so far: the next call's index
        self.calls_made = 0    # tool_call_end events so far
        # where the last call block ended, moved on over whitespace-only text after it: a cut opener
        # there at the end of the stream is stray markup (flush)
        self.after_block = -1
        self.rereading = False  # reading a broken block's rest again (close_at_next_call): no second cut

    # --- chunks -----------------------------------------------------------------------------------
    def plain(self, chunk: str) -> list:
        """A chunk that holds no marker, with nothing held back: text, thought or block content."""
        if not chunk:
            return []
        start = self.pos
        end = self.pos = start + len(chunk)
        state = self.state
        if state is S.TEXT or state in S.IN_TEXT:
            if start == self.after_block and chunk.isspace():
                self.after_block = end  # whitespace after a block, as the scan counts it
            return [Text(chunk, (start, end))]
        if state is S.THOUGHT or state is S.UNLABELLED_THOUGHT:
            return [ThinkingDelta(chunk, (start, end))]
        events: list = []
        self.add_to_block(chunk, start, events)
        if self.marks and self.block is not None and self.block.oversized:
            self.forget_marks()
        return events

    def scan_chunk(self, chunk: str) -> list:
        events = self.start_events
        if events:
            self.start_events = []
        else:
            events = []
        self.scan(self.pending + chunk, events, final=False)
        if self.marks:
            self.forget_marks()
        return events

    def forget_marks(self) -> None:
        """Drop the marks no scan or block needs again: behind what is held back, and behind the
        open block's start unless it is too large to decode (memory stays bounded)."""
        if self.block is not None and not self.block.oversized:
            return
        keep = self.pos
        self.marks = {m for m in self.marks if m >= keep}

    # --- the scan ---------------------------------------------------------------------------------
    def scan(self, data: str, events: list, final: bool) -> None:
        base = self.pos
        i = 0
        n = len(data)
        last = n - 1
        find = data.find
        marks = self.marks  # token mode: only a `<` at one of these may start a marker
        jump_tried = -1  # the block whose rest was looked for in this chunk (by its start)
        deciding = S.DECIDING
        apart = S.SCANNED_APART
        while i < n:
            state = self.state
            if state in deciding:
                i = self.decide_at(state, data, i, base, events, final)
                if i < 0:  # held back: more input is needed to decide
                    return
                continue
            by_second, prefixes, longest = self.scan_table[state]
            if state in apart:
                if state is S.PROSE:
                    j, found, line = scan_prose(data, i, final, self.scan_table[state])
                    if line:  # a new line: a declared tool's bare call may start it
                        self.consume(data, i, j, base, events)
                        i = self.transition(S.NEW_LINE, data, j, base, events)
                        continue
                else:
                    j, found, closing = scan_bare(self.block, data, i, final, self.scan_table[state])
                    if closing:  # the `}` that closes the bare call's object
                        self.consume(data, i, j, base, events)
                        if self.block is None:  # it outgrew the limit first: text
                            i = self.restart - base
                            continue
                        i = self.transition(S.OBJECT_CLOSED, data, j, base, events)
                        continue
            else:
                block = self.block
                if (state is S.CALL and marks is None and n - i >= _block_jump.BLOCK_JUMP_MIN
                        and not block.oversized and jump_tried != block.start and self.block_rest is not None):
                    jump_tried = block.start  # once per block and chunk: linear
                    if self.jump(data, i, base, events):
                        i = self.restart - base
                        continue
                j = find("<", i)
                found = None
                while j != -1:
                    if (j == last or data[j + 1] in by_second) and (marks is None or base + j in marks):
                        found = match(data, j, by_second, prefixes, longest, final)
                        if found is not None:
                            break
                    j = find("<", j + 1)
                if j == -1:
                    j = n
            if i < j:
                self.consume(data, i, j, base, events)
                if state in S.GUESSED and self.block is None:
                    i = self.restart - base  # the bare block outgrew the limit: it was prose
                    continue
            if found is None:
                break
            if found == "hold":
                self.pending = data[j:]
                self.pos = base + j
                return
            i = self.transition(found, data, j, base, events)
        self.pending = ""
        self.pos = base + n

    def decide_at(self, state: str, data: str, i: int, base: int, events: list, final: bool) -> int:
        """In a state that decides at a place (`_states.DECIDING`), at data[i]: what the text there
        says, by the table. Returns where the scan goes on, or -1 when what follows is held back
        (`pending`) until more input tells."""
        rows = self.rows
        n = len(data)
        if state is S.LINE_START or state is S.PROSE_LINE_START:
            k = i
            while k < n and data[k] in _BLANKS:
                k += 1
            if k == n and not final:  # only whitespace so far: emit it, stay on guard
                if i < k:
                    self.consume(data, i, k, base, events)
                return n
            # after prose, only a declared tool's call (docs/leniency.md#bare-calls-after-prose)
            verdict = bare_head(data, k, final, self.policy.tools if state is S.PROSE_LINE_START else None)
            if verdict is None:
                self.state = rows[state][S.NO_HEAD][1]
                return i
            if i < k:
                self.consume(data, i, k, base, events)
            if verdict == "hold":
                return self.hold(data, k, base)
            return self.transition(S.BARE_HEAD, data, k, base, events)
        if state is S.CLOSER_DUE:  # right after a declared tool's bare block: its `<tool_call|>`?
            closer = tokens.TOOL_CALL_CLOSE
            if data.startswith(closer, i):
                return self.transition(closer, data, i, base, events)
            if not final and n - i < len(closer) and closer.startswith(data[i:]):
                return self.hold(data, i, base)
            return self.transition(S.NO_CLOSER, data, i, base, events)
        if state is S.LABEL_DUE:
            label = S.LABEL
            if data.startswith(label, i):
                return self.transition(S.LABEL, data, i, base, events)
            if not final and n - i < len(label) and label.startswith(data[i:]):  # could still become it
                return self.hold(data, i, base)
            self.state = rows[state][S.NO_LABEL][1]
            return i
        # CHANNEL_DUE, UNLABELLED_CHANNEL_DUE: data[i:] starts with a `<|channel>` inside a thought
        end = channel_label(data, i, final)
        if end == "hold":
            return self.hold(data, i, base)
        if end is None:
            return self.transition(S.NO_LABEL, data, i, base, events, tokens.CHANNEL_OPEN)
        return self.transition(S.CHANNEL_LABEL, data, i, base, events, data[i:end])

    def hold(self, data: str, k: int, base: int) -> int:
        """Hold data[k:] back until more input comes; the scan stops (-1)."""
        self.pending = data[k:]
        self.pos = base + k
        return -1

    def transition(self, marker: str, data: str, j: int, base: int, events: list, text: str | None = None) -> int:
        """At data[j], `marker` (or one of `_states.EVENTS`; `text`: what an event whose text
        varies covers there): the table's action, then its state. Returns where the scan goes on."""
        state = self.state
        if marker == tokens.STRING_DELIMITER and state in S.OUTSIDE_STRINGS and not self.opens_string():
            marker = S.STRAY_DELIMITER
        action, target, reread = self.rows[state][marker]
        if action(self, text if text is not None else marker, base + j, events):
            return self.restart - base  # a bare block turned to text: read on from there
        self.state = target
        if reread:
            return j
        if text is not None:
            return j + len(text)
        return j + WIDTH.get(marker, len(marker))

    def jump(self, data: str, i: int, base: int, events: list) -> bool:
        """The block jump (`_block_jump`): the open block's rest through its `<tool_call|>` in one
        step, when it is all here and needs nothing of the scan. True when taken (`restart` is
        then where the scan goes on)."""
        block = self.block
        rest, delimiters = _block_jump.block_rest_end(self.block_rest, self.policy.strict, data, i)
        if rest == -1 or block.size + rest - i > self.limit:
            return False
        opener = tokens.TOOL_CALL_OPEN
        if block.size == len(opener) and data.startswith(opener, i - block.size, i):
            # the whole block is in this chunk: one slice of it (one copy, not a piece and a join),
            # and its decoders are told where its delimiters are
            opener_at = i - len(opener)
            if block.head:
                self.find_head(data[i:i + MAX_HEAD], base + i, events)
            block.pieces = [data[opener_at:rest]]
            block.size += rest - i
            if delimiters is not None:
                block.delimiters = [at - opener_at for at in delimiters]
        else:
            closer = rest - len(tokens.TOOL_CALL_CLOSE)
            if i < closer:
                self.add_to_block(data[i:closer], base + i, events)
            self.add_to_block(tokens.TOOL_CALL_CLOSE, base + closer, events)
        if not block.string_openers or self.rereading:
            self.end_block(events, base + rest, closed=True)
        else:  # (the state is where reading the broken block's rest again left it)
            self.close_at_next_call(events, base + rest)
        self.restart = base + rest
        return True

    def consume(self, data: str, i: int, j: int, base: int, events: list) -> None:
        """data[i:j] (not empty) holds no marker: emit it or add it to the open block."""
        state = self.state
        if state is S.TEXT or state in S.IN_TEXT:
            if base + i == self.after_block and data[i:j].isspace():
                self.after_block = base + j
            events.append(Text(data[i:j], (base + i, base + j)))
        elif state is S.THOUGHT or state is S.UNLABELLED_THOUGHT:
            events.append(ThinkingDelta(data[i:j], (base + i, base + j)))
        else:
            self.add_to_block(data[i:j], base + i, events)

    def opens_string(self) -> bool:
        """Whether the `<|"|>` about to join the open block opens a string. In the grammar a string
        begins only where a key or a value does: after `{`, `[`, `,` or `:` (and, in the lenient
        decoder's Python-style shell, `(` or `=`), whitespace aside. Not strict, a delimiter
        anywhere else, typically right after an undelimited value (`city:Tokyo<|"|>}`), is stray
        markup: it opens nothing, so it cannot hide the `<tool_call|>` after it, and the lenient
        decoder skips it (`stray-delimiter`). Strict, every delimiter counts."""
        if self.policy.strict or self.block.oversized:
            return True
        return self.block.ends_in_value_start(_block_jump.VALUE_STARTS)

    # --- the open block ---------------------------------------------------------------------------
    def open_block(self, opener: str, start: int, bare: bool = False) -> None:
        self.block = OpenBlock(opener, start, self.new_id(), bare)

    def add_to_block(self, piece: str, start: int, events: list) -> bool:
        """Add `piece` (at stream offset `start`) to the open block. A bare block was a guess: one
        that outgrows the limit is prose, every character of it (all still here: nothing was cut
        yet); it is text up to the limit, and the scan reads on from `restart` as text (the same
        offset whatever the chunking): then True."""
        block = self.block
        if block.head:
            self.find_head(piece, start, events)
        block.size += len(piece)
        if block.oversized:
            return False
        if block.bare and block.size > self.limit:
            keep = len(piece) - (block.size - self.limit)
            text = block.text() + piece[:keep]
            if text:
                events.append(Text(text, (block.start, start + keep)))
            self.restart = start + keep
            self.state = self.table.text
            self.block = None
            return True
        block.append(piece, self.limit)
        return False

    def find_head(self, piece: str, start: int, events: list) -> None:
        """Emit tool_call_start once `call:NAME{` is complete; a call that may not be made (an
        undeclared tool, one `tool_choice` forbids) is never started."""
        block = self.block
        head = block.find_head(piece, start)
        if head is not None and self.policy.refusal(head[0]) is None:
            block.head_end = head[1]
            events.append(ToolCallStart(block.id, self.call_count, head[0], (block.start, head[1])))

    def close_at_next_call(self, events: list, end: int) -> bool:
        """The open block, closed at `end`, holds a `<|tool_call>` inside a string. When the block is
        a valid call as a whole, the opener was string text. Else the string was never closed and,
        when a call's head follows it, the opener is the model's next call: the block ends unclosed
        before the first such opener, and what follows is read again from there, as text, with no
        second cut (each character read again once at most). True then (`restart`: where the scan
        goes on), else False (docs/leniency.md#unclosed-strings)."""
        block = self.block
        raw = block.text()
        outcomes = self.decide(raw, closed=True)
        if outcomes and type(outcomes[0]) is BlockCall and not outcomes[0].recovered:
            self.end_block(events, end, closed=True, outcomes=outcomes)
            return False
        for opener in block.string_openers:
            cut = opener - block.start
            brace = raw.find("{", cut, cut + MAX_HEAD)
            if brace >= 0 and call_name(raw[cut:brace + 1], brace - cut) is not None:
                break
        else:
            self.end_block(events, end, closed=True, outcomes=outcomes)
            return False
        block.pieces = [raw[:cut]]
        block.size = cut
        self.end_block(events, opener, closed=False)
        self.pos, self.pending = opener, ""
        self.rereading = True
        try:
            self.scan(raw[cut:], events, final=False)
        finally:
            self.rereading = False
        self.restart = end
        return True

    def decide(self, raw: str, closed: bool, at_end: bool = False) -> list | None:
        """The open block's outcomes (`decide_block`), its spelled markers told in token-id mode."""
        block = self.block
        spelled = spelled_markers(raw, block.start, self.marks) if self.marks is not None else ()
        return decide_block(raw, self.policy, closed=closed, at_end=at_end, bare=block.bare, text_markers=spelled,
                            delimiters=block.delimiters)

    def end_block(self, events: list, end: int, closed: bool, at_end: bool = False, outcomes=None) -> bool:
        """The open block is over: at `<tool_call|>` (`closed`), at a marker that ends it unclosed,
        or at the end of the stream (`at_end`). Its outcomes, as `decide_block` decides them (or
        as given), go out as events, numbered in order. True when it was a bare guess that is
        prose after all (then text, and the state is the table's text state)."""
        if outcomes is None:
            block = self.block
            if block.size > self.limit and not block.oversized:  # a lone opener past a tiny limit
                block.oversized = True
                block.pieces = [block.text()[:self.limit]]
            raw = block.text()
            block.pieces = []  # the joined text is the block now: its pieces beside it would double the peak
            if block.oversized:
                outcomes = decide_block(raw, self.policy, size=self.block.size)
            else:
                outcomes = self.decide(raw, closed, at_end)
        block, self.block = self.block, None
        self.state = self.table.text
        if outcomes is None:  # the bare guess was prose after all
            events.append(Text(raw, (block.start, end)))
        else:
            first = block.head_end if block.head_end >= 0 else block.start
            index = self.call_count
            for number, outcome in enumerate(outcomes):
                call_id = block.id if number == 0 else self.new_id()
                span = (first if number == 0 else block.start + outcome.begin,
                        end if block.oversized else block.start + outcome.end)
                if type(outcome) is BlockCall:
                    events.append(ToolCallEnd(call_id, index + number, outcome.name, outcome.arguments, outcome.raw,
                                              outcome.diagnostics, outcome.recovered, span))
                    self.calls_made += 1
                else:
                    events.append(ToolCallError(call_id, index + number, outcome.raw, outcome.message, span,
                                                outcome.name, outcome.partial, outcome.diagnostics, outcome.code))
            self.call_count = index + len(outcomes)
        if not block.oversized:
            self.after_block = end
        return outcomes is None

    # --- the end of the stream --------------------------------------------------------------------
    def finish(self, stopped: bool = False) -> list:
        """flush(): release what was held back and close what is open. `stopped`: the caller knows
        the model ended its turn (finish reason "stop"): a block still open ended as before a stop
        marker, not cut off (docs/leniency.md#a-stop-the-server-stripped)."""
        events = self.start_events
        self.start_events = []
        pending = self.pending
        lenient = not self.policy.strict
        if (pending and self.state is self.table.text and self.pos == self.after_block and lenient
                and len(pending) >= 2 and tokens.TOOL_CALL_OPEN.startswith(pending)):
            # the stream ends on a cut opener right after a call (`<tool_call|><|tool_c`): the
            # marker of a further call the model never wrote; markup, not text (docs/leniency.md)
            events.append(StrayMarkup(pending, (self.pos, self.pos + len(pending))))
            self.pos += len(pending)
            pending = self.pending = ""
        self.scan(pending, events, final=True)
        state = self.state
        if state is S.STRING and lenient:
            self.end_at_closer_in_open_string(events)
            state = self.state
        if state is S.THOUGHT or state is S.UNLABELLED_THOUGHT:
            events.append(ThinkingEnd((self.pos, self.pos)))
        elif state in S.GUESSED_UNTIL_CLOSED:  # no `<tool_call|>` came: prose (the table's END row)
            self.rows[state][S.END][0](self, S.END, self.pos, events)
        elif state is S.CALL and self.empty_block_after_a_call():
            # the same with the whole opener (`<tool_call|><|tool_call>` and nothing more): a block
            # holding nothing is no call that could be cut off
            opener = tokens.TOOL_CALL_OPEN
            start = self.block.start
            events.append(StrayMarkup(opener, (start, start + len(opener))))
            if self.pos > start + len(opener):
                events.append(Text(self.block.text()[len(opener):], (start + len(opener), self.pos)))
            self.block = None
        elif state in S.IN_BLOCK:
            self.end_block(events, self.pos, closed=False, at_end=not stopped)
        self.state = S.DONE
        return events

    def empty_block_after_a_call(self) -> bool:
        """At the end of the stream (not strict): the open block is only its `<|tool_call>` and
        whitespace, and it opened right after a call block (whitespace aside)."""
        block = self.block
        if self.policy.strict or block.bare or block.oversized or block.start != self.after_block:
            return False
        return block.size <= MAX_HEAD and block.text().rstrip(_BLANKS) == tokens.TOOL_CALL_OPEN

    def end_at_closer_in_open_string(self, events: list) -> None:
        """At the end of the stream, inside a string never closed (`{command:<|"|>ls}<tool_call|>`
        and nothing after): the grammar would make the rest of the stream string text, but the model
        ended its block where it wrote its markup. The block ends at the first, after the string's
        delimiter, of: a `<tool_call|>` (the block closed there; the lenient decoder then reads the
        `unterminated-string`), or a `<|tool_call>` followed by a call's head (the model's next call:
        the block ends unclosed before it, docs/leniency.md#unclosed-strings). What follows is
        read again, as text. That text holds no `<|"|>` (else the string would have closed), so it
        is read once more at most."""
        block = self.block
        if block.oversized:
            return
        raw = block.text()
        since = block.string_start - block.start
        at = self._real(raw, tokens.TOOL_CALL_CLOSE, since)
        opener = self._real(raw, tokens.TOOL_CALL_OPEN, since)
        while opener >= 0 and (at < 0 or opener < at):
            brace = raw.find("{", opener, opener + MAX_HEAD)
            if brace >= 0 and call_name(raw[opener:brace + 1], brace - opener) is not None:
                break  # the model's next call
            opener = self._real(raw, tokens.TOOL_CALL_OPEN, opener + 1)
        else:
            opener = -1
        if at < 0 and opener < 0:
            return
        closed = opener < 0
        end = at + len(tokens.TOOL_CALL_CLOSE) if closed else opener
        block.pieces = [raw[:end]]
        block.small = 0
        block.size = end
        self.end_block(events, block.start + end, closed=closed)
        self.pos = block.start + end
        self.scan(raw[end:], events, final=True)

    def _real(self, raw: str, marker: str, since: int) -> int:
        """Where in the open block's `raw` the first `marker` from `since` is (in token mode, the
        first its special token writes), -1 if none."""
        at = raw.find(marker, since)
        if self.marks is not None:
            start = self.block.start
            while at >= 0 and start + at not in self.marks:
                at = raw.find(marker, at + 1)
        return at
