"""Strict-parser benchmark (issue: grammar and strict parser). Prints figures; asserts nothing.

Usage: python bench/parse_bench.py [--quick]

Cases: a 122-byte call; a call with a 10 KB string argument (source code, and `<`-dense text); a
64-deep nested object; parser construction (cold, and from Lark's cache). For comparison, the same
grammar under Lark's Earley parser (what Google's `dialog` library uses for this syntax) is timed
in the same run.
"""

from __future__ import annotations

import subprocess
import sys
import timeit

import gemma4_lark as g
from gemma4_lark import grammar

QUICK = "--quick" in sys.argv


def _best(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=3 if QUICK else 7)) / number


def _call(body: str) -> str:
    return "<|tool_call>call:" + body + "<tool_call|>"


SMALL = _call('get_current_weather{location:<|"|>San Francisco, CA<|"|>,unit:<|"|>celsius<|"|>,days:3}')
SMALL = SMALL[:-len("}<tool_call|>")] + ",x:" + "1" * (122 - len(SMALL) - 3) + "}<tool_call|>"
assert len(SMALL.encode()) == 122, len(SMALL)

_source = open(g.__file__.replace("__init__.py", "errors.py"), encoding="utf-8").read()
CODE_10K = _call("write_file{path:<|\"|>a.py<|\"|>,content:<|\"|>" + (_source * 3)[:10_000] + "<|\"|>}")
DENSE_10K = _call("write_file{content:<|\"|>" + ("x<y>z " * 1700)[:10_000] + "<|\"|>}")
DEEP_64 = _call("f{a:" + "{a:" * 63 + "1" + "}" * 63 + "}")


def main() -> None:
    rows = []
    for label, text, number in [
        ("call, 122 bytes", SMALL, 2000),
        ("call, 10 KB string (source code)", CODE_10K, 1000),
        ("call, 10 KB string (`<` every 6 chars)", DENSE_10K, 300),
        ("call, 64-deep nested object", DEEP_64, 300),
    ]:
        g.parse_call(text)
        rows.append((label, _best(lambda: g.parse_call(text), number // (4 if QUICK else 1))))

    earley = grammar.build(grammar.BLOCK_STARTS[:1], cache=False).__class__(
        grammar.grammar_text(), parser="earley", lexer="dynamic", start="call_block")
    earley_small = _best(lambda: earley.parse(SMALL), 50 if QUICK else 200)
    earley_code = _best(lambda: earley.parse(CODE_10K), 3 if QUICK else 10)

    cold = subprocess.run([sys.executable, "-c",
                           "import time; t=time.perf_counter(); from gemma4_lark import grammar; "
                           "grammar.build(grammar.BLOCK_STARTS, cache=False); print(time.perf_counter()-t)"],
                          capture_output=True, text=True, check=True)
    cached = subprocess.run([sys.executable, "-c",
                             "import time; from gemma4_lark import parser; t=time.perf_counter(); "
                             "parser.block_parser(); u=time.perf_counter(); parser.document_parser(); "
                             "print(u-t, time.perf_counter()-u)"],
                            capture_output=True, text=True, check=True)
    cached_block, cached_document = map(float, cached.stdout.split())

    print(f"{'case':44} {'time':>12}")
    for label, seconds in rows:
        print(f"{label:44} {seconds * 1e6:9.1f} µs")
    print(f"{'Earley, same grammar, 122-byte call':44} {earley_small * 1e6:9.1f} µs   (LALR {earley_small / rows[0][1]:.1f}x faster)")
    print(f"{'Earley, same grammar, 10 KB code string':44} {earley_code * 1e6:9.1f} µs   (LALR {earley_code / rows[1][1]:.1f}x faster)")
    print(f"{'construction, cold (blocks parser)':44} {float(cold.stdout) * 1e3:9.1f} ms")
    print(f"{'construction, from cache: block parser':44} {cached_block * 1e3:9.1f} ms")
    print(f"{'construction, from cache: document parser':44} {cached_document * 1e3:9.1f} ms")
    print("reference (issue, measured on this machine): dialog's Earley parser 830 µs small, 24 ms for 10 KB")
    print(f"ratio vs that reference: small {830e-6 / rows[0][1]:.1f}x, 10 KB {24e-3 / rows[1][1]:.1f}x")


if __name__ == "__main__":
    main()
