"""The events a stream of model output turns into.

Small frozen dataclasses, one class per event type, each with a `type` name and a `span`: the
(start, end) character offsets of the stream that the event accounts for. The spans of all events
of a stream tile it exactly: markup belongs to the event it delimits (`<|channel>thought\\n` to
`thinking_start`, `<channel|>` to `thinking_end`, a whole call block to its call events).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import ClassVar


def _fast_init(cls):
    """Give a frozen slotted dataclass an `__init__` that fills its slots directly.

    A frozen dataclass's own `__init__` goes through `object.__setattr__` for every field; an event
    is created for nearly every chunk fed, so this halves the cost of the most frequent operation
    while the class stays frozen (assignment still raises FrozenInstanceError).
    """
    names = [f.name for f in fields(cls)]
    namespace = {f"_set_{n}": getattr(cls, n).__set__ for n in names}
    params = []
    for f in fields(cls):
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            params.append(f"{f.name}=None")
            namespace[f"_factory_{f.name}"] = f.default_factory
        else:
            params.append(f.name)
    body = []
    for f in fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            body.append(f"    _set_{f.name}(self, _factory_{f.name}() if {f.name} is None else {f.name})")
        else:
            body.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body)
    exec(source, namespace)
    cls.__init__ = namespace["__init__"]
    return cls


class Event:
    """Base of all events: `type`, `span`, and `to_dict()` for JSON."""

    __slots__ = ()
    type: ClassVar[str]

    def to_dict(self) -> dict:
        data = {"type": self.type}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "span":
                value = list(value)
            elif f.name == "diagnostics":
                value = [d.to_dict() for d in value]
            data[f.name] = value
        return data


@_fast_init
@dataclass(frozen=True, slots=True)
class Text(Event):
    """Free text the model wrote, as soon as it is known not to start a marker."""

    type: ClassVar[str] = "text"
    text: str
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class ThinkingStart(Event):
    """`<|channel>thought` (and its newline) opened the thought channel. Zero-width when the
    stream started inside a thought (`start_in_thinking`)."""

    type: ClassVar[str] = "thinking_start"
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class ThinkingDelta(Event):
    """A piece of the model's reasoning."""

    type: ClassVar[str] = "thinking_delta"
    text: str
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class ThinkingEnd(Event):
    """The thought is over; `text` is the whole thought. The span covers `<channel|>`, or is
    zero-width when a call, a stop marker or the end of the stream ended the thought."""

    type: ClassVar[str] = "thinking_end"
    text: str
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class ToolCallStart(Event):
    """`<|tool_call>call:NAME{` is complete: the name is known before the arguments are."""

    type: ClassVar[str] = "tool_call_start"
    id: str
    index: int
    name: str
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class ToolCallEnd(Event):
    """A decoded call. `raw` is the whole block as written; `diagnostics` says what was not
    canonical about it (positions inside `raw`); `recovered` is True when the strict grammar
    rejected the block and the lenient decoder recovered it."""

    type: ClassVar[str] = "tool_call_end"
    id: str
    index: int
    name: str
    arguments: dict
    raw: str
    diagnostics: list = field(default_factory=list)
    recovered: bool = False
    span: tuple = (0, 0)

    def to_openai(self) -> dict:
        """The call as an OpenAI chat-completions `tool_calls` entry."""
        from .render.values import json_dumps  # json.dumps recurses: RecursionError past ~1000 levels

        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": json_dumps(self.arguments)}}


@_fast_init
@dataclass(frozen=True, slots=True)
class ToolCallError(Event):
    """A block that could not be decoded; its raw text is kept, never dropped."""

    type: ClassVar[str] = "tool_call_error"
    id: str
    index: int
    raw: str
    error: str
    span: tuple


@_fast_init
@dataclass(frozen=True, slots=True)
class Stop(Event):
    """A stop marker: `<|tool_response>` (the model waits for results), `<turn|>` or `<eos>`."""

    type: ClassVar[str] = "stop"
    marker: str
    span: tuple


EVENT_TYPES = (Text, ThinkingStart, ThinkingDelta, ThinkingEnd, ToolCallStart, ToolCallEnd, ToolCallError, Stop)
