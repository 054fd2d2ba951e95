"""Tool schemas are hostile input: what one shape of schema costs to export as its size doubles.
Prints, per shape and size, the schema's JSON size, the CPU time of the rules (`tool_call_rules`)
and of printing them for llguidance, the number of rules and the printed grammar's size, and the
ratio of each to the previous size's (2.0 is linear). Asserts nothing; a shape stops once one size
takes longer than --cap seconds.

    python bench/schema_shapes_bench.py [--cap SECONDS] [--shape NAME]

CPU time of this process (time.process_time), best of --repeat: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import time

from gemma4_lark.constrain.dialects import to_llguidance
from gemma4_lark.constrain.schema import tool_call_rules
from gemma4_lark.tools import read_tool_choice, read_tools


def _tool(parameters: dict, name: str = "t") -> list:
    return [{"type": "function", "function": {"name": name, "parameters": parameters}}]


def anyof_oneof(n: int) -> list:
    """`anyOf` with a sibling `oneOf`, nested n levels through the `oneOf` (issue 17: 2^n before)."""
    schema: dict = {"type": "string"}
    for i in range(n):
        schema = {"anyOf": [{"type": "integer"}, {"type": "string"}], "oneOf": [schema]}
    return _tool({"type": "object", "properties": {"a": schema}})


def at_least_one(n: int) -> list:
    """n optional properties, at least one of which is required (`anyOf` of `required` lists)."""
    keys = [f"p{i}" for i in range(n)]
    return _tool({"type": "object", "properties": {k: {"type": "string"} for k in keys},
                  "anyOf": [{"required": [k]} for k in keys]})


def wide_object(n: int) -> list:
    return _tool({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
                  "required": [f"p{i}" for i in range(0, n, 2)]})


def open_object(n: int) -> list:
    """n optional properties and any other key (`additionalProperties: true`): after each member
    every later key may come, beside the lexeme of the undeclared keys, for llguidance's greedy check."""
    return _tool({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(n)},
                  "additionalProperties": True})


def open_object_pieces(n: int) -> list:
    """`open_object` with keys of several lexer pieces (`p-0`): each key is a literal the greedy
    check must weigh against the keys it starts with (`p-1` and `p-10`): n^3 before (512 keys, 142 s)."""
    return _tool({"type": "object", "properties": {f"p-{i}": {"type": "integer"} for i in range(n)},
                  "additionalProperties": True})


def deep_object(n: int) -> list:
    schema: dict = {"type": "string"}
    for i in range(n):
        schema = {"type": "object", "properties": {"x": schema, "y": {"type": "number"}}, "required": ["x"]}
    return _tool({"type": "object", "properties": {"a": schema}})


def long_enum(n: int) -> list:
    return _tool({"type": "object", "properties": {"e": {"type": "string", "enum": [f"value{i}" for i in range(n)]}}})


def tagged_union(n: int) -> list:
    """A discriminated union of n object options beside a shared `type` and `required`."""
    return _tool({"type": "object", "properties": {"shape": {
        "type": "object", "required": ["kind"],
        "anyOf": [{"properties": {"kind": {"const": f"k{i}"}, f"v{i}": {"type": "number"}}} for i in range(n)]}}})


def many_refs(n: int) -> list:
    """n properties, each a `$ref` with a sibling (an intersection) to a definition of its own."""
    defs = {f"d{i}": {"type": "object", "properties": {"v": {"type": "integer"}, "w": {"type": "string"}}} for i in range(n)}
    return _tool({"type": "object", "properties": {f"p{i}": {"$ref": f"#/$defs/d{i}", "required": ["v"]} for i in range(n)},
                  "$defs": defs})


def nested_anyof(n: int) -> list:
    """anyOf inside anyOf with siblings at every level (a nullable, a description, a type)."""
    schema: dict = {"type": "string"}
    for i in range(n):
        schema = {"description": "level", "nullable": True, "anyOf": [schema, {"type": "integer", "minimum": i}]}
    return _tool({"type": "object", "properties": {"a": schema}})


def many_tools(n: int) -> list:
    out = []
    for i in range(n):
        out += _tool({"type": "object", "properties": {
            "query": {"type": "string"}, "mode": {"type": "string", "enum": ["fast", "exact"]},
            "limit": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
            "filter": {"type": "object", "properties": {"field": {"type": "string"},
                                                        "value": {"type": ["string", "number", "null"]}}}},
            "required": ["query"]}, name=f"tool_{i}")
    return out


SHAPES = {
    "anyof_oneof": (anyof_oneof, (4, 8, 12, 16, 20, 30)),
    "at_least_one": (at_least_one, (16, 32, 64, 128, 256, 512)),
    "wide_object": (wide_object, (32, 64, 128, 256, 512)),
    "open_object": (open_object, (64, 128, 256, 512, 1024, 2048)),
    "open_object_pieces": (open_object_pieces, (64, 128, 256, 512, 1024, 2048)),
    "deep_object": (deep_object, (4, 8, 16, 32, 60)),
    "long_enum": (long_enum, (64, 128, 256, 512, 1024)),
    "tagged_union": (tagged_union, (8, 16, 32, 64, 128)),
    "many_refs": (many_refs, (8, 16, 32, 64, 128)),
    "nested_anyof": (nested_anyof, (4, 8, 16, 30)),
    "many_tools": (many_tools, (10, 20, 40, 80, 160)),
}


def _best(fn, repeat: int):
    best, result = None, None
    for _ in range(repeat):
        start = time.process_time()
        result = fn()
        spent = time.process_time() - start
        best = spent if best is None else min(best, spent)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cap", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shape", choices=sorted(SHAPES))
    args = parser.parse_args(argv)
    print(f"{'shape':>13} {'n':>5} {'schema kB':>9} {'rules ms':>9} {'print ms':>9} {'rules':>6} {'grammar kB':>10}"
          f"   ratios: schema time rules grammar")
    for name, (make, sizes) in SHAPES.items():
        if args.shape and name != args.shape:
            continue
        previous = None
        for n in sizes:
            raw = make(n)
            tools = read_tools(raw)
            choice = read_tool_choice("auto", tools)
            build_s, grammar = _best(lambda: tool_call_rules(tools, choice, balanced=True), args.repeat)  # as grammar() builds it for llguidance
            print_s, text = _best(lambda: to_llguidance(grammar), args.repeat)
            size = len(json.dumps(raw))
            row = (size, build_s + print_s, len(grammar.rules), len(text))
            ratios = "" if previous is None else "   " + " ".join(f"{a / b:5.1f}" for a, b in zip(row, previous))
            print(f"{name:>13} {n:>5} {size / 1000:>9.1f} {build_s * 1e3:>9.1f} {print_s * 1e3:>9.1f}"
                  f" {len(grammar.rules):>6} {len(text) / 1000:>10.1f}{ratios}", flush=True)
            previous = row
            if build_s + print_s > args.cap:
                print(f"{name:>13} stopped: over {args.cap:.0f} s")
                break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
