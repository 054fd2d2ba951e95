"""The exports checked: the generic ones (no tools) of both scopes with each switch, and exports
specialised to random tool lists (tests/schema_strategies.py), each printed for llguidance (the
reference) and as GBNF (what llama.cpp reads)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draw import examples
from schema_strategies import _distinct_case, tools_with_schemas

from gemma4_lark import constrain
from gemma4_lark.constrain.schema import not_enforced
from gemma4_lark.tools import read_tools

GENERIC_OPTIONS = (
    ("call", {}),
    ("output", {}),
    ("output", {"thinking": False}),
    ("output", {"tool_choice": "required"}),
    ("output", {"tool_choice": "none"}),
)


@dataclass(frozen=True)
class Export:
    scope: str
    options: dict = field(default_factory=dict)
    tools: Any = None

    def text(self, fmt: str) -> str:
        return constrain.grammar(fmt, scope=self.scope, tools=self.tools, **self.options)

    @property
    def label(self) -> str:
        switches = ",".join(f"{k}={v}" for k, v in self.options.items())
        tools = "" if self.tools is None else f" tools={[t['function']['name'] for t in self.tools]}"
        return f"{self.scope}{'(' + switches + ')' if switches else ''}{tools}"


def generic() -> list[Export]:
    return [Export(scope, options) for scope, options in GENERIC_OPTIONS]


def tool_lists(n: int, seed: int) -> list[list[dict]]:
    """Random tool lists whose schemas the rules enforce whole (what the llguidance tests take)."""
    return [tools for tools in examples(tools_with_schemas(), n, seed)
            if _distinct_case(tools) and not not_enforced(read_tools(tools))]


def specialised(tools: list[dict]) -> list[Export]:
    """Four exports a tool list: the call, and turns under `auto`, `required` and a named function
    (the last two without thinking: with it, printing the llguidance export costs seconds a tool
    list, and the generic exports check the bounded prefix after a thought)."""
    first = tools[0]["function"]["name"]
    return [
        Export("call", {}, tools),
        Export("output", {}, tools),
        Export("output", {"tool_choice": "required", "thinking": False}, tools),
        Export("output", {"tool_choice": {"type": "function", "function": {"name": first}}, "thinking": False}, tools),
    ]
