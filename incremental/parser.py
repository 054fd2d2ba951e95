"""StreamParser: chunks of model output in, events out. Sans-IO, like h11: no I/O, no threads.

This layer only buffers and finds block boundaries. A finished call block is decoded by the strict
parser of the grammar (`gemma4_lark.parse_call`); when that rejects it and the parser is not
strict, by the lenient decoder when one is available.

How the cost stays linear: each chunk is scanned once, from where the last scan stopped. The only
text scanned twice is a held-back suffix that could still become a marker (shorter than the longest
marker) or the head of a bare call (at most `_MAX_HEAD` characters), re-read with the next chunk.
An open call block is kept as a list of pieces, small pieces joined every `_COMPACT_EVERY` so the list
holds few objects (a block of 1-character chunks would otherwise cost a `str` object per character),
and joined once more when it closes.

Memory: the open block (at most `max_block_chars` kept) and a bounded hold-back; a thought is not
kept at all once its deltas are out (`ThinkingEnd` carries no text).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import secrets
from typing import Any, Sequence

import gemma4_lark
from gemma4_lark import fastpath, marker_search, tokens
from gemma4_lark.diagnostics import Diagnostic, LineIndex
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.parser import parse_from, parse_lossless_call
from gemma4_lark.recovery import decode_calls, failure_code
from gemma4_lark.schema.lexeme import Scalar, plain
from gemma4_lark.schema.registry import ToolRegistry, compile_tools
from gemma4_lark.tools import read_tool_choice
from gemma4_lark.grammar import terminal_pattern
from gemma4_lark.model import ThoughtPrefill, ToolResponse
from gemma4_lark.render.safety import CONTROL

from gemma4_lark.events import (
    Event, Stop, StrayMarkup, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart,
)
from gemma4_lark.possessive import POSSESSIVE

from .token_ids import TokenMarkers

# States. _STRING is inside a `<|"|>` string of a call block, where only the delimiter counts;
# _BARE_STRING inside a string of a bare block, where a real `<|tool_call>` ends the block too.
_TEXT, _THINKING, _CALL, _STRING, _BARE_STRING = "text", "thinking", "call", "string", "bare-string"

_THOUGHT_OPENERS = (tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN[:-1])  # the newline is optional
# With the unlabelled `<|channel>`: what opens a channel (not strict, an unlabelled one is a thought).
_CHANNEL_OPENERS = _THOUGHT_OPENERS + (tokens.CHANNEL_OPEN,)
# The channel's label, when it comes after the closer of an unlabelled channel (a thinking budget
# closed the channel before the model wrote it); the newline is required here, as it is prose too.
_LATE_LABEL = tokens.THOUGHT_OPEN[len(tokens.CHANNEL_OPEN):]
_STOPS = (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
# Inside a call block, outside its strings: what ends the block. Only the first closes it properly;
# the others end an unclosed block (and are then handled as they would be in text).
_CALL_ENDS = (tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_CALL_OPEN, tokens.TOOL_RESPONSE_OPEN)
# What a string follows in a block (whitespace aside): where a key or a value begins.
_VALUE_STARTS = frozenset("{[,:(=")
# FunctionGemma's string delimiter: in a bare word of a valid block, the decoders report it.
_FUNCTIONGEMMA_ESCAPE = "<escape>"
# How far into a block to look for the `{` that completes `call:NAME{`.
_MAX_HEAD = 256
# After this many small pieces, the open block's pieces are joined into one: amortized linear, and
# the piece list stays short whatever the chunking.
_COMPACT_EVERY = 256
# What ends the head of a bare call: its arguments' `{` (the grammar's form, the only one that opens
# a bare block: `call:x(` is too common in prose), or a `(` or `<` (no name holds one).
_BARE_HEAD_END = re.compile(r"[{(<]")
# In a bare block outside strings: the braces that end it (at the `}` matching its first `{`), and
# the `<` that may start a marker.
_BARE_SCAN = re.compile(r"[{}<]")


def default_id_factory() -> str:
    """`call_` and 24 random hex digits. Raises nothing."""
    return "call_" + secrets.token_hex(12)


def _by_length(markers):
    return tuple(sorted(markers, key=len, reverse=True))


@functools.lru_cache(maxsize=4)
def _scan_table(parse_thinking: bool, strict: bool = False) -> dict:
    """Per state: the markers by the character that follows their `<` (any other `<` is skipped
    at once), every proper prefix of a marker (what may be held back), and the longest marker's
    length. Built once per setting, not per parser: a server makes a parser per response.

    The stray markup is found too (docs/leniency.md#stray-markup), strict or not: in text a
    closer with nothing open, `<channel|>` or `<tool_call|>`, and a channel opener without its
    label (not strict it opens a thought; strict it is stray); in a thought, any channel opener.
    The longest marker is still a thought opener, so the hold-back stays as short as it was.
    (`strict` no longer changes the table; the argument stays for its callers.)"""
    text_markers = (tokens.TOOL_CALL_OPEN,) + _STOPS
    thinking_markers = (tokens.CHANNEL_CLOSE, tokens.TOOL_CALL_OPEN) + _STOPS
    if parse_thinking:
        text_markers += _THOUGHT_OPENERS
    text_markers += (tokens.TOOL_CALL_CLOSE,)
    thinking_markers += _CHANNEL_OPENERS
    if parse_thinking:
        text_markers += (tokens.CHANNEL_OPEN, tokens.CHANNEL_CLOSE)
    markers_of = {
        _TEXT: _by_length(text_markers),
        _THINKING: _by_length(thinking_markers),
        _CALL: _by_length(_CALL_ENDS + (tokens.STRING_DELIMITER,)),
        _STRING: (tokens.STRING_DELIMITER,),
        _BARE_STRING: _by_length((tokens.STRING_DELIMITER, tokens.TOOL_CALL_OPEN)),
    }
    table = {}
    for state, markers in markers_of.items():
        by_second: dict = {}
        for marker in markers:  # longest first, so the longest match wins
            by_second.setdefault(marker[1], []).append(marker)
        prefixes = frozenset(m[:k] for m in markers for k in range(1, len(m)))
        table[state] = (by_second, prefixes, len(markers[0]))
    return table


@functools.lru_cache(maxsize=2)
def _block_rest(strict: bool) -> re.Pattern | None:
    """The rest of a call block, from where the scan stands in its structure to its `<tool_call|>`,
    when nothing in it needs the scan: no marker but string delimiters, each string opened where
    `_opens_string` opens one (after a value start, whitespace aside; strict, anywhere) and closed.
    A block the scan has in full is then taken in one step, not a step per delimiter; any other
    block (a stray delimiter, a marker that ends it unclosed, its end not yet here) fails to match
    at its first such place, and the scan reads it as before. Made from the scan table's markers.

    Possessive and atomic (Python 3.11 and later; None before, where the scan reads every block): a
    match that fails gives nothing back, so it costs one pass over what it read. A backtracking
    form took 30 times as long to fail on a 20 KB string as to match it."""
    if not POSSESSIVE:
        return None

    def others(markers):  # what follows a `<` that starts none of `markers`
        return "(?!" + "|".join(re.escape(m[1:]) for m in _by_length(markers)) + ")"

    def run(markers):  # characters that start none of `markers`, `[^<]` taken in one loop
        return "[^<]*+(?:<" + others(markers) + "[^<]*+)*+"

    call_markers = _CALL_ENDS + (tokens.STRING_DELIMITER,)
    delimiter = re.escape(tokens.STRING_DELIMITER)
    if strict:
        opener = run(call_markers) + delimiter
    else:  # the structure, then a delimiter after a value start and at most 4 blanks (more: the scan's)
        starts = "[" + re.escape("".join(sorted(_VALUE_STARTS))) + "]"
        blank = f"[{_BLANKS}]"
        after_start = "|".join(f"(?<={starts}{blank * count})" for count in range(_BLANKS_BEFORE_STRING + 1))
        opener = f"{run(call_markers)}(?:{after_start}){delimiter}"
    inside = run((tokens.STRING_DELIMITER,))
    return re.compile(f"(?:{opener}{inside}{delimiter})*+{run(call_markers)}" + re.escape(tokens.TOOL_CALL_CLOSE))


_OTHER_CALL_ENDS = tuple(m for m in _CALL_ENDS if m != tokens.TOOL_CALL_CLOSE)
_BLANKS = " \t\r\n"
_BLANKS_BEFORE_STRING = 4  # what `_block_rest` reads back over, after a value start


def _block_rest_end(pattern: re.Pattern, strict: bool, data: str, i: int) -> tuple[int, list[int] | None]:
    """Where `pattern` (`_block_rest(strict)`) ends its match at data[i], -1 where it fails; and
    where the delimiters between are, when they were found on the way (else None).

    The same end, found faster on a long rest, where the regex engine steps through every
    character of the strings (about 0.5 ns each): the `<`s one by one, found by memchr, while
    that is ahead (marker_search.ahead); then the pattern, from the last place in the structure.
    The delimiters found so are what the block's decoders would look for again: they are handed
    on. tests/test_stream_block_jump.py checks both ways give the same end on random blocks."""
    n = len(data)
    if n - i < marker_search.SHORT:
        found = pattern.match(data, i)
        return (found.end() if found is not None else -1), None
    seek = data.find
    at_marker = data.startswith
    delimiter, closer = tokens.STRING_DELIMITER, tokens.TOOL_CALL_CLOSE
    delimiters: list[int] = []
    inside = False
    step = marker_search.STEP
    budget = marker_search.FREE_STEPS * step  # marker_search.ahead, inlined
    at = seek("<", i)
    while at != -1:
        budget -= step
        if budget < i - at:
            break
        if at_marker(delimiter, at):
            if not inside and not strict and not _after_value_start(data, at):
                return -1, None
            inside = not inside
            delimiters.append(at)
            at = seek("<", at + len(delimiter))
            continue
        if not inside:
            if at_marker(closer, at):
                return at + len(closer), delimiters
            if any(at_marker(marker, at) for marker in _OTHER_CALL_ENDS):
                return -1, None
        at = seek("<", at + 1)
    else:
        return -1, None  # no `<` left: no closer
    place = at  # nothing between the last delimiter and this `<` is a marker
    if inside:  # the rest of this string, then the pattern from the structure after it
        end = seek(delimiter, at)
        if end == -1:
            return -1, None
        place = end + len(delimiter)
    found = pattern.match(data, place)
    return (found.end() if found is not None else -1), None


def _after_value_start(data: str, at: int) -> bool:
    """Whether the delimiter at data[at] follows a value start, with at most
    _BLANKS_BEFORE_STRING blanks between: `_block_rest`'s look-behind."""
    k = at - 1
    while k >= 0 and at - k <= _BLANKS_BEFORE_STRING and data[k] in _BLANKS:
        k -= 1
    return k >= 0 and data[k] in _VALUE_STARTS


# A block's rest is looked for in one step only when this much of the chunk is left: a stream of
# small deltas gains nothing from it (its blocks arrive a piece at a time).
_BLOCK_JUMP_MIN = 32


class StreamParser:
    """Feed chunks of model output; get events.

    Options: `parse_thinking` (read the thought channel; off: its markup stays in the text),
    `start_in_thinking` (the prompt ended inside `<|channel>thought\\n`), `strict` (a block the
    grammar rejects is an error, never recovered), `id_factory` (a callable minting call ids),
    `max_block_chars` and `max_depth` (bounds on one call block), `tools` (the request's tools,
    OpenAI-wrapped or bare function schemas: calls are decoded against them) and `tool_choice`
    ("none", "auto", "required" or a function); docs/schema.md says what these two change.
    `lossy_recovery`: accept a recovered call whose reading leaves some of the model's text out of
    its arguments (a key without a value, words after the object); by default such a block is a
    `tool_call_error` (code `lossy`) carrying the `partial` arguments (docs/leniency.md).
    Whole-output findings (`tool_choice` "required" and no call) are in `diagnostics` after
    `flush()`.

    Raises `ShapeError` for malformed `tools` or `tool_choice`, `ImportError` when `tools` are
    given and jsonschema-rs (a dependency) is missing.
    """

    def __init__(self, *, parse_thinking: bool = True, start_in_thinking: bool = False, strict: bool = False,
                 id_factory=None, max_block_chars: int = 4 * 1024 * 1024, max_depth: int = 512,
                 tools: Sequence[Any] | ToolRegistry | None = None, tool_choice: Any = None,
                 lossy_recovery: bool = False):
        self._registry = compile_tools(tools)
        self.lossy_recovery = lossy_recovery
        self._choice = read_tool_choice(tool_choice, self._registry.tools if self._registry is not None else ())
        self.diagnostics: list[Diagnostic] = []  # whole-output findings, complete after flush()
        self._calls_made = 0    # tool_call_end events so far
        self.parse_thinking = parse_thinking
        self.strict = strict
        self.max_block_chars = max_block_chars
        self.max_depth = max_depth
        self._new_id = id_factory or default_id_factory
        self._scan_table = _scan_table(parse_thinking, strict)
        self._block_rest = _block_rest(strict)
        self._state = _TEXT
        self._pending = ""      # held back: could still become a marker
        self._pos = 0           # stream offset of the start of `_pending`
        self._finished = False
        # Bare-call recovery (not strict): at the start of the output, or right after a thought's
        # `<channel|>`, `call:NAME{` with no `<|tool_call>` before it opens a block (tokenizers that
        # skip special tokens strip the opener). Anywhere else `call:` is prose.
        self._armed = not strict
        self._bare = False
        self._bare_depth = 0    # braces open in a bare block, outside its strings
        self._restart = 0       # where scanning resumes after a bare block turned to text
        self._call_count = 0
        # the open call block
        self._block: list[str] = []   # joined pieces, then at most _COMPACT_EVERY small ones
        self._small = 0                # small pieces at the end of _block
        self._block_start = 0
        self._block_size = 0
        self._block_id = ""
        self._head = ""         # the block's first _MAX_HEAD characters, until its head is decided
        self._head_end = -1     # stream offset just after `call:NAME{`, once seen
        self._oversized = False
        self._delimiters: list[int] | None = None  # where the block's delimiters are, when the scan found them
        # Stray markup (not strict): an unlabelled `<|channel>` opened the thought, and once its
        # `<channel|>` comes, a `thought\n` label right after it is markup too (the label the model
        # meant to write first). Set only with `_armed`, so the fast path of feed() never skips it.
        self._unlabelled = False
        self._label_due = False
        # where the last call block ended, moved on over whitespace-only text after it: a cut opener
        # there at the end of the stream is stray markup (flush)
        self._after_block = -1
        # Token mode (`for_tokenizer`): the tokenizer's marker ids, and the stream offsets where a
        # marker's special token starts; a `<` anywhere else is text. None: markers by text.
        self._markers: TokenMarkers | None = None
        self._marks: set[int] | None = None
        self._marker_ids: frozenset[int] = frozenset()
        self._mask = ""         # while a block is decoded: what stands for the `<` of spelled markers
        self._carry: tuple[int, ...] = ()  # ids of a character not complete when the last delta ended
        if start_in_thinking and parse_thinking:
            self._state = _THINKING
            self._start_events = [ThinkingStart((0, 0))]
        else:
            self._start_events = []

    # --- public API -----------------------------------------------------------------------------
    @classmethod
    def for_prompt(cls, prompt: str, **options) -> "StreamParser":
        """A parser for the output that follows the rendered `prompt`, its state read from the
        prompt's tail by the grammar (`parse_transcript`): when the prompt's last turn is an open
        model turn ending in a thought prefill (`<|channel>thought\\n`, which the official template
        writes after tool results when thinking is on), the output starts inside that thought.

        `options` are StreamParser's, except `start_in_thinking`, which is inferred. Raises
        `TypeError` when `prompt` is not a str or `start_in_thinking` is given, `ValueError` when the
        prompt does not end in an open model turn (no generation prompt; a model turn the template
        closed after tool results, with the message's text after them, counts as open) or ends
        inside a call block, and `GemmaSyntaxError` (with its position) when the grammar rejects
        the prompt before its last model turn.

        An assistant prefill (`continue_final_message`: the open model turn holds the start of an
        answer, cut anywhere) is read as model output: ending inside a thought
        (`<|channel>thought\nLet me`), the output starts inside it; ending in text, in text.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be str, not {type(prompt).__name__}")
        if "start_in_thinking" in options:
            raise TypeError("for_prompt() infers start_in_thinking from the prompt; do not pass it")
        try:
            turns = gemma4_lark.parse_transcript(prompt).turns
        except GemmaSyntaxError as err:
            prefilled = cls._prefill_state(prompt, err, options)
            return cls(start_in_thinking=prefilled, **options)
        last = turns[-1] if turns else None
        # The official template closes a model turn whose message had both calls and text (the
        # text goes after the results) and writes no new turn: the model goes on from there, after
        # a thought prefill when thinking is on. Any other closed turn lacks the generation prompt.
        continued = last is not None and last.closed and last.role == "model" and any(
            isinstance(part, (ToolResponse, ThoughtPrefill)) for part in last.parts)
        if last is None or last.role != "model" or (last.closed and not continued):
            raise ValueError("the prompt does not end in an open model turn: render it with the generation"
                             " prompt (add_generation_prompt=True)")
        prefilled = bool(last.parts) and isinstance(last.parts[-1], ThoughtPrefill)
        return cls(start_in_thinking=prefilled, **options)

    @classmethod
    def _prefill_state(cls, prompt: str, err: GemmaSyntaxError, options: dict) -> bool:
        """A prompt the grammar rejects inside its last, open model turn: the assistant prefill
        (`continue_final_message`) is model output, cut anywhere, so it is read as the output is,
        by a parser of these options, and the output starts where that parser stands at its end:
        True inside a thought, False in text. Inside a call block it cannot start (the block's
        beginning is in the prompt, and a call is decoded whole): a ValueError. Any other
        rejection is `err`, raised again."""
        opener = tokens.TURN_OPEN + "model\n"
        body = prompt.rfind(opener)
        if body < 0 or err.pos < body + len(opener):
            raise err
        body += len(opener)
        head = gemma4_lark.parse_transcript(prompt[:body]).turns  # (raises for a head that is wrong too)
        if not head or head[-1].role != "model" or head[-1].closed:
            raise err
        reader = cls(parse_thinking=options.get("parse_thinking", True), strict=options.get("strict", False))
        reader.feed(prompt[body:])
        if reader._state is _THINKING:
            return True
        if reader._state is not _TEXT:
            raise ValueError(
                f"the prompt's assistant prefill ends inside a tool call (its {tokens.TOOL_CALL_OPEN} at offset"
                f" {body + (reader._block_start)}): a call is parsed whole, so the output cannot start in the middle"
                f" of one; end the prefill before {tokens.TOOL_CALL_OPEN} or after {tokens.TOOL_CALL_CLOSE}")
        return False

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, **options) -> "StreamParser":
        """A parser that reads markers by token id: `feed(text, token_ids=ids)` (docs/streaming.md#token-ids).
        Only a marker's special token is a marker, whether or not its text is in the delta;
        the same characters written with ordinary tokens are text (kept in the content, the
        thought or the call's string). Ids whose text a delta lacks are decoded with `tokenizer`.
        Without a `<|tool_call>` token there is no call, so a bare `call:NAME{` is never guessed
        to be one. `feed(text)` without ids reads that delta's markers by text, as ever.

        `tokenizer` needs `convert_tokens_to_ids(token)` (or `token_to_id`) and
        `decode(ids, skip_special_tokens=...)`, as Hugging Face's have; each marker's id is read
        once per tokenizer. `options` are StreamParser's. Raises TypeError for a tokenizer without them,
        ValueError for one with no single token for `<|tool_call>`, `<tool_call|>` or `<|"|>`,
        and what StreamParser raises.
        """
        parser = cls(**options)
        parser._markers = TokenMarkers.of(tokenizer)
        parser._marks = set()
        parser._marker_ids = parser._markers.ids
        parser._armed = False  # a missing opener is in the ids: nothing to guess
        return parser

    def feed(self, chunk: str, token_ids: Sequence[int] | None = None) -> list[Event]:
        """Events that `chunk` completes (possibly none). `token_ids`: the ids the delta's text
        came from, for a parser made by `for_tokenizer`; spans then index the text as
        reconstructed from both (docs/streaming.md#token-ids).

        Problems in the text become events, never exceptions. Raises `TypeError` when `chunk` is
        not a str, `ValueError` for `token_ids` given to a parser not made by `for_tokenizer`,
        and `RuntimeError` after `flush()`.
        """
        if type(chunk) is not str:
            raise TypeError(f"chunks must be str, not {type(chunk).__name__}")
        if token_ids is not None or self._marks is not None:
            # Token mode. The common delta: text and no marker id, nothing held back: text,
            # thought or block content as a whole, whatever it spells
            if (chunk and token_ids is not None and self._marks is not None and self._marker_ids.isdisjoint(token_ids)
                    and not self._pending
                    and not self._start_events and not self._label_due and not self._finished and not self._oversized):
                self._carry = ()
                return self._plain(chunk)
            return self._feed_ids(chunk, token_ids)
        if self._finished:
            raise RuntimeError("feed() after flush(): the stream is over")
        # Fast path, most chunks of most streams: nothing held back and no `<` in sight, so the
        # chunk is text, thought or block content as a whole.
        # (A bare block counts its braces: the scan does that.)
        if not self._pending and not self._start_events and "<" not in chunk and not self._armed and not self._bare:
            # (what _consume does, inlined: this runs for nearly every chunk, and the call
            # measured about a quarter of the path's instructions)
            if not chunk:
                return []
            start = self._pos
            end = self._pos = start + len(chunk)
            state = self._state
            if state is _TEXT:
                if start == self._after_block and chunk.isspace():
                    self._after_block = end
                return [Text(chunk, (start, end))]
            if state is _THINKING:
                return [ThinkingDelta(chunk, (start, end))]
            size = self._block_size + len(chunk)
            if not self._head and self._small < _COMPACT_EVERY - 1 and size <= self.max_block_chars:
                # block content once its head is decided: what _add_to_block does then, inlined
                # (not bare, not oversized, not yet due to be compacted)
                self._block_size = size
                self._block.append(chunk)
                self._small += 1
                return []
            events = []
            self._add_to_block(chunk, start, events)
            return events
        return self._scan_chunk(chunk)

    def _feed_ids(self, chunk: str, token_ids: Sequence[int] | None) -> list[Event]:
        """feed() in token mode."""
        markers = self._markers
        if markers is None:
            raise ValueError("token_ids need a parser made by StreamParser.for_tokenizer(tokenizer)")
        if token_ids is None:
            return self._feed_aligned(chunk, None)
        return self._feed_aligned(*self._align(chunk, token_ids))

    def _align(self, chunk: str, token_ids: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """(the delta's text as reconstructed, where its markers' special tokens start)."""
        if self._markers is None:
            raise ValueError("token_ids need a parser made by StreamParser.for_tokenizer(tokenizer)")
        if type(chunk) is not str:
            raise TypeError(f"chunks must be str, not {type(chunk).__name__}")
        text, marks, self._carry = self._markers.align(chunk, token_ids, self._carry)
        return text, marks

    def _feed_aligned(self, chunk: str, marks: tuple[int, ...] | None) -> list[Event]:
        """feed() of a chunk whose markers' offsets in it are `marks` (token mode), or None: read
        its markers by text (in token mode, every `<` of it may start one)."""
        if self._marks is None:  # (a parser not made by for_tokenizer: marks are None)
            return self.feed(chunk)
        if self._finished:
            raise RuntimeError("feed() after flush(): the stream is over")
        known = self._marks
        at = self._pos + len(self._pending)
        if marks is None:  # markers by text: every `<` may start one
            find = chunk.find
            k = find("<")
            while k != -1:
                known.add(at + k)
                k = find("<", k + 1)
        elif marks:
            known.update(at + m for m in marks)
        if not self._pending and not self._start_events and not self._label_due and (marks == () or "<" not in chunk):
            # no marker in the chunk: text, thought or block content as a whole, whatever it
            # spells (no bare block opens in token mode)
            return self._plain(chunk)
        return self._scan_chunk(chunk)

    def _plain(self, chunk: str) -> list[Event]:
        """A chunk that holds no marker, with nothing held back: text, thought or block content."""
        if not chunk:
            return []
        start = self._pos
        end = self._pos = start + len(chunk)
        state = self._state
        if state is _TEXT:
            if start == self._after_block and chunk.isspace():
                self._after_block = end  # whitespace after a block, as the scan counts it
            return [Text(chunk, (start, end))]
        if state is _THINKING:
            return [ThinkingDelta(chunk, (start, end))]
        events: list[Event] = []
        self._add_to_block(chunk, start, events)
        if self._oversized and self._marks:
            self._forget_marks()
        return events

    def _scan_chunk(self, chunk: str) -> list[Event]:
        events = self._start_events
        if events:
            self._start_events = []
        else:
            events = []
        self._scan(self._pending + chunk, events, final=False)
        if self._marks:
            self._forget_marks()
        return events

    def _forget_marks(self) -> None:
        """Drop the marks no scan or block needs again: behind what is held back, and behind the
        open block's start unless it is too large to decode (memory stays bounded). Each mark
        is dropped once; in an open block they are kept until it ends."""
        state = self._state
        if state is _TEXT or state is _THINKING:
            keep = self._pos
        elif self._oversized:
            keep = self._pos
        else:
            return
        self._marks = {m for m in self._marks if m >= keep}

    def flush(self) -> list[Event]:
        """The end of the stream: release what was held back and close what is open. Raises
        nothing; a second call returns []."""
        if self._finished:
            return []
        # The ids of a character the stream never completed are no text: an engine's incremental
        # detokenizer (vLLM's DecodeStream) never sends their bytes, in the stream or the message.
        self._carry = ()
        events = self._start_events
        self._start_events = []
        pending = self._pending
        if (pending and self._state is _TEXT and self._pos == self._after_block and not self.strict
                and len(pending) >= 2 and tokens.TOOL_CALL_OPEN.startswith(pending)):
            # the stream ends on a cut opener right after a call (`<tool_call|><|tool_c`): the
            # marker of a further call the model never wrote; markup, not text (docs/leniency.md)
            events.append(StrayMarkup(pending, (self._pos, self._pos + len(pending))))
            self._pos += len(pending)
            pending = self._pending = ""
        self._scan(pending, events, final=True)
        if self._state is _STRING and not self.strict:
            self._end_at_closer_in_open_string(events)
        self._finished = True
        if self._state == _THINKING:
            self._end_thinking(events, self._pos, self._pos)
        elif self._state is _CALL and self._empty_block_after_a_call():
            # the same with the whole opener (`<tool_call|><|tool_call>` and nothing more): a block
            # holding nothing is no call that could be cut off
            opener = tokens.TOOL_CALL_OPEN
            start = self._block_start
            events.append(StrayMarkup(opener, (start, start + len(opener))))
            if self._pos > start + len(opener):
                events.append(Text("".join(self._block)[len(opener):], (start + len(opener), self._pos)))
            self._state = _TEXT
            self._block = []
        elif self._state in (_CALL, _STRING, _BARE_STRING):
            self._end_block(events, self._pos, closed=False, at_end=True)
        self._check_output()
        return events

    def _empty_block_after_a_call(self) -> bool:
        """At the end of the stream (not strict): the open block is only its `<|tool_call>` and
        whitespace, and it opened right after a call block (whitespace aside)."""
        if self.strict or self._bare or self._oversized or self._block_start != self._after_block:
            return False
        return self._block_size <= _MAX_HEAD and "".join(self._block).rstrip(" \t\r\n") == tokens.TOOL_CALL_OPEN

    def _check_output(self) -> None:
        """The whole-output check of `tool_choice`: "required" (or a named function) and no call.
        Its finding is about no place in the text: `pos` is the stream's end, line and column 0."""
        mode = self._choice.mode
        if mode in ("required", "function") and not self._calls_made:
            what = "a call" if mode == "required" else f"a call of `{self._choice.name}`"
            self.diagnostics.append(Diagnostic(
                "error", "missing-call", f"tool_choice requires {what}, and the output makes none", 0, 0, self._pos))

    def _types_arguments(self, name: str) -> bool:
        """Whether a call of `name` is typed by a schema: its bare scalars may change type when it
        is decoded (OpenAIStream streams its arguments only up to the first of them)."""
        schema = self._registry.get(name) if self._registry is not None else None
        return schema is not None and schema.root is not None

    def _refusal(self, name: str):
        """(code, message) when a call of `name` may not be made: undeclared, or not what
        `tool_choice` allows; else None."""
        if self._registry is not None and name not in self._registry:
            return "unknown-tool", f"`{name[:80]}` is not one of the declared tools"
        mode = self._choice.mode
        if mode == "none":
            return "tool-choice", "tool_choice is \"none\": no call may be made"
        if mode == "function" and name != self._choice.name:
            return "tool-choice", f"tool_choice names `{self._choice.name}`: `{name[:80]}` may not be called"
        return None

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
        marks = self._marks  # token mode: only a `<` at one of these may start a marker
        jump_tried = -1  # the block whose rest was looked for in this chunk (by its start)
        while i < n:
            if self._label_due:
                label = _LATE_LABEL
                if data.startswith(label, i):
                    events.append(StrayMarkup(label, (base + i, base + i + len(label))))
                    i += len(label)
                    self._label_due = False
                    continue
                if not final and n - i < len(label) and label.startswith(data[i:]):  # could still become the label
                    self._pending = data[i:]
                    self._pos = base + i
                    return
                self._label_due = False
            if self._armed and self._state is _TEXT:
                k = i
                while k < n and data[k] in " \t\r\n":
                    k += 1
                if k == n and not final:  # only whitespace so far: emit it, stay armed
                    if i < k:
                        self._consume(data, i, k, base, events)
                    i = n
                    break
                verdict = self._bare_head(data, k, final)
                if verdict is not None:
                    if i < k:
                        self._consume(data, i, k, base, events)
                    if verdict == "hold":
                        self._pending = data[k:]
                        self._pos = base + k
                        return
                    self._open_block("", base + k, bare=True)
                    i = k
                    continue
                self._armed = False
            by_second, prefixes, longest = self._scan_table[self._state]
            if self._bare and self._state is _CALL:
                j, found, closing = self._scan_bare(data, i, final)
                if closing:  # the `}` that closes the bare call's object ends its block
                    self._consume(data, i, j, base, events)
                    if not self._bare:  # it outgrew the limit first: text
                        i = self._restart - base
                        continue
                    self._end_block(events, base + j, closed=False)
                    self._armed = True  # a further bare call may follow (bare blocks are never strict)
                    i = j
                    continue
            else:
                if (self._state is _CALL and marks is None and n - i >= _BLOCK_JUMP_MIN and not self._oversized
                        and jump_tried != self._block_start and self._block_rest is not None):
                    jump_tried = self._block_start  # once per block and chunk: linear
                    rest, delimiters = _block_rest_end(self._block_rest, self.strict, data, i)
                    if rest != -1 and self._block_size + rest - i <= self.max_block_chars:
                        if (self._block_size == len(tokens.TOOL_CALL_OPEN)
                                and data.startswith(tokens.TOOL_CALL_OPEN, i - self._block_size, i)):
                            self._take_block(data, i, rest, base, delimiters, events)
                            i = rest
                            continue
                        closer = rest - len(tokens.TOOL_CALL_CLOSE)
                        if i < closer:
                            self._add_to_block(data[i:closer], base + i, events)
                        self._add_to_block(tokens.TOOL_CALL_CLOSE, base + closer, events)
                        self._end_block(events, base + rest, closed=True)
                        i = rest
                        continue
                j = find("<", i)
                found = None
                while j != -1:
                    if (j == last or data[j + 1] in by_second) and (marks is None or base + j in marks):
                        found = self._match(data, j, by_second, prefixes, longest, final)
                        if found is not None:
                            break
                    j = find("<", j + 1)
                if j == -1:
                    j = n
            if i < j:
                bare = self._bare
                self._consume(data, i, j, base, events)
                if bare and not self._bare:  # the bare block outgrew the limit: it was prose
                    i = self._restart - base
                    continue
            if found is None:
                break
            if found == "hold":
                self._pending = data[j:]
                self._pos = base + j
                return
            i = self._on_marker(found, data, j, base, events)
        self._pending = ""
        self._pos = base + n

    def _scan_bare(self, data: str, i: int, final: bool):
        """In a bare block outside strings, from data[i]: (j, marker or "hold" or None, closing).
        `closing`: data[j - 1] is the `}` that closes the block's object; else j is where the
        marker is (or len(data)). Counts the braces before j (each character read once)."""
        by_second, prefixes, longest = self._scan_table[_CALL]
        n = len(data)
        search = _BARE_SCAN.search
        depth = self._bare_depth
        pos = i
        while True:
            found = search(data, pos)
            if found is None:
                self._bare_depth = depth
                return n, None, False
            k = found.start()
            char = data[k]
            if char == "<":
                if k == n - 1 or data[k + 1] in by_second:
                    marker = self._match(data, k, by_second, prefixes, longest, final)
                    if marker is not None:
                        self._bare_depth = depth
                        return k, marker, False
            elif char == "{":
                depth += 1
            else:
                depth -= 1
                if depth <= 0:
                    self._bare_depth = 0
                    return k + 1, None, True
            pos = k + 1

    @staticmethod
    def _bare_head(data: str, k: int, final: bool):
        """At data[k], where a bare call may start: "open" when `call:NAME{` is there,
        "hold" when more input is needed to tell, None when it is not a call. The decision reads at
        most _MAX_HEAD characters, the same whatever the chunking."""
        keyword = tokens.CALL_KEYWORD
        n = len(data)
        if not data.startswith(keyword, k):
            # (only a rest shorter than the keyword can be its start: no copy of a long rest)
            return "hold" if not final and n - k < len(keyword) and keyword.startswith(data[k:]) else None
        limit = min(n, k + _MAX_HEAD)
        found = _BARE_HEAD_END.search(data, k + len(keyword), limit)
        if found is None:
            return "hold" if not final and limit == n and n - k < _MAX_HEAD else None
        if found.group() != "{":
            return None
        name = data[k + len(keyword):found.start()].strip(" \t\r\n")
        return "open" if terminal_pattern("NAME").fullmatch(name) else None

    def _consume(self, data: str, i: int, j: int, base: int, events: list) -> None:
        """data[i:j] (not empty) holds no marker: emit it or add it to the open block."""
        state = self._state
        if state == _TEXT:
            if base + i == self._after_block and data[i:j].isspace():
                self._after_block = base + j
            events.append(Text(data[i:j], (base + i, base + j)))
        elif state == _THINKING:
            events.append(ThinkingDelta(data[i:j], (base + i, base + j)))
        else:
            self._add_to_block(data[i:j], base + i, events)

    def _on_marker(self, marker: str, data: str, j: int, base: int, events: list) -> int:
        """Handle the marker at data[j]; return where scanning goes on."""
        start = base + j
        end = start + len(marker)
        state = self._state
        if state is _STRING or state is _BARE_STRING:
            if marker == tokens.STRING_DELIMITER:  # the string's closing delimiter
                self._state = _CALL
                self._add_to_block(marker, start, events)
                return j + len(marker) if self._state is _CALL else self._restart - base
            # a real `<|tool_call>` inside a string of a bare block: the bare block was a guess,
            # the opener is not; it ends the guess and opens its own block
            self._end_block(events, start, closed=False)
            return j
        if state is _CALL:
            if marker == tokens.STRING_DELIMITER:
                if self._opens_string():
                    self._state = _BARE_STRING if self._bare else _STRING
                    self._string_start = start
                self._add_to_block(marker, start, events)
                return j + len(marker) if self._state is not _TEXT else self._restart - base
            if marker == tokens.TOOL_CALL_CLOSE:
                self._add_to_block(marker, start, events)
                if self._state is _TEXT:  # a bare block just turned to text
                    return self._restart - base
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
            if state is _THINKING:
                self._end_thinking(events, start, end)
                self._label_due, self._unlabelled = self._unlabelled, False
            else:  # nothing open to close
                events.append(StrayMarkup(marker, (start, end)))
            # either way the model takes itself to be after a thought (in token mode a missing
            # opener is in the ids: no bare call is guessed)
            self._armed = not self.strict and self._marks is None
            return j + len(marker)
        if marker == tokens.TOOL_CALL_CLOSE or state is _THINKING or self.strict and marker == tokens.CHANNEL_OPEN:
            # a `<tool_call|>` with no block open, a channel opener inside a thought, or (strict,
            # where only a labelled channel is a thought) an unlabelled `<|channel>`
            events.append(StrayMarkup(marker, (start, end)))
            return j + len(marker)
        # a channel opener, in text (an unlabelled `<|channel>` only when not strict: see above)
        self._unlabelled = marker == tokens.CHANNEL_OPEN
        events.append(ThinkingStart((start, end)))
        self._state = _THINKING
        return j + len(marker)

    def _end_at_closer_in_open_string(self, events: list) -> None:
        """At the end of the stream, inside a string never closed (`{command:<|"|>ls}<tool_call|>`
        and nothing after): the grammar would make the rest of the stream string text, but the model
        ended its block at the first `<tool_call|>` after the string's delimiter. The block ends
        there, closed (the lenient decoder then reads the `unterminated-string`), and what follows
        it is read again, as text. That text holds no `<|"|>` (else the string would have closed),
        so it is read once more at most."""
        if self._oversized:
            return
        raw = "".join(self._block)
        at = raw.find(tokens.TOOL_CALL_CLOSE, self._string_start - self._block_start)
        if self._marks is not None:  # token mode: the closer's special token, not its spelling
            while at >= 0 and self._block_start + at not in self._marks:
                at = raw.find(tokens.TOOL_CALL_CLOSE, at + 1)
        if at < 0:
            return
        end = at + len(tokens.TOOL_CALL_CLOSE)
        self._block = [raw[:end]]
        self._small = 0
        self._block_size = end
        self._end_block(events, self._block_start + end, closed=True)
        self._pos = self._block_start + end
        self._scan(raw[end:], events, final=True)

    def _opens_string(self) -> bool:
        """Whether the `<|"|>` about to join the open block opens a string. In the grammar a string
        begins only where a key or a value does: after `{`, `[`, `,` or `:` (and, in the lenient
        decoder's Python-style shell, `(` or `=`), whitespace aside. Not strict, a delimiter
        anywhere else, typically right after an undelimited value (`city:Tokyo<|"|>}`), is stray
        markup: it opens nothing, so it cannot hide the `<tool_call|>` after it, and the lenient
        decoder skips it (`stray-delimiter`). Strict, every delimiter counts, as before. Reads
        back over whitespace only: each run of it at most once (a delimiter follows it)."""
        if self.strict or self._oversized:
            return True
        for piece in reversed(self._block):
            stripped = piece.rstrip(" \t\r\n")
            if stripped:
                return stripped[-1] in _VALUE_STARTS
        return True

    # --- thinking -------------------------------------------------------------------------------
    def _end_thinking(self, events: list, start: int, end: int) -> None:
        events.append(ThinkingEnd((start, end)))
        self._state = _TEXT

    # --- call blocks ----------------------------------------------------------------------------
    def _open_block(self, opener: str, start: int, bare: bool = False) -> None:
        self._state = _CALL
        self._armed = False
        self._bare = bare
        self._bare_depth = 0
        self._block = [opener] if opener else []
        self._small = len(self._block)
        self._block_start = start
        self._block_size = len(opener)
        self._block_id = self._new_id()
        self._head = "" if bare else opener  # a bare block emits no tool_call_start: no head to find
        self._head_end = -1
        self._oversized = False
        self._delimiters = None

    def _add_to_block(self, piece: str, start: int, events: list) -> None:
        if self._head:
            self._find_head(piece, start, events)
        self._block_size += len(piece)
        if self._oversized:
            return
        block = self._block
        if self._bare and self._block_size > self.max_block_chars:
            # a bare block was a guess: one that outgrows the limit is prose, every character of it
            # (all still here: nothing was cut yet). It is text up to the limit, and the scan reads
            # on from there as text: the same stream offset whatever the chunking.
            keep = len(piece) - (self._block_size - self.max_block_chars)
            text = "".join(block) + piece[:keep]
            if text:
                events.append(Text(text, (self._block_start, start + keep)))
            self._restart = start + keep
            self._state = _TEXT
            self._bare = False
            self._block = []
            self._small = 0
            return
        block.append(piece)
        self._small += 1
        if self._block_size > self.max_block_chars:
            self._oversized = True
            self._block = ["".join(block)[: self.max_block_chars]]
            self._small = 0
        elif self._small >= _COMPACT_EVERY:
            # join the small pieces at the end into one (each character is copied O(1) times
            # more: a joined piece is never small again)
            tail = "".join(block[-self._small:])
            del block[-self._small:]
            block.append(tail)
            self._small = 0

    def _take_block(self, data: str, i: int, end: int, base: int, delimiters: list[int] | None,
                    events: list) -> None:
        """The open block whole in this chunk: its opener right before data[i], nothing else of it
        before, and data[i:end] the rest through its closer, `delimiters` where its string
        delimiters are when the scan found them (else None). It is taken as one slice of the chunk
        (one copy, not a piece and a join), and the delimiters are handed to its decoders (they
        need not look for them again)."""
        opener_at = i - len(tokens.TOOL_CALL_OPEN)
        if self._head:
            self._find_head(data[i:i + _MAX_HEAD], base + i, events)
        self._block = [data[opener_at:end]]
        self._block_size += end - i
        if delimiters is not None:
            self._delimiters = [at - opener_at for at in delimiters]
        self._end_block(events, base + end, closed=True)

    def _find_head(self, piece: str, start: int, events: list) -> None:
        """Emit tool_call_start once `call:NAME{` is complete, its `{` within the block's first
        _MAX_HEAD characters. Independent of `max_block_chars` and of the chunking."""
        offset = len(self._head)  # where `piece` starts in the block
        head = self._head + piece[: _MAX_HEAD - offset]
        brace = head.find("{", offset)
        if brace < 0:
            self._head = head if len(head) < _MAX_HEAD else ""
            return
        self._head = ""  # decided
        name = call_name(head, brace)
        if name is None:
            return
        if self._refusal(name) is not None:
            return  # decided at the head: a call that may not be made is never started
        self._head_end = start + (brace - offset) + 1
        events.append(ToolCallStart(self._block_id, self._call_count, name, (self._block_start, self._head_end)))

    def _end_block(self, events: list, end: int, closed: bool, at_end: bool = False) -> None:
        """The open block is over: at `<tool_call|>` (`closed`), at a marker that ends it unclosed,
        or at the end of the stream (`at_end`). Whatever happens while decoding it, its events come
        out and the parser carries on: a failure of the decoders is a tool_call_error."""
        self._state = _TEXT
        raw = "".join(self._block)
        self._block = []
        delimiters, self._delimiters = self._delimiters, None
        self._small = 0
        self._head = ""
        bare, self._bare = self._bare, False
        start = self._head_end if self._head_end >= 0 else self._block_start
        span = (start, end)
        if self._oversized:
            events.append(ToolCallError(
                self._block_id, self._next_index(), raw,
                f"block exceeds {self.max_block_chars} characters ({self._block_size}); raw holds the first"
                f" {self.max_block_chars}", span, code="too-large"))
            return
        self._mask = self._mask_for(raw) if self._marks is not None else ""
        try:
            if self._mask:
                decoded = [_respell(event, self._mask) for event in self._decode(
                    _spelled_out(raw, self._block_start, self._marks, self._mask), closed, at_end, bare, span)]
            else:
                decoded = self._decode(raw, closed, at_end, bare, span, delimiters)
        except Exception as exc:  # noqa: BLE001 - a decoder's bug must not lose the stream
            decoded = [ToolCallError(self._block_id, self._call_count, raw,
                                     f"the block could not be decoded ({type(exc).__name__}: {str(exc)[:200]})", span,
                                     code="internal")]
        self._mask = ""
        for event in decoded:
            if isinstance(event, (ToolCallEnd, ToolCallError)):
                self._call_count += 1
                self._calls_made += type(event) is ToolCallEnd
        events.extend(decoded)
        self._after_block = end

    def _mask_for(self, raw: str) -> str:
        """Token mode: when the block holds a control token written with ordinary tokens, a
        character the block does not hold, to stand for the `<` of each such spelling while the
        decoders read it (so they read it as text); "" when there is none."""
        marks, base = self._marks, self._block_start
        at = raw.find("<")
        while at != -1:
            if base + at not in marks and CONTROL.match(raw, at):
                break
            at = raw.find("<", at + 1)
        else:
            return ""
        for code in range(0xE000, 0xF900):  # private use: one absent from the block is soon found
            if chr(code) not in raw:
                return chr(code)
        return ""  # (cannot happen below 6,400 distinct private-use characters in one block)

    def _next_index(self) -> int:
        index = self._call_count
        self._call_count += 1
        return index

    def _decode(self, raw: str, closed: bool, at_end: bool, bare: bool, span: tuple,
                delimiters: list[int] | None = None) -> list:
        """The block's events. The strict parser first; when it rejects the block and this parser is
        not strict, the lenient decoder, with the grammar's error and each recovery as diagnostics.

        A block not closed by `<tool_call|>` is never a plain success: at the end of the stream it
        is an error (it may have been cut off), and before a marker that ended it, a recovered call
        only when its arguments are complete (lenient), else an error. With `tools`, each decoded
        call is then checked against them (`_finish`)."""
        index = self._call_count
        lossless = self._registry is not None
        syntax = None
        if closed and not bare:
            duplicates: list = []
            try:
                if lossless:
                    call = parse_lossless_call(raw, max_depth=self.max_depth, duplicates=duplicates)
                elif delimiters is None:
                    call = gemma4_lark.parse_call(raw, max_depth=self.max_depth, duplicates=duplicates)
                else:  # the fast path, told where the delimiters are; else the LALR path (no second try)
                    call = fastpath.parse_call(raw, self.max_depth, unique_keys=True, delimiters=delimiters)
                    if call is None:
                        call = parse_from(raw, 0, "call_block", max_depth=self.max_depth, duplicates=duplicates,
                                          fast=False)
            except GemmaSyntaxError as err:
                message = str(err).split("\n", 1)[0]
                if self.strict or err.code == "too-deep":
                    return [ToolCallError(self._block_id, index, raw, message, span, code=err.code)]
                syntax = Diagnostic("error", "syntax", err.message, err.line, err.column, err.pos)
            else:
                warnings = []
                if _escape_outside_strings(raw, delimiters):  # valid, but FunctionGemma's delimiter: say so
                    _, _, read = decode_calls(raw, max_depth=self.max_depth)[0]
                    warnings = [d for d in read.diagnostics if d.code == "functiongemma-escape"]
                if duplicates:  # valid, and the last value wins (SPEC); the call says so, as validate() does
                    lines = LineIndex(raw)
                    warnings = sorted(warnings + [
                        Diagnostic("warning", "duplicate-key", f"duplicate key `{key[:40]}`: the last value wins",
                                   *lines.line_and_column(pos), pos) for key, pos in duplicates],
                        key=lambda d: d.pos)
                return [self._finish(self._block_id, index, call.name, call.arguments, raw, warnings, False, span)]
        segments = decode_calls(raw, max_depth=self.max_depth, lossless=lossless,
                                hints=self._registry.hints if lossless else None)
        if bare and segments[0][2].call is None:
            return [Text(raw, (self._block_start, span[1]))]  # the bare guess was prose after all
        if self.strict:
            # not closed (a closed block the grammar rejects returned above): one error for the
            # whole block, never a call per part (several calls in one block are not in the grammar)
            problem = f"the block is not closed by {tokens.TOOL_CALL_CLOSE}"
            call = segments[0][2].call if len(segments) == 1 else None
            return [ToolCallError(self._block_id, index, raw, problem, span, call.name if call else None,
                                  plain(call.arguments) if call else None,
                                  segments[0][2].diagnostics if len(segments) == 1 else [], code="unclosed")]
        out = []
        base = self._block_start
        for number, (begin, finish, decoded) in enumerate(segments):
            call_id = self._block_id if number == 0 else self._new_id()
            part = raw if len(segments) == 1 else raw[begin:finish]
            where = (span[0] if number == 0 else base + begin, base + finish)
            diagnostics = ([syntax] if syntax and number == 0 else []) + decoded.diagnostics
            problem = None
            if decoded.call is None:
                errors = [d.message for d in decoded.diagnostics if d.severity == "error"]
                problem = syntax.message if syntax else (errors[0] if errors else f"no `{tokens.CALL_KEYWORD}NAME` head")
                code = failure_code(decoded.diagnostics)
            elif not closed and (at_end and not bare or not decoded.complete):
                # every call of the block, not only its last: they share its fate
                code = "unclosed"
                if at_end and not bare:
                    problem = (f"the block is not closed by {tokens.TOOL_CALL_CLOSE} when the stream ends: it may"
                               " be cut off")
                else:
                    problem = f"the block is not closed by {tokens.TOOL_CALL_CLOSE}, and its arguments are cut off"
            elif decoded.lossy and not self.lossy_recovery:
                # the reading left some of the model's text out of the arguments: not a call to run
                # as if it said all the model wrote (docs/leniency.md#lossy-recoveries)
                dropped = next((d for d in decoded.diagnostics if d.code in ("missing-value", "text-after-object")),
                               None)
                problem = ("the lenient reading leaves text the model wrote out of the arguments"
                           + (f" ({dropped.message})" if dropped else "") + "; lossy_recovery=True accepts it")
                code = "lossy"
            if problem is None:
                out.append(self._finish(call_id, index + number, decoded.call.name, decoded.call.arguments, part,
                                        diagnostics, True, where))
            else:
                call = decoded.call
                out.append(ToolCallError(call_id, index + number, part, problem, where,
                                         call.name if call else None, plain(call.arguments) if call else None,
                                         diagnostics, code))
        return out

    def _finish(self, call_id: str, index: int, name: str, arguments, raw: str, diagnostics: list,
                recovered: bool, span: tuple) -> Event:
        """A decoded call as its event: a tool_call_end, or a tool_call_error when it may not be made
        (`unknown-tool`, `tool-choice`) or, strict, its arguments violate the tool's schema.
        `arguments` are lossless (scalars as `Scalar`s) when tools are given; positions are
        offsets into `raw`."""
        if self._mask:  # the schema checks the call as written
            arguments = _respelled(arguments, self._mask)
        refusal = self._refusal(name)
        if refusal is not None:
            code, message = refusal
            return ToolCallError(call_id, index, raw, message, span, name, plain(arguments), diagnostics, code)
        if self._registry is None:
            return ToolCallEnd(call_id, index, name, arguments, raw, diagnostics, recovered, span)
        brace = raw.find("{")
        typed, coerced, violations = self._registry.get(name).check(arguments, LineIndex(raw), max(brace, 0))
        if coerced or violations:
            diagnostics = sorted(diagnostics + coerced + violations, key=lambda d: d.pos)
        if violations and self.strict:
            return ToolCallError(call_id, index, raw, violations[0].message, span, name, typed, diagnostics, "schema")
        return ToolCallEnd(call_id, index, name, typed, raw, diagnostics, recovered, span)


def call_name(head: str, brace: int) -> str | None:
    """The NAME of `<|tool_call>call:NAME{`, given the block's first characters `head` and where
    its first `{` is (within its first _MAX_HEAD characters); None when that is no call's head."""
    words = head[len(tokens.TOOL_CALL_OPEN): brace].strip(_BLANKS)
    if not words.startswith(tokens.CALL_KEYWORD):
        return None
    name = words[len(tokens.CALL_KEYWORD):].strip(_BLANKS)
    return name if terminal_pattern("NAME").fullmatch(name) else None


def _escape_outside_strings(raw: str, delimiters: list[int] | None) -> bool:
    """Whether FunctionGemma's `<escape>` is in the valid block `raw` outside its strings (in a
    bare word, where the decoders report it), given where its delimiters are; when that is not
    known (None), whether it is anywhere in the block."""
    escape = _FUNCTIONGEMMA_ESCAPE
    if delimiters is None:
        return escape in raw if len(raw) < marker_search.SHORT else marker_search.find(raw, escape) != -1
    begin = 0
    for k in range(0, len(delimiters) - 1, 2):  # (a valid block closes every string it opens)
        if raw.find(escape, begin, delimiters[k]) != -1:
            return True
        begin = delimiters[k + 1] + len(tokens.STRING_DELIMITER)
    return raw.find(escape, begin) != -1


def _spelled_out(raw: str, base: int, marks: set, mask: str) -> str:
    """`raw` (the block from stream offset `base`) with the `<` of every control token that is not
    a special token (not at one of `marks`) replaced by `mask`: the decoders read it as text.
    The same length, so every position in it is one in `raw`."""
    out = []
    done = 0
    at = raw.find("<")
    while at != -1:
        if base + at not in marks and CONTROL.match(raw, at):
            out.append(raw[done:at])
            out.append(mask)
            done = at + 1
        at = raw.find("<", at + 1)
    out.append(raw[done:])
    return "".join(out)


def _respelled(value: Any, mask: str) -> Any:
    """`value` (decoded arguments: dicts, lists, strings, `Scalar`s) with `mask` back to `<`.
    An explicit stack: arguments nest as deep as `max_depth`."""
    if isinstance(value, str):
        return value.replace(mask, "<")
    if not isinstance(value, (dict, list, Scalar)):
        return value
    root: list = [value]
    stack = [(root, 0)]
    while stack:
        holder, key = stack.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = item.replace(mask, "<")
        elif isinstance(item, Scalar):
            if isinstance(item.value, str):
                item.value = item.value.replace(mask, "<")
            if item.lexeme is not None:
                item.lexeme = item.lexeme.replace(mask, "<")
        elif isinstance(item, list):
            stack.extend((item, k) for k in range(len(item)))
        elif isinstance(item, dict):
            fixed = {(k.replace(mask, "<") if isinstance(k, str) else k): v for k, v in item.items()}
            holder[key] = fixed
            stack.extend((fixed, k) for k in fixed)
    return root[0]


def _respell(event: Event, mask: str) -> Event:
    """A decoded block's event with every `mask` back to `<`: its raw text as written, its
    arguments, name, error and diagnostics."""
    if not isinstance(event, (ToolCallEnd, ToolCallError, Text)):
        return event
    changes: dict[str, Any] = {}
    for name in ("raw", "text", "name", "error"):
        value = getattr(event, name, None)
        if isinstance(value, str) and mask in value:
            changes[name] = value.replace(mask, "<")
    for name in ("arguments", "partial"):
        value = getattr(event, name, None)
        if value is not None:
            changes[name] = _respelled(value, mask)
    diagnostics = getattr(event, "diagnostics", None)
    if diagnostics:
        changes["diagnostics"] = [dataclasses.replace(d, message=d.message.replace(mask, "<")) if mask in d.message
                                  else d for d in diagnostics]
    return dataclasses.replace(event, **changes) if changes else event
