"""parse_output's express path: a whole output of the usual shape, read in a few C-level steps.

StreamParser reads an output as it comes: a method call per marker and per piece, a state kept
between chunks. A whole output of the usual shape (text, labelled thoughts, call blocks that make
one call each) needs none of that: a regex of the markers finds them, the block-rest pattern finds
each block's end, and `gemma4_lark.blocks.decide_block` decides each block, as it does for the
stream. `events(parser, text)` gives the events that `parser` (new) gives for `text` fed whole
and flushed, or None when the output is not of that shape, and then the parser reads it. (A stop
marker in text is an event, and text goes on, as in the stream.)

Accept-only (docs/architecture.md#second-implementations-and-their-proofs): whatever it does not take (declared
tools, a tool_choice, stray markup, an unlabelled channel, an unclosed thought or block, a call
inside a thought, a bare call the stream would guess, a block that is not one call, a block past
`max_block_chars`, a marker's prefix at the end) goes to StreamParser, so every result it gives is
StreamParser's. Its pieces are StreamParser's own: the state table's markers and transitions, the
block-rest pattern, the head decision (`call_name`), the block decision. Call ids are asked of the
parser's id factory only once the whole output is taken, one per block in order, as the stream
asks. tests/differential/test_express.py checks by differential fuzzing that every output it takes gives
exactly StreamParser's events, ids included.

With the accelerators off (`gemma4_lark.accelerators`), `events` takes nothing: parse_output
reads every output with the stream. `read_whole` is the path itself, switch or not, for the tests
that compare it with the stream (with the switch off: the plain stream).
"""

from __future__ import annotations

import functools
import re

from gemma4_lark import accelerators, tokens
from gemma4_lark.grammar import whitespace
from gemma4_lark.blocks import BlockCall, decide_block
from gemma4_lark.events import Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallStart

from . import _states
from ._block import MAX_HEAD, call_name
from ._block_jump import block_rest, block_rest_end
from ._bare import bare_head
from .parser import StreamParser

_BLANKS = whitespace()


@functools.lru_cache(maxsize=2)
def _patterns(strict: bool):
    """Per state, a regex of its markers (longest first: at one place the longest wins, as the
    scan's table has it) and its markers' proper prefixes, with the longest's length; what each
    marker of the text does (the table's row); and the block-rest pattern (None before Python
    3.11: then there is no express path)."""
    table = _states.table(True, strict)

    def markers(state):
        _, prefixes, longest = table.scan[state]
        return re.compile("|".join(map(re.escape, table.markers(state)))), prefixes, longest

    return markers(_states.TEXT), markers(_states.THOUGHT), table.transitions[_states.TEXT], block_rest(strict)


def events(parser: StreamParser, text: str) -> list | None:
    """The events of `text` read whole by `parser` (a new parser, nothing fed yet), or None when
    the output is not one this path takes, or the accelerators are off. Asks `parser` for call
    ids only when it takes it."""
    return read_whole(parser, text) if accelerators.ENABLED else None


def read_whole(parser: StreamParser, text: str) -> list | None:
    """`events`, whatever the accelerators' switch says."""
    try:
        out = _read(parser, text)
    except Exception:  # noqa: BLE001 - an option of a shape it does not expect (`max_depth=None`):
        return None    # the stream reads the output, and says what it says of it
    return _with_ids(out, parser.id_factory) if out is not None else None


def _read(parser: StreamParser, text: str) -> list | None:
    """The output's events, a tuple standing for each call (its events need an id), or None."""
    if (not parser.policy.plain or not parser.parse_thinking or parser.start_in_thinking
            or parser.reads_token_ids or not parser.fresh):
        return None
    policy = parser.policy
    strict = policy.strict
    (in_text, text_prefixes, longest), (in_thought, _, _), in_text_does, rest_pattern = _patterns(strict)
    if rest_pattern is None:
        return None
    if not strict and _bare_call_guessed(text, 0):
        return None
    out: list = []  # events, and a tuple for each call (its events need an id)
    n = len(text)
    i = 0
    text_from = 0  # where the text read in the text state last began: a marker's prefix after it is held
    while True:
        found = in_text.search(text, i)
        j = found.start() if found is not None else n
        if i < j:
            out.append(Text(text[i:j], (i, j)))
        if found is None:
            break
        marker = found.group()
        action, target = in_text_does[marker][:2]
        if action == _states.OPEN_BLOCK:
            end, delimiters = block_rest_end(rest_pattern, strict, text, found.end())
            if end == -1 or end - j > parser.max_block_chars:
                return None
            raw = text[j:end]
            if delimiters is not None:  # (found on the way, by memchr: a long block)
                delimiters = [at - j for at in delimiters]
            outcomes = decide_block(raw, policy, delimiters=delimiters)
            if len(outcomes) != 1 or type(outcomes[0]) is not BlockCall or outcomes[0].diagnostics:
                return None  # an error, a recovery, a warning: the stream's to say, with its events
            brace = raw.find("{", len(tokens.TOOL_CALL_OPEN), MAX_HEAD)
            name = call_name(raw, brace) if brace >= 0 else None
            out.append((j, end, j + brace + 1 if name is not None else -1, name, outcomes[0], raw))
            i = text_from = end
            continue
        if action == _states.STOP:  # what the stream does: the marker is an event, and text goes on
            out.append(Stop(marker, (j, found.end())))
            i = text_from = found.end()
            continue
        if action != _states.START_THOUGHT or target != _states.THOUGHT:  # stray markup, an unlabelled channel
            return None
        out.append(ThinkingStart((j, found.end())))
        i = found.end()
        closer = in_thought.search(text, i)
        if closer is None or closer.group() != tokens.CHANNEL_CLOSE:  # unclosed, or a marker inside
            return None
        k = closer.start()
        if i < k:
            out.append(ThinkingDelta(text[i:k], (i, k)))
        out.append(ThinkingEnd((k, closer.end())))
        i = text_from = closer.end()
        if not strict and _bare_call_guessed(text, i):
            return None
    # feed() holds back a `<` that could still start a marker (flush reads it again, as a text of
    # its own): not this path's
    at = text.find("<", max(text_from, n - longest + 1))
    while at != -1:
        if text[at:] in text_prefixes:
            return None
        at = text.find("<", at + 1)
    return out


def _bare_call_guessed(text: str, i: int) -> bool:
    """Whether the stream, not strict, guesses a bare call at text[i] (the output's start, or
    right after a thought), or holds the text back to tell, or stays on guard to the end (only
    whitespace is left): what its scan does there, with its own head decision."""
    k = i
    n = len(text)
    while k < n and text[k] in _BLANKS:
        k += 1
    return k == n or bare_head(text, k, False) is not None


def _with_ids(out: list, new_id) -> list:
    events: list = []
    index = 0
    for item in out:
        if type(item) is not tuple:
            events.append(item)
            continue
        start, end, head_end, name, call, raw = item
        call_id = new_id()
        if name is not None:
            events.append(ToolCallStart(call_id, index, name, (start, head_end)))
        events.append(ToolCallEnd(call_id, index, call.name, call.arguments, raw, call.diagnostics, call.recovered,
                                  (head_end if head_end >= 0 else start, end)))
        index += 1
    return events
