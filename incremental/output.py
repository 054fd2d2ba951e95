"""Whole-stream helpers over StreamParser: an event iterator and a collected result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from gemma4_lark.events import Event, Stop, Text, ThinkingEnd, ToolCallEnd, ToolCallError
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
    """A whole model output: its text, its thoughts, its calls, the blocks that failed, and the
    first stop marker (or None)."""

    text: str
    thinking: list[str] = field(default_factory=list)
    calls: list[ToolCallEnd] = field(default_factory=list)
    errors: list[ToolCallError] = field(default_factory=list)
    stop: str | None = None
    events: list[Event] = field(default_factory=list, repr=False)


def collect(events: Iterable[Event]) -> ParsedOutput:
    """The events of a whole stream gathered into a ParsedOutput. Raises nothing for events of a
    stream."""
    events = list(events)
    stops = [e.marker for e in events if isinstance(e, Stop)]
    return ParsedOutput(
        text="".join(e.text for e in events if isinstance(e, Text)),
        thinking=[e.text for e in events if isinstance(e, ThinkingEnd)],
        calls=[e for e in events if isinstance(e, ToolCallEnd)],
        errors=[e for e in events if isinstance(e, ToolCallError)],
        stop=stops[0] if stops else None,
        events=events,
    )


def parse_output(text: str, **options: Any) -> ParsedOutput:
    """Parse a complete model output. Raises `TypeError` when `text` is not a str (or for an
    unknown option); problems in the text are in the result's `errors` and calls' diagnostics."""
    return collect(parse_stream([text], **options))
