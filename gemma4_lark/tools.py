"""The tools a request declares, and its `tool_choice`, read once into one shape.

OpenAI's chat-completions API sends tools as `{"type": "function", "function": {"name", "description",
"parameters"}}`; many frameworks (and Gemma's own declarations) pass the bare function schema
`{"name", "description", "parameters"}`. Everything that takes `tools=` (renderers, decoding against
the declared tools, constrained-decoding exports, server adapters) reads them through `read_tools`,
so the two shapes mean the same everywhere and a malformed tool is one clear error naming its field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from .fields import ShapeError, expect

__all__ = ["Tool", "ToolChoice", "read_tools", "read_tool_choice", "ShapeError"]


@dataclass(frozen=True)
class Tool:
    """One declared function. `parameters` is its JSON schema (None when it takes none);
    `function` the bare function schema as given (description and any extra fields kept)."""

    name: str
    parameters: Mapping[str, Any] | None
    description: str | None
    function: Mapping[str, Any] = field(repr=False, compare=False)


def _function_of(tool: Any, where: str) -> Mapping[str, Any]:
    expect(tool, (dict,), where)
    if "function" in tool and tool.get("type", "function") == "function":
        return expect(tool["function"], (dict,), f"{where}.function")
    if "name" in tool:  # a bare function schema
        return tool
    if "type" in tool and tool["type"] != "function":
        raise ShapeError(f"{where}.type", f"only function tools are supported, not {tool['type']!r}")
    raise ShapeError(where, "has neither 'function' nor 'name'")


def read_tools(tools: Sequence[Any] | None) -> tuple[Tool, ...]:
    """`tools` (OpenAI-wrapped or bare function schemas, mixed freely) as `Tool`s, in order.
    None gives (). Raises `ShapeError` (a ValueError and TypeError) naming the field for a tool
    of the wrong shape, and for two tools of the same name (which one a call meant would be a
    guess)."""
    if tools is None:
        return ()
    expect(tools, (list, tuple), "tools")
    out: list[Tool] = []
    seen: dict[str, int] = {}
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        function = _function_of(tool, where)
        at = where + (".function" if function is not tool else "")
        if "name" not in function:
            raise ShapeError(at, "has no 'name'")
        name = expect(function["name"], (str,), f"{at}.name")
        if name in seen:
            raise ShapeError(f"{at}.name", f"{name!r} is declared twice (first at tools[{seen[name]}])")
        seen[name] = i
        parameters = expect(function.get("parameters"), (dict,), f"{at}.parameters", optional=True)
        description = expect(function.get("description"), (str,), f"{at}.description", optional=True)
        out.append(Tool(name, parameters, description, function))
    return tuple(out)


@dataclass(frozen=True)
class ToolChoice:
    """A request's `tool_choice`: `mode` is "none", "auto", "required" or "function" (then `name`
    is the one function the output must call)."""

    mode: Literal["none", "auto", "required", "function"]
    name: str | None = None


def read_tool_choice(tool_choice: Any, tools: Sequence[Tool] = ()) -> ToolChoice:
    """`tool_choice` as OpenAI sends it: "none", "auto", "required", or `{"type": "function",
    "function": {"name": ...}}` (a bare `{"name": ...}` is taken too). None means "auto". Raises
    `ShapeError` for anything else, and for a named function that `tools` (when given) does not
    declare."""
    if tool_choice is None:
        return ToolChoice("auto")
    if isinstance(tool_choice, str):
        if tool_choice in ("none", "auto", "required"):
            return ToolChoice(tool_choice)  # type: ignore[arg-type]
        raise ShapeError("tool_choice", f"must be 'none', 'auto', 'required' or a function, not {tool_choice!r}")
    function = _function_of(tool_choice, "tool_choice")
    at = "tool_choice" + (".function" if function is not tool_choice else "")
    if "name" not in function:
        raise ShapeError(at, "has no 'name'")
    name = expect(function["name"], (str,), f"{at}.name")
    if tools and name not in {tool.name for tool in tools}:
        raise ShapeError(f"{at}.name", f"{name!r} is not one of the declared tools")
    return ToolChoice("function", name)
