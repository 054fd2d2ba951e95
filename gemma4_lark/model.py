"""What a parse returns: small frozen dataclasses for blocks, document parts and turns.

They hold plain Python values (str, int, float, bool, None, list, dict), never parser tokens, so they
compare, print and serialise like the data they stand for. `fast_init` gives the frozen slotted
dataclasses built for nearly every chunk of a stream (events, block outcomes) a quicker `__init__`.

A part whose concept a stream event shares is named with `Part` (`TextPart`, `StopPart`): the
events of `gemma4_incremental` are `Text` and `Stop`, other objects (docs/architecture.md, "Names").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any


def fast_init(cls):
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

from ._names import module_getattr as _module_getattr

__all__ = [
    "AwaitingResponse", "Media", "OutputDocument", "StopPart", "TextPart", "ThinkSwitch", "Thought", "ThoughtPrefill",
    "ToolCall", "ToolDeclaration", "ToolResponse", "Transcript", "Turn", "to_jsonable",
]


@dataclass(frozen=True)
class ToolCall:
    """`<|tool_call>call:NAME{...}<tool_call|>`: one call the model made."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResponse:
    """`<|tool_response>response:NAME{...}<tool_response|>`: one tool result in a prompt."""

    name: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolDeclaration:
    """`<|tool>declaration:NAME{...}<tool|>`: one tool declared in the system turn."""

    name: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TextPart:
    """Free text between structural tokens, every byte kept."""

    text: str


@dataclass(frozen=True)
class Thought:
    """`<|channel>thought\\n...<channel|>`: the model's reasoning (the text between the markers,
    without the newline that follows `thought`)."""

    text: str


@dataclass(frozen=True)
class ThoughtPrefill:
    """`<|channel>thought\n` with nothing after it: a prompt that hands the model its reasoning."""


@dataclass(frozen=True)
class StopPart:
    """The token that ended a model output: `<|tool_response>`, `<turn|>` or `<eos>`."""

    marker: str


@dataclass(frozen=True)
class AwaitingResponse:
    """A bare `<|tool_response>` in a model turn: calls were made, their results are not in yet."""


@dataclass(frozen=True)
class ThinkSwitch:
    """`<|think|>`: thinking is switched on (top of the system turn)."""


@dataclass(frozen=True)
class Media:
    """A media placeholder: `kind` is "image", "audio" or "video"."""

    kind: str


@dataclass(frozen=True)
class OutputDocument:
    """A whole model output: text, thoughts and calls in order, then the stop marker if any."""

    parts: list = field(default_factory=list)

    @property
    def calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def stop(self) -> str | None:
        last = self.parts[-1] if self.parts else None
        return last.marker if isinstance(last, StopPart) else None


@dataclass(frozen=True)
class Turn:
    """`<|turn>ROLE\\n...<turn|>`; `closed` is False for a turn left open (a generation prompt,
    or a model turn waiting for tool results)."""

    role: str
    parts: list = field(default_factory=list)
    closed: bool = True


@dataclass(frozen=True)
class Transcript:
    """A whole prompt or conversation."""

    turns: list = field(default_factory=list)
    bos: bool = True


def to_jsonable(obj: Any) -> Any:
    """A parse result as JSON-ready data: each part becomes {"type": ..., fields...}."""
    if isinstance(obj, list):  # a run of blocks
        return [to_jsonable(item) for item in obj]
    if isinstance(obj, OutputDocument):
        return {"type": "model_output", "parts": [to_jsonable(p) for p in obj.parts]}
    if isinstance(obj, Transcript):
        return {"type": "transcript", "bos": obj.bos, "turns": [to_jsonable(t) for t in obj.turns]}
    if isinstance(obj, Turn):
        return {"role": obj.role, "closed": obj.closed, "parts": [to_jsonable(p) for p in obj.parts]}
    kinds = {
        ToolCall: "tool_call", ToolResponse: "tool_response", ToolDeclaration: "tool_declaration",
        TextPart: "text", Thought: "thought", StopPart: "stop", AwaitingResponse: "awaiting_response",
        ThinkSwitch: "think", Media: "media", ThoughtPrefill: "thought_prefill",
    }
    kind = kinds.get(type(obj))
    if kind is None:
        return obj
    data = {"type": kind}
    data.update(obj.__dict__)
    return data


# The names of one release before: they still work, and warn (docs/architecture.md, "Names").
__getattr__ = _module_getattr(__name__, renamed={"Text": "TextPart", "StopMarker": "StopPart", "ModelOutput": "OutputDocument"})
