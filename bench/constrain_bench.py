"""What constraining calls to the declared tools costs: building the grammar for 1, 10 and 100
tools (our rules and printing, then llguidance's compile of it), and llguidance's mask per token
while a call is written.

llguidance runs over the tests' byte-level vocabulary (one token per byte, one per Gemma marker,
and an end of sequence: tests/constrain_helpers.py). A real tokenizer's 262k tokens make the
mask cost more per token; the grammar is the same.

    python bench/constrain_bench.py [--repeat N]

Times are the CPU time of this process (`time.process_time`), medians: on a shared machine wall
time mostly measures the other processes (bench/schema_shapes_bench.py has the schema shapes).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))

import llguidance as llg  # noqa: E402
from constrain_llg import TOKENIZER, encode  # noqa: E402

from gemma4_lark import constrain  # noqa: E402
from gemma4_lark.constrain.dialects import to_llguidance  # noqa: E402
from gemma4_lark.constrain.schema import tool_call_rules  # noqa: E402
from gemma4_lark.render.official import render_chat  # noqa: E402
from gemma4_lark.tools import read_tool_choice, read_tools  # noqa: E402


def tool(i: int) -> dict:
    """A tool of the usual size: strings, an enum, numbers, an array and a nested object."""
    return {"type": "function", "function": {"name": f"tool_{i}", "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "mode": {"type": "string", "enum": ["fast", "exact", "fuzzy"]},
            "limit": {"type": "integer"},
            "threshold": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filter": {"type": "object", "properties": {"field": {"type": "string"}, "value": {"type": ["string", "number", "null"]}},
                       "required": ["field"]},
            "verbose": {"type": "boolean"},
        },
        "required": ["query"],
    }}}


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return statistics.median(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args(argv).repeat
    call = render_chat([{"role": "assistant", "tool_calls": [{"function": {"name": "tool_0", "arguments": {
        "query": "weather in Paris, FR", "mode": "exact", "limit": 10, "threshold": 0.75,
        "tags": ["a", "b"], "filter": {"field": "country", "value": None}}}}]}])
    call = call[call.index("<|tool_call>"):call.index("<tool_call|>") + len("<tool_call|>")]
    ids = encode(call)
    print(f"median of {repeat}; llguidance {llg.__version__} over a {TOKENIZER.vocab_size}-token byte vocabulary")
    print(f"{'tools':>5} {'rules':>6} {'text kB':>8} {'our rules ms':>13} {'print ms':>9} {'llg compile ms':>15} {'mask us/token':>14}")
    for n in (1, 10, 100):
        tools = read_tools([tool(i) for i in range(n)])
        choice = read_tool_choice("auto", tools)
        build_s, grammar = timed(lambda: tool_call_rules(tools, choice, balanced=True), repeat)  # as grammar() builds it for llguidance
        print_s, text = timed(lambda: to_llguidance(grammar), repeat)
        compile_s, matcher = timed(lambda: llg.LLMatcher(TOKENIZER, text, log_level=0), repeat)
        assert not matcher.is_error(), matcher.get_error()
        masks = []
        for _ in range(repeat):
            m = matcher.deep_copy()
            for token in ids:
                start = time.process_time()
                m.compute_bitmask()
                masks.append(time.process_time() - start)
                assert m.consume_token(token), m.get_error()
            assert m.is_accepting()
        print(f"{n:>5} {len(grammar.rules):>6} {len(text) / 1000:>8.1f} {build_s * 1e3:>13.2f} {print_s * 1e3:>9.2f}"
              f" {compile_s * 1e3:>15.2f} {statistics.median(masks) * 1e6:>14.1f}")
    # the whole turn with the tools (what a server compiles per request), for scale
    start = time.process_time()
    text = constrain.grammar("llguidance", scope="output", tools=[tool(i) for i in range(100)])
    made = time.process_time() - start
    start = time.process_time()
    llg.LLMatcher(TOKENIZER, text, log_level=0)
    print(f"scope='output', 100 tools: {len(text) / 1000:.1f} kB made in {made * 1e3:.1f} ms,"
          f" compiled by llguidance in {(time.process_time() - start) * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
