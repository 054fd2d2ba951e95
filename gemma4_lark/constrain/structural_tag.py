"""The structural tag that vLLM and SGLang take in a structured-output request, for the declared
tools: free text until the model writes `<|tool_call>`, then one of the declared calls,
`<|tool_call>call:NAME` and arguments that follow the tool's schema, closed by `<tool_call|>`.

The shape is xgrammar's structural-tag format (`{"type": "structural_tag", "format": {...}}`,
xgrammar 0.1.2x and later; vLLM's and SGLang's `response_format` take it as is): a
`triggered_tags` format whose tags carry their arguments as a `grammar` format (xgrammar's EBNF,
printed from the same rules as `constrain.grammar("xgrammar", tools=...)`).

The older form, `{"type": "structural_tag", "structures": [{"begin", "schema", "end"}],
"triggers": [...]}`, carries a JSON schema per tag, which every engine reads as JSON text
(`{"location": "Paris"}`): Gemma writes `{location:<|"|>Paris<|"|>}`, so that form would force
the wrong syntax and is not produced. docs/constrained-decoding.md ("Structural tags and servers")
has the requests.
"""

from __future__ import annotations

from typing import Any

from .. import tokens
from ..tools import Tool, ToolChoice, read_tool_choice, read_tools
from . import ir
from .dialects import to_xgrammar
from ._emit import grammar_of
from .schema import argument_rules

__all__ = ["structural_tag", "argument_grammars"]


def argument_grammars(tools: Any, *, order: str = "sorted") -> dict[str, ir.Grammar]:
    """Each declared tool's arguments (the `{...}` after its name) as a grammar of its own.
    `tools` as a request sends them, or `Tool`s already read."""
    declared = tuple(tools) if all(isinstance(t, Tool) for t in tools) else read_tools(tools)
    rules, starts = argument_rules(declared, order=order)
    return {name: grammar_of(rules, start) for name, start in starts.items()}


def _tag(name: str, grammar: ir.Grammar) -> dict:
    return {
        "type": "tag",
        "begin": tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + name,
        "content": {"type": "grammar", "grammar": to_xgrammar(grammar)},
        "end": tokens.TOOL_CALL_CLOSE,
    }


def structural_tag(tools: Any, *, tool_choice: Any = "auto", thinking: bool = True) -> dict[str, Any]:
    """The structural tag for `tools` (OpenAI-style or bare function schemas), as a JSON-able dict.

    `tool_choice`: "auto" (text, and calls where the model opens one), "required" (at least one
    call), a named function (that one call, and nothing else), "none" (text in which no call
    opens). `thinking`: whether the output may open with a thought (`<|channel>thought ...
    <channel|>`).

    Raises `gemma4_lark.tools.ShapeError` (a ValueError) for tools or a tool choice of the wrong
    shape, `constrain.schema.SchemaError` (a ValueError) for a schema no call can satisfy, and
    ValueError when calls are asked for but no tool is declared.
    """
    if not isinstance(thinking, bool):
        raise TypeError("thinking must be True or False")
    declared = read_tools(tools)
    choice: ToolChoice = read_tool_choice(tool_choice, declared)
    if choice.mode == "none":
        body: dict = {"type": "any_text", "excludes": [tokens.TOOL_CALL_OPEN]}
    else:
        if not declared:
            raise ValueError(f"tool_choice {choice.mode!r} needs at least one declared tool")
        grammars = argument_grammars(declared)
        if choice.mode == "function":
            assert choice.name is not None
            body = _tag(choice.name, grammars[choice.name])
        else:
            body = {
                "type": "triggered_tags",
                "triggers": [tokens.TOOL_CALL_OPEN],
                "tags": [_tag(name, grammar) for name, grammar in grammars.items()],
                "at_least_one": choice.mode == "required",
                "stop_after_first": False,
            }
    if thinking:
        thought = {"type": "tag", "begin": tokens.THOUGHT_OPEN.rstrip("\n"), "content": {"type": "any_text"},
                   "end": tokens.CHANNEL_CLOSE}
        body = {"type": "sequence", "elements": [{"type": "optional", "content": thought}, body]}
    return {"type": "structural_tag", "format": body}
