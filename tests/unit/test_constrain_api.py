"""`constrain.grammar()`'s arguments, and a call block put in place of the generic one."""

from __future__ import annotations

import pytest

from gemma4_lark import Gemma4Error, constrain
from gemma4_lark.constrain import _turns, ir


@pytest.mark.parametrize("kwargs,error", [
    ({"fmt": "json"}, ValueError),
    ({"scope": "turn"}, ValueError),
    ({"thinking": "yes"}, TypeError),
    ({"tool_choice": "sometimes"}, ValueError),
    ({"scope": "call", "tool_choice": "none"}, ValueError),
    ({"scope": "call", "tool_choice": {"type": "function", "function": {"name": "f"}}}, ValueError),
    ({"scope": "output", "tool_choice": {"type": "function", "function": {"name": "f"}}}, ValueError),
])
def test_bad_arguments(kwargs, error):
    fmt = kwargs.pop("fmt", "gbnf")
    with pytest.raises(error):
        constrain.grammar(fmt, **kwargs)


@pytest.mark.parametrize("tool_choice", ["sometimes", {"type": "function", "function": {"name": "f"}}])
def test_a_requests_bad_tool_choice_is_a_library_error_naming_it(tool_choice):
    # what the request got wrong (not how the API was called) is one of the library's errors, as
    # the stream's read_tool_choice reports it: one `except Gemma4Error` catches it
    with pytest.raises(Gemma4Error, match="tool_choice"):
        constrain.grammar("gbnf", scope="output", tool_choice=tool_choice)


def test_every_format_and_scope():
    for fmt in constrain.FORMATS:
        for scope in constrain.SCOPES:
            assert constrain.grammar(fmt, scope=scope)


def test_call_block_replaced_by_the_tools_block():
    """A tools grammar stands for every call block; the generic block's rules no longer print,
    so the tools' rules may reuse their names."""
    tools_block = ir.Grammar("tool_call", {
        "tool_call": ir.seq(ir.Special("<|tool_call>"), ir.Literal("call:ping{}"), ir.Special("<tool_call|>")),
        # the same name as the generic block's own rule for the marker: no clash, it is unused
        "tool_call_open": ir.Literal("unused"),
    })
    for g in (_turns.call_grammar(), _turns.output_grammar()):
        merged = _turns.with_call_block(g, tools_block)
        gbnf = constrain.dialects.to_gbnf(merged)
        assert "call:ping{}" in gbnf and "object ::=" not in gbnf and "bare-word" not in gbnf


def test_rule_clash_is_refused():
    tools_block = ir.Grammar("tool_call", {"tool_call": ir.Ref("ws"), "ws": ir.Literal(" ")})
    with pytest.raises(ValueError, match="used twice"):
        _turns.with_call_block(_turns.call_grammar(), tools_block)


def test_xgrammar_rule_names_are_not_its_booleans():
    """xgrammar's EBNF lexer reads `true` and `false` as booleans wherever they stand, so no rule
    may be named so (the grammar's TRUE and FALSE terminals would be)."""
    import re

    for scope in constrain.SCOPES:
        text = constrain.grammar("xgrammar", scope=scope)
        names = re.findall(r"^([A-Za-z_.\-][A-Za-z0-9_.\-]*) ::=", text, re.M)
        assert len(names) == text.count("\n")  # one rule per line, its name first
        assert not {"true", "false"} & set(names)
        used = set(re.findall(r"(?<![\"\w\-.])([A-Za-z_.\-][A-Za-z0-9_.\-]*)(?![\w\-.\"])", re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', " ", text)))
        assert not {"true", "false"} & used
