"""StreamParser: chunks of model output in, events out. Sans-IO, like h11: no I/O, no threads.

A façade over three parts (docs/architecture.md): the scan (`_machine`), whose states and
transitions are a table (`_states`); the open block's buffer (`_block`); and the block decisions of
the grammar's package (`gemma4_lark.blocks.decide_block`), which say what a finished block is.
Token-id alignment is `token_ids.TokenMarkers`; where an output starts, `_prompt_state`.
"""

from __future__ import annotations

import secrets
from typing import Any, Sequence

from gemma4_lark.accelerators import ENABLED as _ACCELERATED
from gemma4_lark.blocks import BlockPolicy
from gemma4_lark.diagnostics import Diagnostic
from gemma4_lark.events import Event, Text, ThinkingDelta
from gemma4_lark.schema.registry import ToolRegistry

from . import _prompt_state, _states
from ._block import COMPACT_EVERY
from ._inputs import plain_finish_reason, plain_str
from ._machine import StreamMachine
from .token_ids import TokenMarkers

__all__ = ["STOPPED", "StreamParser", "default_id_factory"]

# The finish reason of a model that ended its turn (OpenAI's; vLLM, SGLang and llama.cpp's servers
# send it when the stop token, which they strip from the text, was generated).
STOPPED = "stop"

_TEXT, _THOUGHT, _UNLABELLED_THOUGHT, _CALL, _STRING, _DONE, _PROSE = (
    _states.TEXT, _states.THOUGHT, _states.UNLABELLED_THOUGHT, _states.CALL, _states.STRING, _states.DONE,
    _states.PROSE)


def default_id_factory() -> str:
    """`call_` and 24 random hex digits. Raises nothing."""
    return "call_" + secrets.token_hex(12)


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
        self.policy = BlockPolicy.of(strict=strict, lossy_recovery=lossy_recovery, max_depth=max_depth,
                                     max_block_chars=max_block_chars, tools=tools, tool_choice=tool_choice)
        self.parse_thinking = parse_thinking
        self.strict = strict
        self.lossy_recovery = lossy_recovery
        self.max_block_chars = max_block_chars
        self.max_depth = max_depth
        self.start_in_thinking = start_in_thinking and parse_thinking
        self.id_factory = id_factory or default_id_factory
        self.diagnostics: list[Diagnostic] = []  # whole-output findings, complete after flush()
        self._read_markers_by(None)

    def _read_markers_by(self, markers: TokenMarkers | None) -> None:
        """A new scan that reads markers by text (None) or by the token ids of `markers`."""
        self._markers = markers
        self._marker_ids = markers.ids if markers is not None else frozenset()
        self._carry: Sequence[int] = ()  # ids whose text the engine held back when the last delta ended
        table = _states.table(self.parse_thinking, self.strict, markers is None, self.policy.tools is not None)
        self._machine = StreamMachine(self.policy, table, self.id_factory, self.start_in_thinking,
                                      _ACCELERATED, set() if markers is not None else None)

    @classmethod
    def for_prompt(cls, prompt: str, **options) -> "StreamParser":
        """A parser for the output that follows the rendered `prompt`, its state read from the
        prompt's tail by the grammar (`parse_transcript`): when the prompt's last turn is an open
        model turn ending in a thought prefill (`<|channel>thought\\n`, which the official template
        writes after tool results when thinking is on), the output starts inside that thought.

        `options` are StreamParser's, except `start_in_thinking`, which is inferred. Raises
        `TypeError` when `prompt` is not a str or `start_in_thinking` is given, `PromptError` (a
        `ValueError`) when the prompt does not end in an open model turn (no generation prompt; a
        model turn the template closed after tool results, with the message's text after them,
        counts as open) or ends inside a call block, and `GemmaSyntaxError` (with its position) when the grammar rejects
        the prompt before its last model turn.

        An assistant prefill (`continue_final_message`: the open model turn holds the start of an
        answer, cut anywhere) is read as model output: ending inside a thought
        (`<|channel>thought\nLet me`), the output starts inside it; ending in text, in text.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be str, not {type(prompt).__name__}")
        if "start_in_thinking" in options:
            raise TypeError("for_prompt() infers start_in_thinking from the prompt; do not pass it")
        reader = lambda: cls(parse_thinking=options.get("parse_thinking", True),  # noqa: E731
                             strict=options.get("strict", False))
        return cls(start_in_thinking=_prompt_state.starts_in_thinking(prompt, reader), **options)

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
        parser._read_markers_by(TokenMarkers.of(tokenizer))
        return parser

    # --- what serving layers need of a parser (docs/architecture.md#the-stream-protocol) ---------
    @property
    def reads_token_ids(self) -> bool:
        """Whether markers are read by token id (a parser made by `for_tokenizer`): then
        `feed(text, token_ids)` and `align`/`feed_aligned` take ids."""
        return self._markers is not None

    @property
    def token_markers(self) -> TokenMarkers | None:
        """The tokenizer's marker ids (`for_tokenizer`), or None when markers are read by text."""
        return self._markers

    @property
    def fresh(self) -> bool:
        """Whether nothing was fed yet (nor flushed): the state the options alone give."""
        machine = self._machine
        return not machine.pos and not machine.pending and machine.state is not _DONE

    @property
    def where(self) -> str:
        """Where the stream stands: "text", "thought" or "call" (inside a block), or "done"."""
        state = self._machine.state
        if state in _states.IN_THOUGHT:
            return "thought"
        if state in _states.IN_BLOCK:
            return "call"
        return "done" if state is _DONE else "text"

    @property
    def open_block_start(self) -> int | None:
        """The stream offset of the open call block's opener, or None when no block is open."""
        block = self._machine.block
        return block.start if block is not None else None

    def types_arguments(self, name: str) -> bool:
        """Whether a call of `name` is typed by a schema: its bare scalars may change type when it
        is decoded (OpenAIStream streams its arguments only up to the first of them)."""
        return self.policy.types_arguments(name)

    def align(self, chunk: str, token_ids: Sequence[int]) -> tuple[str, tuple[int, ...]]:
        """(the delta's text as reconstructed from `chunk` and its `token_ids`, where its markers'
        special tokens start in it): what `feed_aligned` takes. Raises ValueError for a parser not
        made by `for_tokenizer`, TypeError for a non-str (a str subclass is read as a str)."""
        if self._markers is None:
            raise ValueError("token_ids need a parser made by StreamParser.for_tokenizer(tokenizer)")
        if type(chunk) is not str:
            chunk = plain_str(chunk)
        text, marks, self._carry = self._markers.align(chunk, token_ids, self._carry)
        return text, marks

    def feed_aligned(self, chunk: str, marks: tuple[int, ...] | None) -> list[Event]:
        """feed() of a chunk already aligned (`align`): `marks` are its markers' offsets in it, or
        None to read its markers by text (in token mode, every `<` of it may start one)."""
        if type(chunk) is not str:
            chunk = plain_str(chunk)
        machine = self._machine
        if machine.marks is None:  # (a parser not made by for_tokenizer: marks are None)
            return self.feed(chunk)
        if machine.state is _DONE:
            raise RuntimeError("feed() after flush(): the stream is over")
        known = machine.marks
        at = machine.pos + len(machine.pending)
        if marks is None:  # markers by text: every `<` may start one
            find = chunk.find
            k = find("<")
            while k != -1:
                known.add(at + k)
                k = find("<", k + 1)
        elif marks:
            known.update(at + m for m in marks)
        if (not machine.pending and not machine.start_events and machine.state is not _states.LABEL_DUE
                and (marks == () or "<" not in chunk)):
            # no marker in the chunk: text, thought or block content as a whole, whatever it
            # spells (no bare block opens in token mode)
            return machine.plain(chunk)
        return machine.scan_chunk(chunk)

    # --- feeding --------------------------------------------------------------------------------
    def feed(self, chunk: str, token_ids: Sequence[int] | None = None) -> list[Event]:
        """Events that `chunk` completes (possibly none). `token_ids`: the ids the delta's text
        came from, for a parser made by `for_tokenizer`; spans then index the text as
        reconstructed from both (docs/streaming.md#token-ids).

        Problems in the text become events, never exceptions. Raises `TypeError` when `chunk` is
        not a str (a str subclass is read as a str), `ValueError` for `token_ids` given to a
        parser not made by `for_tokenizer`, and `RuntimeError` after `flush()`.
        """
        if type(chunk) is not str:
            chunk = plain_str(chunk)
        machine = self._machine
        if token_ids is not None or machine.marks is not None:
            return self._feed_ids(chunk, token_ids)
        state = machine.state
        if state is _DONE:
            raise RuntimeError("feed() after flush(): the stream is over")
        if machine.pending or machine.start_events or "<" in chunk or not _ACCELERATED:
            return machine.scan_chunk(chunk)
        # Most chunks of most streams: nothing held back and no `<` in sight, so the chunk is text,
        # thought or block content as a whole (in a state where no guess is pending). The hand-inlined
        # copy of what the scan does with such a chunk (an accelerator: off, the scan reads it).
        if not chunk:
            return []
        if state is _TEXT or state is _THOUGHT or state is _UNLABELLED_THOUGHT or (state is _PROSE and "\n" not in chunk):
            # (prose, tools declared: text too while no new line begins in the chunk)
            start = machine.pos
            end = machine.pos = start + len(chunk)
            if state is not _TEXT and state is not _PROSE:
                return [ThinkingDelta(chunk, (start, end))]
            if start == machine.after_block and chunk.isspace():
                machine.after_block = end
            return [Text(chunk, (start, end))]
        if state is _CALL or state is _STRING:
            block = machine.block
            size = block.size + len(chunk)
            if not block.head and block.small < COMPACT_EVERY - 1 and size <= machine.limit:
                # the hand-inlined copy of OpenBlock.append for block content once its head is
                # decided (not bare, not oversized, not yet due to be compacted)
                block.size = size
                block.pieces.append(chunk)
                block.small += 1
                machine.pos += len(chunk)
                return []
            return machine.plain(chunk)
        return machine.scan_chunk(chunk)

    def _feed_ids(self, chunk: str, token_ids: Sequence[int] | None) -> list[Event]:
        """feed() in token mode."""
        if self._markers is None:
            raise ValueError("token_ids need a parser made by StreamParser.for_tokenizer(tokenizer)")
        machine = self._machine
        if (chunk and token_ids is not None and self._marker_ids.isdisjoint(token_ids) and not self._carry
                and not machine.pending and not machine.start_events and machine.state is not _states.LABEL_DUE
                and machine.state is not _DONE and not (machine.block is not None and machine.block.oversized)):
            # the common delta: text and no marker id, nothing held back: text, thought or block
            # content as a whole, whatever it spells
            return machine.plain(chunk)
        if token_ids is None:
            return self.feed_aligned(chunk, None)
        return self.feed_aligned(*self.align(chunk, token_ids))

    def flush(self, finish_reason: str | None = None) -> list[Event]:
        """The end of the stream: release what was held back and close what is open. Raises
        nothing for any text; a second call returns []. Raises `TypeError` when `finish_reason` is
        not a str or None.

        `finish_reason`: why the engine stopped, when the caller knows it (OpenAI's field). "stop":
        the model ended its turn and the server stripped the stop token, so a call block that the
        stream ended with complete arguments is a recovered call (`missing-closer`), as it is
        before a `<turn|>` (not strict). "length", anything else, or None: it may have been cut
        off, so it stays a `tool_call_error` (docs/streaming.md#which-blocks-are-calls)."""
        finish_reason = plain_finish_reason(finish_reason)
        machine = self._machine
        if machine.state is _DONE:
            return []
        # The ids of a character the stream never completed are no text: an engine's incremental
        # detokenizer (vLLM's DecodeStream) never sends their bytes, in the stream or the message.
        # A marker it held with them (one it skips) is still a marker.
        events = self.feed_aligned(*self._markers.markers_in(self._carry)) if self._carry else []
        self._carry = ()
        events += machine.finish(stopped=finish_reason == STOPPED)
        self.diagnostics.extend(self.policy.output_findings(machine.calls_made, machine.pos))
        return events
