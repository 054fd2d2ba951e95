"""Gemma 4 output in OpenAI chat-completions shapes: the assistant message of a whole output, and
`chat.completion.chunk` objects of a stream.

One mapping, used both ways (docs/serving.md):

- text is `content`; thoughts are `reasoning_content` (several thoughts joined by a newline);
- a call (`tool_call_end`) is a `tool_calls` entry, its arguments `json.dumps(arguments,
  ensure_ascii=False)`; a recovered call also carries `"recovered": true` and its `diagnostics`;
- a block that failed (`tool_call_error`) is never a call: its raw text stays in `content` where the
  model wrote it, and it is listed in `tool_call_errors` (`index` = its position in that list).

`OpenAIStream` streams the same. With `stream_arguments=False` a call goes out when its block has
been decoded: its header delta (`index`, `id`, `type`, `function.name`, `arguments: ""`), then its
arguments in one fragment; nothing of a failed block is sent as a call. With `stream_arguments=True`
the header goes out at `tool_call_start` and the arguments as the grammar accepts them
(`arguments.ArgumentStream`), the closing `}` only once the call is decoded; a block that then
fails leaves its entry void (an `error` key, arguments never complete JSON). `index` counts the
calls sent, 0, 1, 2... with no gap. Accumulating the chunks (as the OpenAI SDK does) gives exactly
`to_openai_message` of the same output, whatever the chunking, besides each streamed entry's
`index` and the void entries.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from gemma4_lark.events import Event, Text, ThinkingDelta, ThinkingStart, ToolCallEnd, ToolCallError, ToolCallStart
from .arguments import ArgumentStream
from .output import ParsedOutput
from .parser import StreamParser

# How much of the stream's recent text is kept to start a call's argument stream at its `{`: more
# than the parser ever holds back before it reports a block's head (a bare head, 256, or a marker).
_KEEP = 512

__all__ = ["OpenAIStream", "to_openai_message", "tool_call_error_entry"]


def tool_call_error_entry(error: ToolCallError, position: int) -> dict[str, Any]:
    """The `tool_call_errors` entry of a failed block; `position` is its place among the failed
    blocks of the output (the streamed list merges entries by this `index`). Raises nothing."""
    return {"index": position, "id": error.id, "error": error.error, "code": error.code, "raw": error.raw,
            "name": error.name, "partial": error.partial}


def to_openai_message(parsed: ParsedOutput) -> dict[str, Any]:
    """The output as an OpenAI chat-completions assistant message: `role`, `content` (None when
    empty), `reasoning_content` when there was any thought, `tool_calls` when there was any call,
    `tool_call_errors` when any block failed. Raises nothing."""
    content = "".join(e.text if isinstance(e, Text) else e.raw for e in parsed.events
                      if isinstance(e, (Text, ToolCallError)))
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if parsed.thinking:
        message["reasoning_content"] = "\n".join(parsed.thinking)
    if parsed.calls:
        message["tool_calls"] = [call.to_openai() for call in parsed.calls]
    if parsed.errors:
        message["tool_call_errors"] = [tool_call_error_entry(e, k) for k, e in enumerate(parsed.errors)]
    return message


class OpenAIStream:
    """Model output deltas in, `chat.completion.chunk` dicts out (sans-IO, over a `StreamParser`).

    `feed(delta_text)` returns the chunks that the text completes (possibly none); `flush()` ends
    the stream, its last chunk carrying `finish_reason` ("tool_calls" when a call went out complete, else
    "stop"). The first chunk's delta carries `role: "assistant"`. `stream_arguments`: send a call's
    arguments while they are written (True) or whole once the call is decoded (False); see the
    module's docstring and docs/serving.md for what each sends of a failed block. Thoughts go in
    `delta[reasoning_field]` ("reasoning_content" as vLLM, SGLang and DeepSeek send them;
    "reasoning" as others do).
    """

    def __init__(self, parser: StreamParser, *, stream_arguments: bool = True, reasoning_field: str = "reasoning_content",
                 model: str = "gemma-4", completion_id: str | None = None, created: int | None = None):
        if not isinstance(parser, StreamParser):
            raise TypeError(f"parser must be a StreamParser, not {type(parser).__name__}")
        self.parser = parser
        self.stream_arguments = stream_arguments
        self.reasoning_field = reasoning_field
        self.model = model
        self.completion_id = completion_id if completion_id is not None else "chatcmpl-" + secrets.token_hex(12)
        self.created = created if created is not None else int(time.time())
        self._role_sent = False
        self._thoughts = 0     # thoughts begun: the second and later are joined by a newline
        self._calls_sent = 0   # the next tool_calls index
        self._calls_done = 0   # calls sent complete (not void)
        self._errors_sent = 0  # the next tool_call_errors index
        self._finished = False
        # stream_arguments: the stream's recent text, and the call being streamed
        self._recent = ""
        self._recent_start = 0
        self._fed = 0
        self._open: _OpenCall | None = None

    def feed(self, delta_text: str) -> list[dict[str, Any]]:
        """The chunks `delta_text` completes. Raises what `StreamParser.feed` raises (TypeError for
        a non-str, RuntimeError after flush)."""
        events = self.parser.feed(delta_text)
        if not self.stream_arguments:
            if not events:  # most deltas inside a call block
                return []
            if len(events) == 1 and self._role_sent:
                one = self._one_text_chunk(events[0])
                if one is not None:
                    return one
            return self._chunks(events)
        start = self._fed
        end = self._fed = start + len(delta_text)
        call = self._open
        if call is not None and not events and call.read_to == start:
            # The common case while a call is written: the whole delta is more of its block. The
            # recent text starts afresh after it: a new block's head comes after this block's end,
            # which a later delta brings (with events, so not on this path).
            call.read_to = end
            self._recent = ""
            self._recent_start = end
            fragment = call.arguments.feed(delta_text)
            if not fragment:
                return []
            return [{"id": self.completion_id, "object": "chat.completion.chunk", "created": self.created,
                     "model": self.model,
                     "choices": [{"index": 0, "delta": {"tool_calls": [
                         {"index": call.index, "function": {"arguments": fragment}}]},
                         "finish_reason": None, "logprobs": None}]}]
        if len(events) == 1 and call is None and self._role_sent:
            one = self._one_text_chunk(events[0])
            if one is not None:
                self._remember(delta_text)
                return one
        self._remember(delta_text)
        return self._chunks(events)

    def _remember(self, delta_text: str) -> None:
        """Keep the stream's recent text: a block's head may be reported a little after it came."""
        recent = self._recent + delta_text
        keep = _KEEP + len(delta_text)  # all of this delta, and what the parser may hold before it
        if len(recent) > 2 * keep:
            self._recent_start += len(recent) - keep
            recent = recent[-keep:]
        self._recent = recent

    def flush(self) -> list[dict[str, Any]]:
        """The end of the stream: the chunks of what the parser still held, then the final chunk.
        A second call returns []. Raises nothing."""
        if self._finished:
            return []
        self._finished = True
        chunks = self._chunks(self.parser.flush())
        delta: dict[str, Any] = {} if self._role_sent else {"role": "assistant"}
        self._role_sent = True
        chunks.append(self._chunk(delta, "tool_calls" if self._calls_done else "stop"))
        return chunks

    # --- events to deltas -----------------------------------------------------------------------
    def _one_text_chunk(self, event: Event) -> list[dict[str, Any]] | None:
        """The common case of prose and thoughts, one piece of text: its chunk, built in one go
        (this runs for most deltas of a stream). None for any other event."""
        kind = type(event)
        if kind is Text:
            key = "content"
        elif kind is ThinkingDelta:
            key = self.reasoning_field
        else:
            return None
        if not event.text:
            return []
        return [{"id": self.completion_id, "object": "chat.completion.chunk", "created": self.created,
                 "model": self.model,
                 "choices": [{"index": 0, "delta": {key: event.text}, "finish_reason": None, "logprobs": None}]}]

    def _chunks(self, events: list[Event]) -> list[dict[str, Any]]:
        field = self.reasoning_field
        if len(events) == 1 and self._open is None and self._role_sent:
            one = self._one_text_chunk(events[0])
            if one is not None:
                return one
        deltas: list[dict[str, Any]] = []
        if self._open is not None:
            self._stream_open_call(deltas, events)
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
                    self._start_call(deltas, event, events)
            elif kind is ToolCallEnd:
                if self._open is not None and self._open.id == event.id:
                    self._end_call(deltas, event)
                else:
                    deltas.extend(self._call_deltas(event))
            elif kind is ToolCallError:
                if self._open is not None and self._open.id == event.id:
                    deltas.append({"tool_calls": [_void(self._open.index, event.error)]})
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
    def _block_end(self, call_id: str, events: list[Event]) -> int:
        """Where the block of `call_id` ends in the stream when these events end it, else how far
        the stream has been fed: the argument stream reads only the block's own text."""
        for event in events:
            if type(event) in (ToolCallEnd, ToolCallError) and event.id == call_id:
                return event.span[1]
        return self._fed

    def _recent_text(self, start: int, end: int) -> str | None:
        if start < self._recent_start:
            return None
        return self._recent[start - self._recent_start: end - self._recent_start]

    def _stream_open_call(self, deltas: list, events: list[Event]) -> None:
        call = self._open
        text = self._recent_text(call.read_to, self._block_end(call.id, events))
        if text:
            call.read_to += len(text)
            self._add_fragment(deltas, call, call.arguments.feed(text))

    def _start_call(self, deltas: list, start: ToolCallStart, events: list[Event]) -> None:
        """The header goes out now; the arguments as the grammar accepts them, from the `{`."""
        index = self._calls_sent
        self._calls_sent += 1
        deltas.append({"tool_calls": [{"index": index, "id": start.id, "type": "function",
                                       "function": {"name": start.name, "arguments": ""}}]})
        call = self._open = _OpenCall(start.id, index, ArgumentStream(
            max_depth=self.parser.max_depth, typed=self.parser._types_arguments(start.name)), start.span[1] - 1)
        text = self._recent_text(call.read_to, self._block_end(call.id, events))
        if text is None:  # (cannot happen: the parser holds back less than _KEEP) send it whole
            call.arguments.stopped = True
            return
        call.read_to += len(text)
        self._add_fragment(deltas, call, call.arguments.feed(text))

    @staticmethod
    def _add_fragment(deltas: list, call: "_OpenCall", fragment: str) -> None:
        if fragment:
            deltas.append({"tool_calls": [{"index": call.index, "function": {"arguments": fragment}}]})

    def _end_call(self, deltas: list, end: ToolCallEnd) -> None:
        """The streamed call is decoded: the rest of its JSON goes out, with a recovered call's
        marks. When what was sent is not how the decoded call begins (a repeated key, or a block
        the lenient decoder read otherwise), the streamed entry is void (marked `error`; its JSON
        never closed) and the call goes out whole under the next index."""
        call = self._open
        self._open = None
        entry = end.to_openai()
        arguments = entry["function"]["arguments"]
        sent = call.arguments.sent
        if not arguments.startswith(sent):
            deltas.append({"tool_calls": [_void(call.index, (
                "the arguments streamed so far are not those of the decoded call (a repeated key, or a"
                " block read by the lenient decoder): this entry is void, the call follows whole"))]})
            deltas.extend(self._call_deltas(end))
            return
        last: dict[str, Any] = {"index": call.index, "function": {"arguments": arguments[len(sent):]}}
        for key in entry:
            if key not in ("id", "type", "function"):
                last[key] = entry[key]
        deltas.append({"tool_calls": [last]})
        self._calls_done += 1

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        return {"id": self.completion_id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}


def _void(index: int, error: str) -> dict[str, Any]:
    """The delta that voids a streamed call: an `error` (and an empty fragment: clients expect a
    `function` in every tool-call delta). Its arguments stay unclosed JSON."""
    return {"index": index, "function": {"arguments": ""}, "error": error}


class _OpenCall:
    """A call whose header went out and whose arguments are being streamed."""

    __slots__ = ("id", "index", "arguments", "read_to")

    def __init__(self, call_id: str, index: int, arguments: ArgumentStream, read_to: int):
        self.id = call_id
        self.index = index
        self.arguments = arguments
        self.read_to = read_to  # the stream offset up to which the argument stream has read
