"""The stream's states and every transition between them, as data (docs/architecture.md draws
the diagram from this table; a test checks the picture is not stale).

Theory of operation. A stream is read left to right; in each state only some markers mean
anything (`markers(state)`), and everything between two of them is text of that state: prose, a
thought's text, or a call block's content. When the scan finds a marker it looks up
`TRANSITIONS[state][marker]`: an action (what to emit or do: open a block, end a thought, emit
stray markup, ...) and the next state. `REREAD`: the marker ends what was open and is then read
again in the next state (a `<turn|>` that ends an unclosed block is a stop marker of the text
after it).

Some entries are not markers but what the scan sees at a place where the grammar asks for a
decision (the `EVENTS`): at the start of the output or after a thought, whether `call:NAME{` starts
a bare block; after a thought opened by an unlabelled `<|channel>`, whether its `thought\\n` label
follows the closer; whether a `<|"|>` opens a string or is stray; the `}` that closes a bare
block's object; the end of the stream.

Everything that affects the state machine lives here. The options choose a table: `table()`
drops the channel markers when thoughts are not parsed, makes an unlabelled channel stray when
strict, and never guesses a bare call (LINE_START is TEXT) when strict or reading token ids.
"""

from __future__ import annotations

import functools

from gemma4_lark import tokens

__all__ = [
    "BARE_CALL", "BARE_STRING", "CALL", "CHANNEL_DUE", "CLOSER_DUE", "DECIDING", "DECLARED_CALL", "DECLARED_STRING",
    "DONE", "LABEL_DUE", "LINE_START", "PROSE", "PROSE_LINE_START", "STATES", "STRING", "TEXT", "THOUGHT",
    "UNLABELLED_CHANNEL_DUE", "UNLABELLED_THOUGHT", "TRANSITIONS", "REREAD", "StateTable", "diagram", "table",
]

# --- states ----------------------------------------------------------------------------------
TEXT = "text"                              # prose
LINE_START = "line-start"                  # prose where a bare `call:NAME{` may open a block
LABEL_DUE = "label-due"                    # right after an unlabelled thought's closer
THOUGHT = "thought"
UNLABELLED_THOUGHT = "unlabelled-thought"  # opened by `<|channel>` with no label (not strict)
CHANNEL_DUE = "channel-due"                # at a `<|channel>` inside a thought: a label line after it?
UNLABELLED_CHANNEL_DUE = "unlabelled-channel-due"  # the same inside an unlabelled thought
CALL = "call"                              # inside a call block, outside its strings
STRING = "string"                          # inside a `<|"|>` string of a block
BARE_CALL = "bare-call"                    # a block guessed from `call:NAME{` (its opener was stripped)
BARE_STRING = "bare-string"
# With tools declared (not strict, markers by text), prose is read line by line: a line that starts
# with a declared tool's `call:NAME{` may be a call whose opener was stripped, when a real
# `<tool_call|>` follows its object (docs/leniency.md#bare-calls-after-prose).
PROSE = "prose"                            # text, tools declared: each new line is a PROSE_LINE_START
PROSE_LINE_START = "prose-line-start"      # a line of prose: a declared tool's bare call head?
DECLARED_CALL = "declared-call"            # a bare block of a declared tool after prose
DECLARED_STRING = "declared-string"
CLOSER_DUE = "closer-due"                  # after its object's `}`: a `<tool_call|>` must follow
DONE = "done"                              # after flush()
STATES = (TEXT, LINE_START, LABEL_DUE, THOUGHT, UNLABELLED_THOUGHT, CHANNEL_DUE, UNLABELLED_CHANNEL_DUE, CALL,
          STRING, BARE_CALL, BARE_STRING, PROSE, PROSE_LINE_START, DECLARED_CALL, DECLARED_STRING, CLOSER_DUE, DONE)
IN_BLOCK = frozenset((CALL, STRING, BARE_CALL, BARE_STRING, DECLARED_CALL, DECLARED_STRING, CLOSER_DUE))
# the blocks that are a guess until their closer: the stream's end turns them back to text
GUESSED_UNTIL_CLOSED = frozenset((DECLARED_CALL, DECLARED_STRING, CLOSER_DUE))
# the blocks guessed from a bare head (never cut: past the limit they are prose)
GUESSED = frozenset((BARE_CALL, BARE_STRING, DECLARED_CALL, DECLARED_STRING))
# the blocks the scan reads by their braces (`_bare.scan_bare`), and the states it reads apart
BRACED = frozenset((BARE_CALL, DECLARED_CALL))
SCANNED_APART = BRACED | {PROSE}
OUTSIDE_STRINGS = frozenset((CALL, BARE_CALL, DECLARED_CALL))  # where a `<|"|>` may open a string
IN_THOUGHT = frozenset((THOUGHT, UNLABELLED_THOUGHT, CHANNEL_DUE, UNLABELLED_CHANNEL_DUE))
# The states that decide at a place, reading what follows, rather than at a marker (the scan asks
# `_machine.StreamMachine.decide_at`).
DECIDING = frozenset((LINE_START, LABEL_DUE, CHANNEL_DUE, UNLABELLED_CHANNEL_DUE, PROSE_LINE_START, CLOSER_DUE))
IN_TEXT = frozenset((TEXT, LINE_START, LABEL_DUE, PROSE, PROSE_LINE_START))

# --- what the scan sees that is not a marker ---------------------------------------------------
BARE_HEAD = "call:NAME{"             # a bare call's head at the start of the output or after a thought
                                     # (in PROSE_LINE_START: of a declared tool)
NEW_LINE = "new line"                # in PROSE: the character after a newline
NO_CLOSER = "no closer"              # in CLOSER_DUE: anything but `<tool_call|>`
NO_HEAD = "no call head"
LABEL = tokens.THOUGHT_OPEN[len(tokens.CHANNEL_OPEN):]  # `thought\n`, late: after the closer
NO_LABEL = "no label"
CHANNEL_LABEL = "channel label line"  # `<|channel>` in a thought, then a name and a newline
STRAY_DELIMITER = "stray " + tokens.STRING_DELIMITER  # a `<|"|>` where no key or value begins
OBJECT_CLOSED = "}"                  # the `}` that closes a bare block's object
END = "end of stream"
EVENTS = (BARE_HEAD, NO_HEAD, LABEL, NO_LABEL, CHANNEL_LABEL, STRAY_DELIMITER, OBJECT_CLOSED, NEW_LINE, NO_CLOSER, END)

# --- actions ---------------------------------------------------------------------------------
# Each names a method of the scan (`_machine.StreamMachine`): what happens at the transition.
OPEN_BLOCK = "open_block"            # the marker starts a call block
OPEN_BARE = "open_bare"              # `call:NAME{` starts a bare block
JOIN = "join"                        # the marker is the block's content (a string delimiter)
CLOSE_BLOCK = "close_block"          # `<tool_call|>` ends the block, closed
END_BLOCK = "end_block"              # a marker or the stream ends the block unclosed
END_BARE = "end_bare"                # the bare block's object is closed: the block ends there
STOP = "stop"                        # a stop marker: an event, and the text goes on
STRAY = "stray"                      # markup that opens or closes nothing: an event of its own
STRAY_LABEL = "stray_label"          # the late `thought\n` label: markup too
START_THOUGHT = "start_thought"
END_THOUGHT = "end_thought"          # the thought's closer
CUT_THOUGHT = "cut_thought"          # a marker that cannot be in a thought ends it (empty span)
END_THOUGHT_AT_LABEL = "end_thought_at_label"  # `<|channel>LABEL\n` in a thought: it ends, the label is markup
NOTE_OPENER = "note_opener"          # a `<|tool_call>` in a string: its text, and maybe the next call
DROP_GUESS = "drop_guess"            # a guessed block was prose after all: its text, every character
NOTHING = "nothing"
REREAD = True                        # (third member) the marker is read again in the next state

_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
_THOUGHT_OPENERS = (tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN[:-1])  # the label's newline is optional
_CHANNEL_MARKERS = _THOUGHT_OPENERS + (tokens.CHANNEL_OPEN, tokens.CHANNEL_CLOSE)


def _in_text(after_stray_closer: str) -> dict:
    return {
        tokens.TOOL_CALL_OPEN: (OPEN_BLOCK, CALL),
        **{stop: (STOP, TEXT) for stop in _STOPS},
        **{opener: (START_THOUGHT, THOUGHT) for opener in _THOUGHT_OPENERS},
        tokens.CHANNEL_OPEN: (START_THOUGHT, UNLABELLED_THOUGHT),
        tokens.CHANNEL_CLOSE: (STRAY, after_stray_closer),  # the model takes itself to be after a thought
        tokens.TOOL_CALL_CLOSE: (STRAY, TEXT),
    }


def _in_thought(itself: str, after_closer: str, channel_due: str) -> dict:
    return {
        tokens.CHANNEL_CLOSE: (END_THOUGHT, after_closer),
        tokens.TOOL_CALL_OPEN: (CUT_THOUGHT, TEXT, REREAD),
        **{stop: (CUT_THOUGHT, TEXT, REREAD) for stop in _STOPS},
        **{opener: (STRAY, itself) for opener in _THOUGHT_OPENERS},
        # not strict, a label line after it ends the thought (docs/leniency.md#a-channel-inside-a-thought)
        tokens.CHANNEL_OPEN: (NOTHING, channel_due, REREAD),
    }


def _channel_due(thought: str) -> dict:
    return {CHANNEL_LABEL: (END_THOUGHT_AT_LABEL, LINE_START), NO_LABEL: (STRAY, thought)}


def _in_block(inside: str, outside: str) -> dict:
    return {
        tokens.STRING_DELIMITER: (JOIN, inside),
        STRAY_DELIMITER: (JOIN, outside),
        tokens.TOOL_CALL_CLOSE: (CLOSE_BLOCK, TEXT),
        **{end: (END_BLOCK, TEXT, REREAD) for end in
           (tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN, tokens.TOOL_RESPONSE_OPEN)},
        END: (END_BLOCK, DONE),
    }


# The table for the lenient reading of text (not strict, markers read by text, thoughts parsed).
TRANSITIONS: dict[str, dict] = {
    TEXT: {**_in_text(LINE_START), END: (NOTHING, DONE)},
    LINE_START: {**_in_text(LINE_START), BARE_HEAD: (OPEN_BARE, BARE_CALL), NO_HEAD: (NOTHING, TEXT),
                 END: (NOTHING, DONE)},
    LABEL_DUE: {LABEL: (STRAY_LABEL, LINE_START), NO_LABEL: (NOTHING, LINE_START)},
    THOUGHT: {**_in_thought(THOUGHT, LINE_START, CHANNEL_DUE), END: (CUT_THOUGHT, DONE)},
    UNLABELLED_THOUGHT: {**_in_thought(UNLABELLED_THOUGHT, LABEL_DUE, UNLABELLED_CHANNEL_DUE),
                         END: (CUT_THOUGHT, DONE)},
    CHANNEL_DUE: _channel_due(THOUGHT),
    UNLABELLED_CHANNEL_DUE: _channel_due(UNLABELLED_THOUGHT),
    CALL: _in_block(STRING, CALL),
    # not strict, an opener in a string is noted: if the block then fails, the string was never
    # closed and the opener is the model's next call (docs/leniency.md#unclosed-strings)
    STRING: {tokens.STRING_DELIMITER: (JOIN, CALL), tokens.TOOL_CALL_OPEN: (NOTE_OPENER, STRING),
             END: (END_BLOCK, DONE)},
    BARE_CALL: {**_in_block(BARE_STRING, BARE_CALL), OBJECT_CLOSED: (END_BARE, LINE_START)},
    # a real `<|tool_call>` inside a bare block's string: the bare block was a guess, the opener is not
    BARE_STRING: {tokens.STRING_DELIMITER: (JOIN, BARE_CALL), tokens.TOOL_CALL_OPEN: (END_BLOCK, TEXT, REREAD),
                  END: (END_BLOCK, DONE)},
    # with tools declared (`table(declared=True)`: every arrow into TEXT then goes to PROSE)
    PROSE: {**_in_text(LINE_START), NEW_LINE: (NOTHING, PROSE_LINE_START), END: (NOTHING, DONE)},
    PROSE_LINE_START: {**_in_text(LINE_START), BARE_HEAD: (OPEN_BARE, DECLARED_CALL), NO_HEAD: (NOTHING, PROSE),
                       END: (NOTHING, DONE)},
    DECLARED_CALL: {
        tokens.STRING_DELIMITER: (JOIN, DECLARED_STRING),
        STRAY_DELIMITER: (JOIN, DECLARED_CALL),
        tokens.TOOL_CALL_CLOSE: (CLOSE_BLOCK, TEXT),
        **{end: (DROP_GUESS, TEXT, REREAD) for end in
           (tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN, tokens.TOOL_RESPONSE_OPEN)},
        OBJECT_CLOSED: (NOTHING, CLOSER_DUE),
        END: (DROP_GUESS, DONE),
    },
    DECLARED_STRING: {tokens.STRING_DELIMITER: (JOIN, DECLARED_CALL), tokens.TOOL_CALL_OPEN: (DROP_GUESS, TEXT, REREAD),
                      END: (DROP_GUESS, DONE)},
    CLOSER_DUE: {tokens.TOOL_CALL_CLOSE: (CLOSE_BLOCK, TEXT), NO_CLOSER: (DROP_GUESS, TEXT), END: (DROP_GUESS, DONE)},
    DONE: {},
}
_DECLARED_ONLY = (PROSE, PROSE_LINE_START, DECLARED_CALL, DECLARED_STRING, CLOSER_DUE)


class StateTable:
    """The transitions for one setting, and per state what the scan looks for: its markers by
    the character after their `<` (any other `<` is skipped at once), every proper prefix of a
    marker (what may be held back at a chunk's end), and the longest marker's length."""

    __slots__ = ("transitions", "scan", "initial", "text")

    def __init__(self, transitions: dict, initial: str, text: str = TEXT):
        self.transitions = transitions
        self.initial = initial
        self.text = text  # the state of text after a block (PROSE with tools declared)
        self.scan = {}
        for state, row in transitions.items():
            found = sorted((m for m in row if m.startswith("<")), key=len, reverse=True)
            by_second: dict = {}
            for marker in found:  # longest first, so the longest match wins
                by_second.setdefault(marker[1], []).append(marker)
            prefixes = frozenset(m[:k] for m in found for k in range(1, len(m)))
            self.scan[state] = (by_second, prefixes, len(found[0]) if found else 0)

    def markers(self, state: str) -> tuple[str, ...]:
        """The markers that mean something in `state`, longest first."""
        by_second = self.scan[state][0]
        return tuple(sorted((m for group in by_second.values() for m in group), key=len, reverse=True))


@functools.lru_cache(maxsize=32)
def table(parse_thinking: bool = True, strict: bool = False, by_text: bool = True, declared: bool = False) -> StateTable:
    """The table for these options. Not `parse_thinking`: the channel markers are text. `strict`:
    an unlabelled `<|channel>` opens nothing (stray markup), nor does one inside a thought, and
    every `<|"|>` opens or closes a string.
    Strict or reading token ids (not `by_text`): no bare call is guessed (a stripped opener is in
    the ids), so LINE_START is TEXT. `declared` (tools declared) and guessing: text is PROSE, read
    line by line for a declared tool's bare call. Built once per setting: a server makes a parser
    per response."""
    guess = by_text and not strict
    prose = guess and declared
    out = {}
    for state, row in TRANSITIONS.items():
        if state in _DECLARED_ONLY and not prose:
            continue
        row = dict(row)
        if not parse_thinking and state in IN_TEXT:
            for marker in _CHANNEL_MARKERS:
                row.pop(marker, None)
        if strict and parse_thinking and state in IN_TEXT:
            row[tokens.CHANNEL_OPEN] = (STRAY, TEXT)
        if strict and state in (THOUGHT, UNLABELLED_THOUGHT):  # a channel in a thought is markup
            row[tokens.CHANNEL_OPEN] = (STRAY, state)
        if strict:
            row.pop(STRAY_DELIMITER, None)
            if state == STRING:
                row.pop(tokens.TOOL_CALL_OPEN)
        if not guess:
            row = {marker: (entry[0], TEXT if entry[1] == LINE_START else entry[1]) + entry[2:]
                   for marker, entry in row.items()}
        if prose:
            row = {marker: (entry[0], PROSE if entry[1] == TEXT else entry[1]) + entry[2:]
                   for marker, entry in row.items()}
        out[state] = row
    if not guess:
        out[LINE_START] = out[TEXT]
    return StateTable(out, LINE_START if guess else TEXT, PROSE if prose else TEXT)


# The markers by the names tokens.py gives them (a diagram's labels cannot hold their `<`).
_NAMES = {value: name for name, value in vars(tokens).items() if name.isupper() and isinstance(value, str)}
_NAMES.update({tokens.THOUGHT_OPEN[:-1]: "THOUGHT_OPEN without newline", LABEL: "late label",
               BARE_HEAD: "bare call head", STRAY_DELIMITER: "stray STRING_DELIMITER", OBJECT_CLOSED: "object closed"})


def _label(marker: str) -> str:
    return _NAMES.get(marker, marker.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;"))


def diagram() -> str:
    """The state diagram of `TRANSITIONS` (the lenient table) in Mermaid: one arrow per state pair,
    labelled with what triggers it and the action; a marker read again is marked `(again)`."""
    lines = ["stateDiagram-v2", f"    [*] --> {LINE_START.replace('-', '_')}"]
    for state, row in TRANSITIONS.items():
        arrows: dict = {}
        for marker, entry in row.items():
            action, target = entry[0], entry[1]
            label = _label(marker) + (" (again)" if entry[2:] else "")
            arrows.setdefault((target, action), []).append(label)
        for (target, action), labels in arrows.items():
            source, goal = state.replace("-", "_"), target.replace("-", "_")
            goal = "[*]" if target == DONE else goal
            lines.append(f"    {source} --> {goal}: {', '.join(labels)} / {action}")
    return "\n".join(lines) + "\n"


_BEGIN = "<!-- state diagram: generated from incremental/_states.py, do not edit -->\n```mermaid\n"
_END = "```\n<!-- end of state diagram -->"


def with_diagram(page: str) -> str:
    """`page` (docs/architecture.md) with its state diagram drawn afresh from the table."""
    begin = page.index(_BEGIN) + len(_BEGIN)
    return page[:begin] + diagram() + page[page.index(_END, begin):]

