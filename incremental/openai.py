"""Gemma 4 output in OpenAI chat-completions shapes: the assistant message of a whole output, and
`chat.completion.chunk` objects of a stream.

One mapping, used both ways (docs/serving.md):

- text is `content`; thoughts are `reasoning_content` (several thoughts joined by a newline);
- a call (`tool_call_end`) is a `tool_calls` entry, its arguments `json.dumps(arguments,
  ensure_ascii=False)`; a recovered call also carries `"recovered": true` and its `diagnostics`;
- a block that failed (`tool_call_error`) is never a call: its raw text stays in `content` where the
  model wrote it, and it is listed in `tool_call_errors` (`index` = its position in that list).

`OpenAIStream` streams the same. By default (`stream_arguments=False`) a call goes out when its
block has been decoded: its header delta (`index`, `id`, `type`, `function.name`, `arguments: ""`),
then its arguments in one fragment; nothing of a failed block is sent as a call, so every entry a
client accumulates is a call it can run, complete JSON. With `stream_arguments=True` (opt-in) the
header goes out at `tool_call_start` and the arguments as the grammar accepts them
(`arguments.ArgumentStream`), the closing `}` only once the call is decoded; a block that then
fails (or that the lenient decoder reads otherwise than what was streamed) leaves its entry void
(an `error` key, arguments never complete JSON), which a client must skip: clients cannot retract
what was streamed (docs/serving.md). A repeated key is streamed as written, twice: the JSON reads
(last value wins) as the decoded call. `index` counts the calls sent, 0, 1, 2... with no gap.
Accumulating the chunks (as the OpenAI SDK does) gives exactly `to_openai_message` of the same
output, whatever the chunking, besides each streamed entry's `index`, the void entries, and a
repeated key's second statement.
"""

from __future__ import annotations

import secrets
import time
import json
from typing import Any, Sequence

from gemma4_lark.events import Event, Text, ThinkingDelta, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart
from .arguments import ArgumentStream
from .output import to_openai_message, tool_call_error_entry
from ._inputs import plain_finish_reason, plain_str
from .parser import StreamParser
from .pieces import COMPACT_EVERY, Pieces

__all__ = ["OpenAIStream", "to_openai_message", "tool_call_error_entry"]

# The keys a chunk's delta has of its own (OpenAI's and this module's): no place for thoughts.
_DELTA_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_errors", "refusal", "function_call"})


class OpenAIStream:
    """Model output deltas in, `chat.completion.chunk` dicts out (sans-IO, over a `StreamParser`).

    `feed(delta_text)` returns the chunks that the text completes (possibly none); `flush()` ends
    the stream, its last chunk carrying `finish_reason` ("tool_calls" when a call went out complete, else
    "stop"). The first chunk's delta carries `role: "assistant"`. `stream_arguments`: send a call's
    arguments while they are written (True, opt-in) or whole once the call is decoded (False, the
    default); see the
    module's docstring and docs/serving.md for what each sends of a failed block. Thoughts go in
    `delta[reasoning_field]` ("reasoning_content" as vLLM, SGLang and DeepSeek send them;
    "reasoning" as others do). Raises TypeError for a parser that is not a StreamParser or a
    reasoning_field that is not a str, ValueError for one that is empty or a delta's own key
    (`role`, `content`, `tool_calls`...). `after_thought`: a thought went out before this stream's
    first delta (a server's reasoning parser took the output's opening one): the stream's first
    thought is then joined to it by a newline, as `to_openai_message` joins every thought.

    With `stream_arguments`, a delta that is all content of a call's string argument goes out
    without going through `parser` at once: the parser gets it with the next delta that may
    matter (or at `flush`), so `parser` may lag behind the stream; its events are the same.
    """

    def __init__(self, parser: StreamParser, *, stream_arguments: bool = False, reasoning_field: str = "reasoning_content",
                 model: str = "gemma-4", completion_id: str | None = None, created: int | None = None,
                 after_thought: bool = False):
        if not isinstance(parser, StreamParser):
            raise TypeError(f"parser must be a StreamParser, not {type(parser).__name__}")
        if not isinstance(reasoning_field, str):
            raise TypeError(f"reasoning_field must be a str, not {type(reasoning_field).__name__}")
        if not reasoning_field or reasoning_field in _DELTA_KEYS:
            # thoughts under `role` or `tool_calls` would break every client; under `content` they
            # would merge into the answer
            raise ValueError(f"reasoning_field must name a field of its own, not {reasoning_field!r}"
                             " (\"reasoning_content\" or \"reasoning\")")
        self.parser = parser
        self.stream_arguments = stream_arguments
        self.reasoning_field = reasoning_field
        # What every chunk begins with: a copy of it is the cheapest start of a chunk (a server
        # builds one per token).
        self._chunk_head = {"id": completion_id if completion_id is not None else "chatcmpl-" + secrets.token_hex(12),
                            "object": "chat.completion.chunk",
                            "created": created if created is not None else int(time.time()), "model": model}
        self._role_sent = False
        self._thoughts = int(bool(after_thought))  # thoughts begun: the second and later are joined by a newline
        self._calls_sent = 0   # the next tool_calls index
        self._calls_done = 0   # calls sent complete (not void)
        self._errors_sent = 0  # the next tool_call_errors index
        self._finished = False
        self._fed = 0          # the stream offset where the next delta starts
        # stream_arguments: the call whose header went out and whose arguments are being streamed
        self._open: ArgumentStream | None = None
        self._open_id = ""
        self._open_index = 0
        # the stream offset where the open call's block outgrows the parser's max_block_chars: the
        # block fails there, so its arguments stream no further (nor are held back: memory stays
        # bounded as the parser's does)
        self._open_limit = 0
        # the open call's string content not yet given to the parser (None whenever no call is open:
        # the delta that ends a call brings events, so went to the parser with what it held)
        self._held: Pieces | None = None

    @property
    def completion_id(self) -> str:
        return self._chunk_head["id"]

    @property
    def created(self) -> int:
        return self._chunk_head["created"]

    @property
    def model(self) -> str:
        return self._chunk_head["model"]

    def feed(self, delta_text: str, token_ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """The chunks `delta_text` completes. `token_ids`: the delta's ids, for a parser made by
        `StreamParser.for_tokenizer` (markers by id; docs/streaming.md#token-ids); a str subclass
        is read as a str. Raises what `StreamParser.feed` raises (TypeError for a non-str,
        ValueError for ids a parser cannot take, RuntimeError after flush)."""
        marks = None
        arguments = self._open
        # Streamed arguments need the delta's text as reconstructed from its text and ids; whole
        # calls never do, so the parser aligns them itself (its fast path takes the common delta).
        aligned = token_ids is not None and (arguments is not None or self.stream_arguments)
        if aligned:
            delta_text, marks = self.parser.align(delta_text, token_ids)
        if arguments is None:  # no call being streamed (always so with stream_arguments=False)
            if token_ids is not None and not aligned:
                events = self.parser.feed(delta_text, token_ids)
            elif marks is None:
                events = self.parser.feed(delta_text)
            else:
                events = self.parser.feed_aligned(delta_text, marks)
            if self.stream_arguments:
                start = self._fed  # (stream offsets serve argument streaming only)
                self._fed = start + len(delta_text)
            else:
                start = 0
            if not events:  # (whole-arguments mode: most deltas inside a call block)
                return []
            if len(events) == 1 and self._role_sent:
                # the common case of prose and thoughts, one piece of text: its chunk, built in one go
                event = events[0]
                kind = type(event)
                if kind is Text or kind is ThinkingDelta:
                    if not event.text:
                        return []
                    chunk = self._chunk_head.copy()
                    chunk["choices"] = [{"index": 0, "delta": {
                        "content" if kind is Text else self.reasoning_field: event.text},
                        "finish_reason": None, "logprobs": None}]
                    return [chunk]
            return self._chunks(events, delta_text, start)
        if type(delta_text) is not str:  # (a str subclass, read once as a str: the parser reads its own)
            delta_text = plain_str(delta_text)
        if not marks and self._fed + len(delta_text) <= self._open_limit:
            fragment = arguments.feed_content(delta_text)
            if fragment is not None:
                # The common case while a call is written: the delta is all content of one of its
                # string values. The parser, inside that string, would only add it to the block:
                # it gets it (joined, its events are the same) with the next delta that may matter.
                held = self._held
                if held is None:
                    held = self._held = Pieces()
                small = held.small  # (Pieces.append, inlined)
                small.append(delta_text)
                if len(small) >= COMPACT_EVERY:
                    held.compact()
                self._fed += len(delta_text)
                if not fragment:
                    return []
                chunk = self._chunk_head.copy()
                chunk["choices"] = [{"index": 0, "delta": {"tool_calls": [
                    {"index": self._open_index, "function": {"arguments": fragment}}]},
                    "finish_reason": None, "logprobs": None}]
                return [chunk]
        events = self._parser_feed(delta_text, marks)
        start = self._fed
        self._fed = start + len(delta_text)
        if not events:
            # more of the call's block (a delta that ends the block brings the block's end event)
            fragment = self._feed_arguments(delta_text, start)
            if not fragment:
                return []
            return [self._chunk({"tool_calls": [{"index": self._open_index, "function": {"arguments": fragment}}]},
                                None)]
        return self._chunks(events, delta_text, start)

    def _parser_feed(self, text: str, marks: tuple[int, ...] | None = None) -> list[Event]:
        """The parser's events for `text` (its markers at `marks` in token mode), after the text
        held back from it (`feed`; string content with no marker id in token mode)."""
        held = self._held
        if held is None:
            return self.parser.feed(text) if marks is None else self.parser.feed_aligned(text, marks)
        self._held = None
        parser = self.parser
        return parser.feed_aligned(held.text(), None if not parser.reads_token_ids else ()) + parser.feed_aligned(text, marks)

    def flush(self, finish_reason: str | None = None) -> list[dict[str, Any]]:
        """The end of the stream: the chunks of what the parser still held, then the final chunk.
        `finish_reason`: the engine's, when known (`StreamParser.flush`: "stop" recovers a call
        block the stream ended with complete arguments). A second call returns []. Raises
        `TypeError` for a `finish_reason` not a str or None."""
        if self._finished:
            return []
        finish_reason = plain_finish_reason(finish_reason)
        self._finished = True
        events = self._parser_feed("")
        chunks = self._chunks(events + self.parser.flush(finish_reason), "", self._fed)
        self._open = None  # (the parser's flush ended its block: feed() now raises, as the parser's does)
        delta: dict[str, Any] = {} if self._role_sent else {"role": "assistant"}
        self._role_sent = True
        chunks.append(self._chunk(delta, "tool_calls" if self._calls_done else "stop"))
        return chunks

    # --- events to deltas -----------------------------------------------------------------------
    def _chunks(self, events: list[Event], delta_text: str, start: int) -> list[dict[str, Any]]:
        """The chunks of these events, which `delta_text` (from stream offset `start`) completed."""
        field = self.reasoning_field
        deltas: list[dict[str, Any]] = []
        if self._open is not None:
            self._stream_open_call(deltas, events, delta_text, start)
        for event in events:
            kind = type(event)
            if kind is Text:
                self._add_text(deltas, "content", event.text)
            elif kind is ThinkingDelta:
                self._add_text(deltas, field, event.text)
            elif kind is ThinkingStart:
                self._add_text(deltas, field, "\n" if self._thoughts else "", force=True)
                self._thoughts += 1
            elif kind is ToolCallStart:
                if self.stream_arguments:
                    self._start_call(deltas, event, events, delta_text, start)
            elif kind is ToolCallEnd:
                if self._open is not None and self._open_id == event.id:
                    self._end_call(deltas, event)
                else:
                    deltas.extend(self._call_deltas(event))
            elif kind is ToolCallError:
                if self._open is not None and self._open_id == event.id:
                    deltas.append({"tool_calls": [_void(self._open_index, event.error)]})
                    self._open = None
                entry = tool_call_error_entry(event, self._errors_sent)
                self._errors_sent += 1
                deltas.append({"content": event.raw, "tool_call_errors": [entry]})
            # ThinkingEnd and Stop send nothing: a stop marker is not content.
        return [self._chunk(delta, None) for delta in deltas]

    @staticmethod
    def _add_text(deltas: list, key: str, text: str, force: bool = False) -> None:
        """Append text to the delta list, merged into the last delta when it holds only that key."""
        if not text and not force:
            return
        if deltas and len(deltas[-1]) == 1 and key in deltas[-1]:
            deltas[-1][key] += text
        else:
            deltas.append({key: text})

    def _call_deltas(self, call: ToolCallEnd) -> list[dict[str, Any]]:
        entry = call.to_openai()
        index = self._calls_sent
        self._calls_sent += 1
        self._calls_done += 1
        header: dict[str, Any] = {"index": index, "id": entry["id"], "type": "function",
                                  "function": {"name": call.name, "arguments": ""}}
        for key in entry:  # a recovered call's marks go with its header
            if key not in ("id", "type", "function"):
                header[key] = entry[key]
        arguments = {"index": index, "function": {"arguments": entry["function"]["arguments"]}}
        return [{"tool_calls": [header]}, {"tool_calls": [arguments]}]

    # --- stream_arguments ---------------------------------------------------------------------------
    # Every delta fed while a call is open goes to its argument stream (up to the block's end), so
    # the stream has read up to the start of the current delta. The call's `{` is always in the
    # delta that brings its `tool_call_start`: the parser consumes block text as soon as it arrives
    # (it holds back only a possible marker, which holds no `{`; a bare block, whose head it may hold
    # back, has no `tool_call_start`).
    def _block_end(self, call_id: str, events: list[Event]) -> int:
        """Where the block of `call_id` ends in the stream when these events end it, else how far
        the stream has been fed: the argument stream reads only the block's own text."""
        for event in events:
            if type(event) in (ToolCallEnd, ToolCallError) and event.id == call_id:
                return event.span[1]
        return self._fed

    def _stream_open_call(self, deltas: list, events: list[Event], delta_text: str, start: int) -> None:
        end = self._block_end(self._open_id, events)
        if end > start:
            self._add_fragment(deltas, self._feed_arguments(delta_text[:end - start], start))

    def _start_call(self, deltas: list, event: ToolCallStart, events: list[Event], delta_text: str,
                    start: int) -> None:
        """The header goes out now; the arguments as the grammar accepts them, from the `{`."""
        index = self._calls_sent
        self._calls_sent += 1
        deltas.append({"tool_calls": [{"index": index, "id": event.id, "type": "function",
                                       "function": {"name": event.name, "arguments": ""}}]})
        arguments = self._open = ArgumentStream(max_depth=self.parser.max_depth,
                                                typed=self.parser.types_arguments(event.name))
        self._open_id = event.id
        self._open_index = index
        self._open_limit = event.span[0] + self.parser.max_block_chars
        brace = event.span[1] - 1
        if brace < start:  # (cannot happen, see above) the arguments go out whole at the end
            arguments.stop()
            return
        end = self._block_end(event.id, events)
        self._add_fragment(deltas, self._feed_arguments(delta_text[brace - start:end - start], brace))

    def _feed_arguments(self, text: str, start: int) -> str:
        """The open call's fragment for its block's `text` (from stream offset `start`), none past
        `max_block_chars`: the block fails there."""
        over = start + len(text) - self._open_limit
        if over <= 0:
            return self._open.feed(text)
        fragment = self._open.feed(text[:-over]) if over < len(text) else ""
        self._open.stop()
        return fragment

    def _add_fragment(self, deltas: list, fragment: str) -> None:
        if fragment:
            deltas.append({"tool_calls": [{"index": self._open_index, "function": {"arguments": fragment}}]})

    def _end_call(self, deltas: list, end: ToolCallEnd) -> None:
        """The streamed call is decoded: the rest of its JSON goes out, with a recovered call's
        marks. A repeated key was sent again as written: the JSON then reads (last value wins) as
        the decoded call, and the entry stands. When what was sent is neither how the decoded call
        begins nor reads as it (a block the lenient decoder read otherwise, a repeated key after
        the stream stopped), the streamed entry is void (marked `error`; its JSON never closed) and
        the call goes out whole under the next index."""
        index = self._open_index
        stream = self._open
        sent = stream.sent
        self._open = None
        entry = end.to_openai()
        arguments = entry["function"]["arguments"]
        if stream.repeated and stream.closed and not stream.stopped and _reads_as(sent + "}", arguments):
            # a repeated key, sent again as the model wrote it: the JSON states the key twice and
            # reads (last value wins) as the decoded call, so the entry stands
            arguments = sent + "}"
        elif not arguments.startswith(sent):
            deltas.append({"tool_calls": [_void(index, (
                "the arguments streamed so far are not those of the decoded call (a block read by the"
                " lenient decoder): this entry is void, the call follows whole"))]})
            deltas.extend(self._call_deltas(end))
            return
        last: dict[str, Any] = {"index": index, "function": {"arguments": arguments[len(sent):]}}
        for key in entry:
            if key not in ("id", "type", "function"):
                last[key] = entry[key]
        deltas.append({"tool_calls": [last]})
        self._calls_done += 1

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        chunk = self._chunk_head.copy()
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]
        return chunk


def _reads_as(streamed: str, arguments: str) -> bool:
    """Whether the streamed JSON, read as every JSON reader reads a repeated key (the last value
    wins), is the decoded call's `arguments` exactly (types, numbers and key order alike)."""
    try:
        return json.dumps(json.loads(streamed), ensure_ascii=False) == arguments
    except ValueError:
        return False


def _void(index: int, error: str) -> dict[str, Any]:
    """The delta that voids a streamed call: an `error` (and an empty fragment: clients expect a
    `function` in every tool-call delta). Its arguments stay unclosed JSON."""
    return {"index": index, "function": {"arguments": ""}, "error": error}
