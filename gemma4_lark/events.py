"""The events a stream of model output turns into.

Small frozen dataclasses, one class per event type, each with a `type` name and a `span`: the
(start, end) character offsets of the stream that the event accounts for. The spans of all events
of a stream tile it exactly: markup belongs to the event it delimits (`<|channel>thought\\n` to
`thinking_start`, `<channel|>` to `thinking_end`, a whole call block to its call events, markup that
means nothing where it stands to `stray_markup`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from .diagnostics import TOOL_CALL_ERROR_CODES, Diagnostic  # noqa: F401 - the codes: read here too
from .model import fast_init


class Event:
    """Base of all events: `type`, `span`, and `to_dict()` for JSON."""

    __slots__ = ()
    type: ClassVar[str]
    span: tuple[int, int]  # every event has one (declared here for type checkers)

    def to_dict(self) -> dict[str, Any]:
        data = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "span":
                value = list(value)
            elif f.name == "diagnostics":
                value = [d.to_dict() for d in value]
            data[f.name] = value
        return data


@fast_init
@dataclass(frozen=True, slots=True)
class Text(Event):
    """Free text the model wrote, as soon as it is known not to start a marker."""

    type: ClassVar[str] = "text"
    text: str
    span: tuple[int, int]


@fast_init
@dataclass(frozen=True, slots=True)
class ThinkingStart(Event):
    """`<|channel>thought` (and its newline) opened the thought channel. Zero-width when the
    stream started inside a thought (`start_in_thinking`)."""

    type: ClassVar[str] = "thinking_start"
    span: tuple[int, int]


@fast_init
@dataclass(frozen=True, slots=True)
class ThinkingDelta(Event):
    """A piece of the model's reasoning."""

    type: ClassVar[str] = "thinking_delta"
    text: str
    span: tuple[int, int]


@fast_init
@dataclass(frozen=True, slots=True)
class ThinkingEnd(Event):
    """The thought is over. The span covers `<channel|>`, or is zero-width when a call, a stop
    marker or the end of the stream ended the thought. The thought itself is the text of the
    `thinking_delta` events since `thinking_start` (the parser does not keep it: a thought has no
    size limit, and memory stays bounded by the largest open call block)."""

    type: ClassVar[str] = "thinking_end"
    span: tuple[int, int]


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCallStart(Event):
    """`<|tool_call>call:NAME{` is complete: the name is known before the arguments are."""

    type: ClassVar[str] = "tool_call_start"
    id: str
    index: int
    name: str
    span: tuple[int, int]


# Findings of decoding against the declared tools that a client sees in `to_openai()`.
_TOOLS_FINDINGS = frozenset({"coerced", "schema", "string-run"})


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCallEnd(Event):
    """A decoded call. `raw` is the whole block as written; `diagnostics` says what was not
    canonical about it (positions inside `raw`); `recovered` is True when the strict grammar did not
    accept the block as it stands (rejected, or not closed by `<tool_call|>`) and the lenient
    decoder recovered it: check it before acting on the call."""

    type: ClassVar[str] = "tool_call_end"
    id: str
    index: int
    name: str
    arguments: dict[str, Any]
    raw: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    recovered: bool = False
    span: tuple[int, int] = (0, 0)

    def to_openai(self) -> dict[str, Any]:
        """The call as an OpenAI chat-completions `tool_calls` entry. A recovered call says so: the
        entry then also holds `"recovered": true` and the `diagnostics` (clients that do not know
        these keys ignore them; the call is never passed off as one the model wrote correctly), and
        so does a call whose arguments were typed or found wrong by the tool's schema (`coerced`,
        `schema`: docs/schema.md). Raises nothing."""
        try:
            arguments = json.dumps(self.arguments, ensure_ascii=False)
        except RecursionError:  # json.dumps recurses; the one serializer of render.values does not
            from .render.values import json_dumps

            arguments = json_dumps(self.arguments)
        entry: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }
        if self.recovered:
            entry["recovered"] = True
        if self.recovered or any(d.code in _TOOLS_FINDINGS for d in self.diagnostics):
            entry["diagnostics"] = [d.to_dict() for d in self.diagnostics]
        return entry


@fast_init
@dataclass(frozen=True, slots=True)
class ToolCallError(Event):
    """A block that is not a call to act on; its raw text is kept, never dropped. When part of it
    could be read (a block cut off before its end), `name` and `partial` hold what was decoded,
    incomplete by definition, and `diagnostics` the lenient decoder's findings. `code` says what
    kind of failure it is, for code to decide on: one of `TOOL_CALL_ERROR_CODES` (docs/schema.md)."""

    type: ClassVar[str] = "tool_call_error"
    id: str
    index: int
    raw: str
    error: str
    span: tuple[int, int]
    name: str | None = None
    partial: dict[str, Any] | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    code: str = ""




@fast_init
@dataclass(frozen=True, slots=True)
class Stop(Event):
    """A stop marker: `<|tool_response>` (the model waits for results), `<turn|>` or `<eos>`."""

    type: ClassVar[str] = "stop"
    marker: str
    span: tuple[int, int]


@fast_init
@dataclass(frozen=True, slots=True)
class StrayMarkup(Event):
    """Markup that means nothing where it stands, kept out of the text and the thought (lenient
    mode only; strict mode leaves it in the text or thought it stands in): a `<channel|>` or a
    `<tool_call|>` with nothing open, a channel opener inside a thought. `markup` is what was
    written; the span covers it (docs/leniency.md#stray-markup)."""

    type: ClassVar[str] = "stray_markup"
    markup: str
    span: tuple[int, int]

