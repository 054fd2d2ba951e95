"""The declared tools' rules stand apart (`ir.Grammar.marks_apart`): llguidance's printer does not
run its greedy-lexer check on them (above linear in an object's members) because, by
construction, no lexeme of theirs can run past another's end. Checked here on the check's own
terms: over random schemas (objects, unions of objects that share keys, constants and enums that
are objects, arrays, numbers or strings with punctuation, keys that need quoting, references),
the full check, run on every rule, finds nothing more to unfold or split than the printer does
when it skips them.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from schema_strategies import _object, compound, json_leaves, leaf_schemas, tools_with_schemas

from gemma4_lark.constrain import ir_grammar
from gemma4_lark.constrain._analysis import regular_rules
from gemma4_lark.constrain._greedy import greedy_safe
from gemma4_lark.constrain.schema import SchemaError
from gemma4_lark.render.safety import UnsafeContentError

_SHARED_KEYS = st.sampled_from(["a", "ab", "b", "a b", "x:y", "-1"])
_VALUES = st.recursive(json_leaves | st.sampled_from(["a,b", "{x}", "[", ":", "1.5"]),
                       lambda c: st.lists(c, max_size=3) | st.dictionaries(_SHARED_KEYS, c, max_size=3), max_leaves=6)
_LEAVES = leaf_schemas | _VALUES.map(lambda v: {"const": v}) | st.lists(_VALUES, min_size=1, max_size=3).map(
    lambda v: {"enum": v}) | st.just({}) | st.sampled_from([{"type": "number", "minimum": 0}, {"type": "integer"}])
_SCHEMAS = st.recursive(_LEAVES, lambda children: compound(children) | st.builds(
    _object, st.dictionaries(_SHARED_KEYS, children, max_size=3), st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from(["absent", False, True])), max_leaves=8)


def _tools(properties, names=("f",)):
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": properties}}}
            for name in names]


def _same_with_and_without_the_skip(tools, scope):
    for balanced in (True, False):  # the members as llguidance gets them, and as a chain
        try:
            grammar = ir_grammar(scope=scope, tools=tools, balanced=balanced)
        except (SchemaError, UnsafeContentError, ValueError):
            assume(False)
        assert grammar.marks_apart  # the tools' rules
        regular = regular_rules(grammar)
        skipped = greedy_safe(grammar, regular)
        checked = greedy_safe(dataclasses.replace(grammar, marks_apart=frozenset()), regular)
        assert checked == skipped


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@_SETTINGS
@given(properties=st.dictionaries(_SHARED_KEYS, _SCHEMAS, max_size=4), scope=st.sampled_from(["call", "output"]),
       names=st.sampled_from([("f",), ("f", "fg"), ("a.b", "a:b", "a")]))
def test_the_check_finds_nothing_in_the_tools_rules(properties, scope, names):
    _same_with_and_without_the_skip(_tools(properties, names), scope)


@_SETTINGS
@given(tools=tools_with_schemas())
def test_the_check_finds_nothing_in_the_suites_schemas(tools):
    _same_with_and_without_the_skip(tools, "call")
