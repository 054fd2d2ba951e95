"""What each transition of the state table does (`_states` names the actions; the scan looks each
up once per marker in the compiled table).

Each action is called with the scan, the marker (or one of `_states.EVENTS`; or, for an event
whose text varies, that text) and its stream offset, and the events list; it returns True when a bare block turned to text on the way (the
scan then reads on from `restart`, in TEXT).
"""

from __future__ import annotations

import functools

from gemma4_lark import tokens
from gemma4_lark.events import Stop, StrayMarkup, Text, ThinkingEnd, ThinkingStart

from . import _states as S

__all__ = ["WIDTH", "compiled"]


def _open_block(machine, marker: str, start: int, events: list) -> bool:
    machine.open_block(marker, start)
    return False


def _open_bare(machine, marker: str, start: int, events: list) -> bool:
    machine.open_block("", start, bare=True)
    return False


def _join(machine, marker: str, start: int, events: list) -> bool:
    machine.block.string_start = start
    return machine.add_to_block(tokens.STRING_DELIMITER, start, events)


def _close_block(machine, marker: str, start: int, events: list) -> bool:
    if machine.add_to_block(marker, start, events):
        return True
    if machine.block.string_openers and not machine.rereading:
        return machine.close_at_next_call(events, start + len(marker))
    machine.end_block(events, start + len(marker), closed=True)
    return False


def _note_opener(machine, marker: str, start: int, events: list) -> bool:
    if not machine.rereading:
        machine.block.string_openers.append(start)
    return machine.add_to_block(marker, start, events)


def _end_block(machine, marker: str, start: int, events: list) -> bool:
    machine.end_block(events, start, closed=False)
    return False


def _end_bare(machine, marker: str, start: int, events: list) -> bool:
    # The bare block's object is closed. A call: a further bare call may follow (the row's
    # LINE_START). Prose after all (it does not decode): the text state, as after any prose, so
    # that a `call:NAME{` right after it is prose too (a guess never follows a failed guess).
    if machine.end_block(events, start, closed=False):
        machine.restart = start
        return True
    return False


def _drop_guess(machine, marker: str, start: int, events: list) -> bool:
    # a bare block of a declared tool after prose that no `<tool_call|>` closed was prose: every
    # character of it, as it came (a guessed block is never cut: past the limit it is text already)
    block, machine.block = machine.block, None
    if block.size:
        events.append(Text(block.text(), (block.start, start)))
    return False


def _stop(machine, marker: str, start: int, events: list) -> bool:
    events.append(Stop(marker, (start, start + len(marker))))
    return False


def _stray(machine, marker: str, start: int, events: list) -> bool:
    events.append(StrayMarkup(marker, (start, start + len(marker))))
    return False


def _start_thought(machine, marker: str, start: int, events: list) -> bool:
    events.append(ThinkingStart((start, start + len(marker))))
    return False


def _end_thought(machine, marker: str, start: int, events: list) -> bool:
    events.append(ThinkingEnd((start, start + len(marker))))
    return False


def _end_thought_at_label(machine, line: str, start: int, events: list) -> bool:
    # `line` is the opener and its label line (`<|channel>response\n`): the opener ends the thought,
    # the label is markup, as the late `thought\n` label is
    at = start + len(tokens.CHANNEL_OPEN)
    events.append(ThinkingEnd((start, at)))
    events.append(StrayMarkup(line[len(tokens.CHANNEL_OPEN):], (at, start + len(line))))
    return False


def _cut_thought(machine, marker: str, start: int, events: list) -> bool:
    events.append(ThinkingEnd((start, start)))
    return False


def _nothing(machine, marker: str, start: int, events: list) -> bool:
    return False


_ACTIONS = {
    S.OPEN_BLOCK: _open_block, S.OPEN_BARE: _open_bare, S.JOIN: _join, S.CLOSE_BLOCK: _close_block,
    S.END_BLOCK: _end_block, S.END_BARE: _end_bare, S.STOP: _stop, S.STRAY: _stray, S.STRAY_LABEL: _stray,
    S.START_THOUGHT: _start_thought, S.END_THOUGHT: _end_thought, S.CUT_THOUGHT: _cut_thought,
    S.NOTE_OPENER: _note_opener, S.NOTHING: _nothing, S.END_THOUGHT_AT_LABEL: _end_thought_at_label,
    S.DROP_GUESS: _drop_guess,
}


@functools.lru_cache(maxsize=16)
def compiled(table: S.StateTable) -> dict:
    """The table with each action's name replaced by its function, and whether the marker is read
    again as a bool: one lookup per marker. Made once per table."""
    return {state: {marker: (_ACTIONS[entry[0]], entry[1], len(entry) > 2) for marker, entry in row.items()}
            for state, row in table.transitions.items()}


# How much of the text a transition reads past: a marker's length, but what the scan decides at a
# place reads nothing (the bare head and the object's `}` are the block's content).
WIDTH = {S.BARE_HEAD: 0, S.OBJECT_CLOSED: 0, S.NEW_LINE: 0, S.NO_CLOSER: 0,
         S.STRAY_DELIMITER: len(tokens.STRING_DELIMITER)}
