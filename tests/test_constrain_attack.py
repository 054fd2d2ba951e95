"""`constrain.grammar` and `constrain.structural_tag` under odd and hostile tools: a clear
ValueError naming the place, or an export llguidance compiles; never a traceback of another
kind; and the tools' lexical rules are the grammar's terminals as `translate` derives them."""

from __future__ import annotations

import itertools

import pytest

from gemma4_lark import constrain
from gemma4_lark.constrain import ir, schema, translate
from gemma4_lark.grammar import BLOCK_STARTS
from gemma4_lark.tools import read_tools

from constrain_helpers import Matcher  # noqa: E402  (skips without llguidance)


def fn(name="f", parameters=None, **extra):
    function = {"name": name, **extra}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


def obj(properties=None, **extra):
    return {"type": "object", **({"properties": properties} if properties is not None else {}), **extra}


def test_tool_lexical_rules_are_translates_derivation():
    rules, _ = schema.argument_rules(read_tools([fn(parameters=obj({"a": {"type": "number"}}))]))
    for rule, terminal in (("tool_integer", "INTEGER"), ("tool_float", "FLOAT"), ("tool_key", "KEY")):
        assert rules[rule] == translate.terminal_text(terminal, BLOCK_STARTS)[1], rule
    head, content, tail = translate.terminal_text("STRING", BLOCK_STARTS)
    assert rules["tool_string_content"] == content
    assert rules["tool_string"] == ir.seq(ir.Special(head), ir.Ref("tool_string_content"), ir.Special(tail))
