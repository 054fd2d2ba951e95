"""Whole-stream helpers over StreamParser: an event iterator and a collected result."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from gemma4_lark import accelerators
from gemma4_lark.diagnostics import Diagnostic
from gemma4_lark.events import Event, Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError
from . import express
from ._inputs import plain_finish_reason, plain_str
from .parser import StreamParser


def parse_stream(chunks: Iterable[str], **options: Any) -> Iterator[Event]:
    """Events of a stream given as an iterable of chunks, as they become known.

    Raises what `StreamParser` raises: `TypeError` for a chunk that is not a str (or an unknown
    option).
    """
    parser = StreamParser(**options)
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.flush()


@dataclass(frozen=True)
class ParsedOutput:
    """A whole model output: its text, its thoughts, its calls, the blocks that failed, the
    first stop marker (or None), and `diagnostics`: findings about the output as a whole (today:
    `missing-call` when `tool_choice` requires a call and none was made; docs/schema.md)."""

    text: str
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCallEnd] = field(default_factory=list)
    errors: list[ToolCallError] = field(default_factory=list)
    stop: str | None = None
    events: list[Event] = field(default_factory=list, repr=False)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_openai(self) -> dict[str, Any]:
        """Deprecated: `gemma4_incremental.to_openai_message(parsed)`, the one spelling
        (docs/architecture.md, "Names"); this method goes in the next release."""
        warnings.warn("ParsedOutput.to_openai() is deprecated: it is gemma4_incremental.to_openai_message(parsed)"
                      " now, and the method goes in the next release", DeprecationWarning, stacklevel=2)
        return to_openai_message(self)


# The OpenAI shapes of a whole output live beside it (openai.py, which streams them, builds on
# this module and exports them).
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


_BASES: dict[type, type] = {t: t for t in (Text, ToolCallEnd, ThinkingDelta, ThinkingStart, ThinkingEnd,
                                          ToolCallError, Stop)}


def _base(kind: type) -> type:
    """The event type `kind` is, or derives from (kept for the next event); `kind` itself when none."""
    _BASES[kind] = base = next((t for t in kind.__mro__ if t in _BASES), kind)
    return base


def collect(events: Iterable[Event]) -> ParsedOutput:
    """The events of a whole stream gathered into a ParsedOutput: the thoughts are assembled from
    their deltas. Raises nothing for events of a stream."""
    events = list(events)
    text: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCallEnd] = []
    errors: list[ToolCallError] = []
    stop = None
    thought = None
    for event in events:  # one pass, by type (a subclass of an event type counts as its base)
        kind = _BASES.get(type(event)) or _base(type(event))
        if kind is Text:
            text.append(event.text)
        elif kind is ToolCallEnd:
            calls.append(event)
        elif kind is ThinkingDelta:
            if thought is not None:
                thought.append(event.text)
        elif kind is ThinkingStart:
            thought = []
        elif kind is ThinkingEnd:
            thinking.append("".join(thought or ()))
            thought = None
        elif kind is ToolCallError:
            errors.append(event)
        elif kind is Stop and stop is None:
            stop = event.marker
    return ParsedOutput(text="".join(text), thinking=thinking, calls=calls, errors=errors, stop=stop, events=events)


def merge_deltas(events: Iterable[Event]) -> list[Event]:
    """The events with consecutive text (or thinking delta) events joined into one: what no
    chunking can change, so two streams of the same text compare equal. Raises nothing."""
    out: list[Event] = []
    for event in events:
        if out and type(event) in (Text, ThinkingDelta) and type(out[-1]) is type(event):
            last = out.pop()
            event = type(event)(last.text + event.text, (last.span[0], event.span[1]))
        out.append(event)
    return out


def parse_output(text: str, *, finish_reason: str | None = None, **options: Any) -> ParsedOutput:
    """Parse a complete model output. `options` are StreamParser's (`tools`, `tool_choice`,
    `strict`, ...); `finish_reason` is the engine's, when known ("stop": a call block the output
    ends in with complete arguments was not cut off; see `StreamParser.flush`). Raises `TypeError`
    when `text` is not a str (a str subclass is read as a str), for an unknown option, and what
    StreamParser raises for malformed `tools`; problems in the text are in the result's `errors`,
    calls' diagnostics and `diagnostics`."""
    finish_reason = plain_finish_reason(finish_reason)
    if type(text) is not str:
        text = plain_str(text, "text")
    parser = StreamParser(**options)
    # the usual shape, read by the express path (it takes no output that ends in an open block, so
    # the finish reason changes nothing it takes); else (or with the accelerators off) None
    events = express.events(parser, text) if accelerators.ENABLED else None
    if events is None:
        events = parser.feed(text)
        events += parser.flush(finish_reason)
    parsed = collect(events)
    if parser.diagnostics:
        parsed = dataclasses.replace(parsed, diagnostics=list(parser.diagnostics))
    return parsed
