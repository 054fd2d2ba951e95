"""Decoding against the declared tools: what typing and validation cost per call. Prints figures;
asserts nothing.

Usage: python bench/schema_bench.py [--quick]

Figures (best of several runs, microseconds):
* a typical 5-argument call through `parse_output`, without tools and with them (the difference is
  the cost of the lossless decode, typing and validation), in both modes;
* the check alone (typing + validation of the decoded call), for a call that is valid and for one
  with a coercion and two violations;
* `compile_tools` for 1, 10 and 100 tools: cold (compiling every validator) and warm (the cache
  hit a parser per request pays: one JSON dump of the tools), and a call's cost with that list;
* the validator backends on the same call: jsonschema-rs (used) and jsonschema (when installed).
"""

from __future__ import annotations

import sys
import timeit

from gemma4_incremental import parse_output
from gemma4_lark.diagnostics import LineIndex
from gemma4_lark.parser import parse_lossless_call
from gemma4_lark.schema import registry

QUICK = "--quick" in sys.argv


def _best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=3 if QUICK else 7)) / number


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": "Weather for a place.", "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}, "detailed": {"type": "boolean"},
            "zip": {"type": "string"},
        },
        "required": ["location"], "additionalProperties": False}}}


D = '<|"|>'
VALID = f"<|tool_call>call:tool_0{{location:{D}San Francisco, CA{D},unit:{D}celsius{D},days:3,detailed:true,zip:{D}94103{D}}}<tool_call|>"
COERCED = "<|tool_call>call:tool_0{location:Paris,unit:kelvin,days:0,detailed:True,zip:02134}<tool_call|>"


def main() -> None:
    number = 300 if QUICK else 2000
    one = [_tool("tool_0")]
    print("per call (µs)                         no tools   with tools   (difference)")
    for label, text, strict in [("valid 5-argument call", VALID, False), ("valid, strict", VALID, True),
                                ("coerced + 2 violations", COERCED, False)]:
        plain = _best(lambda: parse_output(text, strict=strict), number) * 1e6
        typed = _best(lambda: parse_output(text, tools=one, strict=strict), number) * 1e6
        print(f"  {label:34s} {plain:8.1f}   {typed:10.1f}   (+{typed - plain:.1f})")

    schema = registry.compile_tools(one).get("tool_0")
    for label, text in [("check alone, valid", VALID), ("check alone, coerced + 2 violations", COERCED)]:
        lines = LineIndex(text)
        seconds = _best(lambda: schema.check(parse_lossless_call(text).arguments, lines), number)
        decode = _best(lambda: parse_lossless_call(text), number)
        print(f"  {label:34s} {(seconds - decode) * 1e6:8.1f}   (lossless decode {decode * 1e6:.1f})")

    print("\ncompile_tools (ms cold, µs warm) and a valid call with that list (µs)")
    for count in (1, 10, 100):
        tools = [_tool(f"tool_{i}") for i in range(count)]

        def cold():
            registry._compile.cache_clear()
            registry.compile_tools(tools)

        cold_s = _best(cold, 3 if count == 100 else 10)
        registry.compile_tools(tools)
        warm_s = _best(lambda: registry.compile_tools(tools), number // 10 or 1)
        per_call = _best(lambda: parse_output(VALID, tools=tools), number // 10 or 1)
        print(f"  {count:3d} tools: cold {cold_s * 1e3:7.2f} ms   warm {warm_s * 1e6:8.1f} µs   call (parser"
              f" included) {per_call * 1e6:8.1f} µs")

    print("\nvalidator backends on the decoded 5-argument call (µs)")
    parameters = one[0]["function"]["parameters"]
    arguments = {"location": "San Francisco, CA", "unit": "celsius", "days": 3, "detailed": True, "zip": "94103"}
    import jsonschema_rs
    rs = jsonschema_rs.validator_for(parameters)
    print(f"  jsonschema-rs is_valid   {_best(lambda: rs.is_valid(arguments), number) * 1e6:8.2f}")
    bad = {"location": 1, "unit": "kelvin", "days": 0}
    print(f"  jsonschema-rs errors     {_best(lambda: list(rs.iter_errors(bad)), number) * 1e6:8.2f}")
    try:
        import jsonschema
    except ImportError:
        print("  jsonschema: not installed")
    else:
        py = jsonschema.validators.validator_for(parameters)(parameters)
        print(f"  jsonschema is_valid      {_best(lambda: py.is_valid(arguments), number // 10) * 1e6:8.2f}")
        print(f"  jsonschema errors        {_best(lambda: list(py.iter_errors(bad)), number // 10) * 1e6:8.2f}")


if __name__ == "__main__":
    main()
