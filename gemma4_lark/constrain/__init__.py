"""Constrained decoding from the grammar: exports for llguidance, GBNF, xgrammar and Lark.

    from gemma4_lark import constrain
    text = constrain.grammar("llguidance", scope="call")

The exports are translated from `grammar/gemma4.lark` when asked for (see `_translate` and
`_turns`), so they cannot drift from the parser: `scope="call"` accepts exactly the language of
`parse_call`. docs/constrained-decoding.md tells which export goes to which server.

The rooms: `ir` (the engine-neutral grammar) and `dialects` (its printers); `_translate` (the
grammar of record as IR) and `_turns` (a call block, a model turn), with `_token_language`,
`_regular`, `_expressions` and `_numbers` (each terminal's language); `schema` (the declared
tools' call blocks: `_read` reads a schema, `_merge` merges schemas, `_emit` writes the rules,
from `_lexical`'s pieces) and `structural_tag`; the greedy-lexing check of the llguidance
printer in `_greedy`, over `_analysis`, `_lexemes` and `_automata`.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .dialects import PRINTERS
# The function (it shadows its module's name here); `as` marks it re-exported, for type checkers.
from .structural_tag import structural_tag as structural_tag

FORMATS = tuple(PRINTERS)
SCOPES = ("call", "output")


def grammar(fmt: str, *, scope: str = "call", tools: Any = None, tool_choice: Any = "auto",
            thinking: bool = True) -> str:
    """The grammar of a call block (`scope="call"`) or of a whole model turn (`scope="output"`),
    in the dialect `fmt` ("llguidance", "gbnf", "xgrammar" or "lark").

    `tools` (OpenAI-style tool list, or bare function schemas) restricts call blocks to the
    declared tools and their parameter schemas; `tool_choice` ("auto", "none", "required", or a
    named function) shapes a model turn; `thinking=False` leaves thoughts out of it.

    Raises `ValueError` for an unknown format, scope or tool choice, and `gemma4_lark.tools`'
    `ShapeError` (a `ValueError`) for tools of the wrong shape.
    """
    # llguidance's compiler recurses through rules: an object's members as a balanced tree there
    return PRINTERS[_format(fmt)](ir_grammar(scope=scope, tools=tools, tool_choice=tool_choice, thinking=thinking,
                                             balanced=fmt == "llguidance"))


def ir_grammar(*, scope: str = "call", tools: Any = None, tool_choice: Any = "auto", thinking: bool = True,
               balanced: bool = False) -> ir.Grammar:
    """The engine-neutral grammar `grammar()` prints. `balanced`: each object's members as a
    balanced tree of rules, log2(n) deep, not a chain of one rule per member (the same language;
    what `grammar()` gives llguidance, whose compiler overflowed its stack on a long chain)."""
    from ..fields import ShapeError
    from ..tools import read_tool_choice, read_tools
    from . import _turns

    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}: expected one of {', '.join(SCOPES)}")
    if not isinstance(thinking, bool):
        raise TypeError("thinking must be True or False")
    declared = read_tools(tools) if tools is not None else ()
    choice = read_tool_choice(tool_choice, declared)
    if choice.mode == "function" and tools is None:
        # the request's own mistake, as read_tool_choice reports one: a ShapeError (a ValueError)
        raise ShapeError("tool_choice", f"names {choice.name!r}, but no tools are declared")
    call_block = None
    if tools is not None and choice.mode != "none":
        from .schema import tool_call_rules  # the declared tools' call blocks

        call_block = tool_call_rules(declared, choice, balanced=balanced)
    if scope == "call":
        if choice.mode == "none":
            raise ValueError("scope='call' with tool_choice='none' leaves nothing to generate")
        return _turns.call_grammar() if call_block is None else _turns.with_call_block(
            _turns.call_grammar(), call_block)
    return _turns.output_grammar(mode=choice.mode, thinking=thinking, call_block=call_block)


def _format(fmt: str) -> str:
    if fmt not in PRINTERS:
        raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return fmt
