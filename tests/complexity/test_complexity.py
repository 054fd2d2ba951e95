"""Time grows linearly with the input, on the shapes an attacker can grow.

The shapes and entry points are those of `bench/adversarial_bench.py` (the benchmark prints the
figures at sizes up to 4 MB; this runs a few shapes small). Each guard times one entry point on one
shape at n and 16n within one run (tests/timing.py: linear reads 16, quadratic 256, the bound is
48), and each is shown able to fail: the same work plus a quadratic term reads over the bound.
Integers are decoded exactly in O(n^1.6) up to a bound; past the bound, the long-digits shape only
checks that the error costs linear time. No absolute time is asserted. To guard another entry
point, add it to `ENTRY_POINTS` with the shapes it takes.
"""

import importlib.util
import sys

import pytest

from conftest import REPO
from timing import Guard, guard_tests

_spec = importlib.util.spec_from_file_location("adversarial_bench", REPO / "bench" / "adversarial_bench.py")
bench = sys.modules["adversarial_bench"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

SMALL = 6_000  # characters at least; doubled until a run is long enough to time, then grown 16x

# entry point (a name in bench.ENTRIES) -> the shapes (names in bench.SHAPES) it is checked on
ENTRY_POINTS = {
    "parse": [
        "list items", "object members", "nested objects", "calls in an output", "tiny calls", "turns",
        "turn parts", "<-dense string", "<-dense text", "bare-word run", "<-dense bare word",
        "long digits", "unclosed string",
    ],
    "validate": [
        "list items", "calls in an output", "turn parts", "many broken blocks", "mixed broken output",
        "delimiter runs", "partial markers", "unclosed string", "missing commas",
    ],
}


def _parse_guards():
    return [Guard(f"{shape} through {entry}", bench.ENTRIES[entry], bench.SHAPES[shape], SMALL)
            for entry, shapes in ENTRY_POINTS.items() for shape in shapes]


test_time_grows_linearly = guard_tests(_parse_guards())[0]


def test_the_shape_table_covers_every_kind_of_repetition():
    kinds = {bench.SHAPES[s](SMALL).kind for s in bench.SHAPES}
    assert kinds == {"value", "call", "output", "transcript"} and len(bench.SHAPES) >= 20


# --- renderers: time grows linearly with the number of messages, and of calls and their results ---
def _official_turns(n):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": "x"} for i in range(n)]


def _official_calls(n):
    return ([{"role": "user", "content": "q"},
             {"role": "assistant", "tool_calls": [{"id": f"c{i}", "function": {"name": "f", "arguments": {"i": i}}}
                                                  for i in range(n)]}]
            + [{"role": "tool", "tool_call_id": f"c{i}", "content": "r"} for i in range(n)])


def _omp_turns(n):
    return [{"role": "user", "content": "x"} if i % 2 == 0 else
            {"role": "assistant", "content": [{"type": "text", "text": "y"}]} for i in range(n)]


def _omp_calls(n):
    return ([{"role": "assistant", "content": [{"type": "toolCall", "id": f"c{i}", "name": "f", "arguments": {"i": i}}
                                               for i in range(n)]}]
            + [{"role": "toolResult", "toolCallId": f"c{i}", "toolName": "f", "content": [{"type": "text", "text": "r"}]}
               for i in range(n)])


def _official_string_calls(n):
    # OpenAI's shape: arguments as JSON strings, each decoded, and results matched by id
    messages = _official_calls(n)
    for call in messages[1]["tool_calls"]:
        call["function"]["arguments"] = '{"i": %d, "s": "v\\u00e9"}' % call["function"]["arguments"]["i"]
    return messages


def _string_arguments(body):
    return [{"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": body}}]}]


def _huge_argument_string(n):
    return _string_arguments('{"text": "' + 'a\\"\\u003e\\n' * (n // 4) + '"}')



def _render_entries():
    from gemma4_lark.render import omp
    from gemma4_lark.render.official import render_chat

    # the smallest size for each: copying the rest of a list for every message costs little per
    # item, so the quadratic term only shows from some thousands of messages on
    return {"render_chat turns": (render_chat, _official_turns, 2000),
            "render_chat calls+results": (render_chat, _official_calls, 250),
            "render_chat string arguments, calls+results": (render_chat, _official_string_calls, 250),
            "render_chat one huge argument string": (render_chat, _huge_argument_string, 50_000),
            "omp transcript turns": (omp.render_transcript, _omp_turns, 2000),
            "omp transcript calls+results": (omp.render_transcript, _omp_calls, 250)}


def _render_guards():
    return [Guard(name, render, shape, size) for name, (render, shape, size) in _render_entries().items()]


test_render_time_grows_linearly = guard_tests(_render_guards())[0]  # messages, or calls and as many results


# --- decoding against the declared tools: typing and validation are linear in the arguments -----
def _typed_shapes():
    from gemma4_incremental import parse_output

    import gemma4_lark as g
    from gemma4_lark.schema.registry import compile_tools

    def members(n):  # n string members, each written as a bare integer: n coercions
        return {"type": "object", "properties": {f"k{i}": {"type": "string"} for i in range(n)}}, \
            "{" + ",".join(f"k{i}:0{i}" for i in range(n)) + "}"

    def items(n):  # one array of n string items written bare, and n objects under a union
        schema = {"type": "object", "properties": {
            "ids": {"type": "array", "items": {"type": "string"}},
            "objs": {"type": "array", "items": {"anyOf": [{"type": "object", "properties": {"a": {"type": "integer"}}},
                                                          {"type": "object", "properties": {"a": {"type": "string"}}}]}}}}
        return schema, "{ids:[" + ",".join(str(i) for i in range(n)) + "],objs:[" + ",".join("{a:x}" for _ in range(n)) + "]}"

    # Each case's tools are compiled once (compile_tools caches no list over 256 KiB of JSON): the
    # timing is the typing and validation, which is what this guards.
    def compiled(case):
        schema, body = case
        return compile_tools([{"name": "t", "parameters": schema}]), body

    def run_parse(case):
        tools, body = case
        parse_output(f"<|tool_call>call:t{body}<tool_call|>", tools=tools)

    def run_lenient(case):  # not closed: the lenient decoder's lossless path
        tools, body = case
        parse_output(f"<|tool_call>call:t{body}<turn|>", tools=tools)

    def run_validate(case):
        tools, body = case
        g.validate(f"<|tool_call>call:t{body}<tool_call|>", tools=tools)

    return ({"members": lambda n: compiled(members(n)), "items": lambda n: compiled(items(n))},
            {"parse_output": run_parse, "lenient": run_lenient, "validate": run_validate})


def _typed_guards():
    shapes, entries = _typed_shapes()
    # long enough that a quadratic term shows; each size's tools are compiled by `make`, untimed
    return [Guard(f"{entry} on {shape}", run, make, 500, 16_000)
            for shape, make in shapes.items() for entry, run in entries.items()]


test_typing_and_validation_grow_linearly = guard_tests(_typed_guards())[0]


test_each_guard_can_fail = guard_tests([], twins=_parse_guards() + _render_guards() + _typed_guards())[1]
