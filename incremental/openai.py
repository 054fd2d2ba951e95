"""Gemma 4 output in OpenAI chat-completions shapes: the assistant message of a whole output, and
`chat.completion.chunk` objects of a stream.

One mapping, used both ways (docs/serving.md):

- text is `content`; thoughts are `reasoning_content` (several thoughts joined by a newline);
- a call (`tool_call_end`) is a `tool_calls` entry, its arguments `json.dumps(arguments,
  ensure_ascii=False)`; a recovered call also carries `"recovered": true` and its `diagnostics`;
- a block that failed (`tool_call_error`) is never a call: its raw text stays in `content` where the
  model wrote it, and it is listed in `tool_call_errors` (`index` = its position in that list).

`OpenAIStream` sends a call whole when its block has been decoded (`tool_call_end`): its header
delta (`index`, `id`, `type`, `function.name`, `arguments: ""`) and then its arguments in one
fragment. Nothing of a block that fails is ever sent as a call, so `index` counts only the calls
sent: 0, 1, 2... with no gap. Accumulating the chunks (as the OpenAI SDK does) gives exactly
`to_openai_message` of the same output, whatever the chunking, with `index` in each `tool_calls`
entry as streamed messages have it.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from gemma4_lark.events import Event, Text, ThinkingDelta, ThinkingStart, ToolCallEnd, ToolCallError
from .output import ParsedOutput
from .parser import StreamParser

__all__ = ["OpenAIStream", "to_openai_message", "tool_call_error_entry"]


def tool_call_error_entry(error: ToolCallError, position: int) -> dict[str, Any]:
    """The `tool_call_errors` entry of a failed block; `position` is its place among the failed
    blocks of the output (the streamed list merges entries by this `index`). Raises nothing."""
    return {"index": position, "id": error.id, "error": error.error, "raw": error.raw, "name": error.name,
            "partial": error.partial}


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
    the stream, its last chunk carrying `finish_reason` ("tool_calls" when a call was sent, else
    "stop"). The first chunk's delta carries `role: "assistant"`. Thoughts go in
    `delta[reasoning_field]` ("reasoning_content" as vLLM, SGLang and DeepSeek send them;
    "reasoning" as others do).
    """

    def __init__(self, parser: StreamParser, *, reasoning_field: str = "reasoning_content",
                 model: str = "gemma-4", completion_id: str | None = None, created: int | None = None):
        if not isinstance(parser, StreamParser):
            raise TypeError(f"parser must be a StreamParser, not {type(parser).__name__}")
        self.parser = parser
        self.reasoning_field = reasoning_field
        self.model = model
        self.completion_id = completion_id if completion_id is not None else "chatcmpl-" + secrets.token_hex(12)
        self.created = created if created is not None else int(time.time())
        self._role_sent = False
        self._thoughts = 0     # thoughts begun: the second and later are joined by a newline
        self._calls_sent = 0   # the next tool_calls index
        self._errors_sent = 0  # the next tool_call_errors index
        self._finished = False

    def feed(self, delta_text: str) -> list[dict[str, Any]]:
        """The chunks `delta_text` completes. Raises what `StreamParser.feed` raises (TypeError for
        a non-str, RuntimeError after flush)."""
        return self._chunks(self.parser.feed(delta_text))

    def flush(self) -> list[dict[str, Any]]:
        """The end of the stream: the chunks of what the parser still held, then the final chunk.
        A second call returns []. Raises nothing."""
        if self._finished:
            return []
        self._finished = True
        chunks = self._chunks(self.parser.flush())
        delta: dict[str, Any] = {} if self._role_sent else {"role": "assistant"}
        self._role_sent = True
        chunks.append(self._chunk(delta, "tool_calls" if self._calls_sent else "stop"))
        return chunks

    # --- events to deltas -----------------------------------------------------------------------
    def _chunks(self, events: list[Event]) -> list[dict[str, Any]]:
        deltas: list[dict[str, Any]] = []
        field = self.reasoning_field
        for event in events:
            kind = type(event)
            if kind is Text:
                self._add_text(deltas, "content", event.text)
            elif kind is ThinkingDelta:
                self._add_text(deltas, field, event.text)
            elif kind is ThinkingStart:
                self._add_text(deltas, field, "\n" if self._thoughts else "", force=True)
                self._thoughts += 1
            elif kind is ToolCallEnd:
                deltas.extend(self._call_deltas(event))
            elif kind is ToolCallError:
                entry = tool_call_error_entry(event, self._errors_sent)
                self._errors_sent += 1
                deltas.append({"content": event.raw, "tool_call_errors": [entry]})
            # ThinkingEnd, ToolCallStart and Stop send nothing: a call goes out whole at its end,
            # and a stop marker is not content.
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
        header: dict[str, Any] = {"index": index, "id": entry["id"], "type": "function",
                                  "function": {"name": call.name, "arguments": ""}}
        for key in entry:  # a recovered call's marks go with its header
            if key not in ("id", "type", "function"):
                header[key] = entry[key]
        arguments = {"index": index, "function": {"arguments": entry["function"]["arguments"]}}
        return [{"tool_calls": [header]}, {"tool_calls": [arguments]}]

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        return {"id": self.completion_id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}

