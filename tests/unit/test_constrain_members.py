"""An object's members as rules: the chain (one rule per member, what the GBNF and xgrammar exports
carry) and the balanced tree (`_emit.MemberTree`, what `grammar()` gives llguidance, whose compiler
recursed through the chain and overflowed its stack: a segfault at about 2,700 members, 1,024 on
a thread of 2 MB). The same language, checked by llguidance's matcher on calls with random
subsets of the members (required ones left out, extra members, at least one of some); the tree
nests log2(n) deep; and llguidance compiles an object of 4,096 members on a 2 MB thread stack.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("llguidance")

from constrain_llg import accepts  # noqa: E402

from gemma4_lark import constrain  # noqa: E402
from gemma4_lark.constrain._analysis import refs  # noqa: E402
from gemma4_lark.constrain.dialects import to_llguidance  # noqa: E402
from gemma4_lark.constrain.schema import SchemaError, tool_call_rules  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402
from conftest import TESTS

D = '<|"|>'
_VALUES = {"integer": ["1", "-7"], "string": [D + "s" + D], "boolean": ["true"], "any": ["[1]", "{a:2}", "null"]}


def _grammars(tools):
    parsed = read_tools(tools)
    choice = read_tool_choice("auto", parsed)
    return [to_llguidance(tool_call_rules(parsed, choice, balanced=balanced)) for balanced in (False, True)]


@st.composite
def _objects(draw):
    """An object of 1 to 9 members (keys that sort apart and that share prefixes), each required
    or not, of a few types; extra members or not; at times "at least one of" some of them."""
    n = draw(st.integers(1, 9))
    keys = draw(st.lists(st.sampled_from(["a", "ab", "b", "ba", "c", "d", "e", "f", "g", "h", "k", "m"]),
                         min_size=n, max_size=n, unique=True))
    kinds = draw(st.lists(st.sampled_from(list(_VALUES)), min_size=n, max_size=n))
    required = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    schema = {"type": "object", "properties": {k: ({} if t == "any" else {"type": t}) for k, t in zip(keys, kinds)},
              "required": [k for k, r in zip(keys, required) if r]}
    extra = draw(st.sampled_from(["absent", False, True]))
    if extra != "absent":
        schema["additionalProperties"] = extra
    optional = [k for k, r in zip(keys, required) if not r]
    if optional and draw(st.booleans()):
        schema["anyOf"] = [{"required": [k]} for k in draw(st.lists(st.sampled_from(optional), min_size=1, unique=True))]
    return schema, dict(zip(keys, kinds))


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=_objects(), data=st.data())
def test_the_tree_and_the_chain_take_the_same_calls(case, data):
    schema, kinds = case
    try:
        chain, tree = _grammars([{"type": "function", "function": {"name": "f", "parameters": schema}}])
    except SchemaError:
        assume(False)
    for _ in range(8):  # members written or not (sorted, as the renderer writes them), extras among them
        present = sorted(k for k in kinds if data.draw(st.booleans()))
        members = [f"{k}:{data.draw(st.sampled_from(_VALUES[kinds[k]]))}" for k in present]
        if data.draw(st.booleans()):
            members.insert(data.draw(st.integers(0, len(members))), "zz:1")
        text = "<|tool_call>call:f{" + ",".join(members) + "}<tool_call|>"
        assert accepts(chain, text) == accepts(tree, text), text


def _depth(grammar) -> int:
    """The longest path of rule references from the start (the rules are acyclic here)."""
    depth: dict = {}
    order = []
    stack = [(grammar.start, False)]
    while stack:
        name, done = stack.pop()
        if done:
            depth[name] = 1 + max((depth[t] for t in refs(grammar.rules[name]) if t in depth), default=0)
            continue
        if name in depth or name in order:
            continue
        order.append(name)
        stack.append((name, True))
        stack.extend((t, False) for t in refs(grammar.rules[name]) if t not in depth)
    return depth[grammar.start]


@pytest.mark.parametrize("anyof", [False, True])
def test_the_tree_nests_log_deep(anyof):
    def tools(n):
        schema = {"type": "object", "properties": {f"k{i:05d}": {"type": "integer"} for i in range(n)},
                  "required": [f"k{i:05d}" for i in range(0, n, 3)]}
        if anyof:
            schema["anyOf"] = [{"required": [f"k{i:05d}"]} for i in range(1, n, 3)]
        parsed = read_tools([{"type": "function", "function": {"name": "f", "parameters": schema}}])
        return parsed, read_tool_choice("auto", parsed)

    for n in (64, 1024, 4096):
        tree = _depth(tool_call_rules(*tools(n), balanced=True))
        assert tree <= 3 * math.log2(n) + 12, (n, tree)
    assert _depth(tool_call_rules(*tools(1024))) > 1024  # the chain


def test_llguidance_compiles_thousands_of_members_on_a_small_stack():
    """In a child process (a segfault must fail the test, not end the run): 4,096 string members,
    compiled by llguidance in a thread of 2 MB, from the export `grammar()` gives it."""
    script = textwrap.dedent("""
        import sys, threading
        sys.path.insert(0, sys.argv[1])
        import llguidance
        from constrain_llg import TOKENIZER
        from gemma4_lark import constrain
        n = 4096
        schema = {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(n)},
                  "required": [f"k{i}" for i in range(0, n, 2)]}
        text = constrain.grammar("llguidance", tools=[{"type": "function", "function": {"name": "f", "parameters": schema}}])
        def compile():
            matcher = llguidance.LLMatcher(TOKENIZER, text, log_level=0)
            print("error" if matcher.is_error() else "compiled", flush=True)
        threading.stack_size(2 * 1024 * 1024)
        thread = threading.Thread(target=compile)
        thread.start()
        thread.join()
    """)
    done = subprocess.run([sys.executable, "-c", script, str(TESTS)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "compiled", (done.returncode, done.stdout, done.stderr[-500:])


# An array's positions (`prefixItems`): the optional ones nested one inside the other in a
# single expression (`a (, b (, c)?)?`), n deep: llguidance refused 30 levels ("too deeply
# nested"), and the printers raised RecursionError at a few hundred. Now a balanced tree too.
@pytest.mark.parametrize("m", [1, 2, 5, 40, 300])
@pytest.mark.parametrize("low", [0, 1, 3])
@pytest.mark.parametrize("tail", [False, True])
def test_a_tuple_takes_its_prefixes_and_nothing_else(m, low, tail):
    schema = {"type": "array", "prefixItems": [{"type": "integer"}] * m, "minItems": low,
              "items": {"type": "string"} if tail else False}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"t": schema}, "required": ["t"]}}}]
    try:
        lark = constrain.grammar("llguidance", tools=tools)
    except SchemaError:
        assert low > m and not tail  # more items than the schema allows
        return
    for k in sorted({0, 1, 2, low - 1, low, low + 1, m - 1, m, m + 1, m + 2} - {-1}):
        items = [str(i) for i in range(min(k, m))] + [D + "s" + D] * max(0, k - m)
        valid = k >= low and (k <= m or tail)
        assert accepts(lark, "<|tool_call>call:f{t:[" + ",".join(items) + "]}<tool_call|>") == valid, (k, valid)
    assert not accepts(lark, "<|tool_call>call:f{t:[" + D + "s" + D + "]}<tool_call|>")  # a string where an integer is
