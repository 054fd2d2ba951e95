"""Start-up benchmark: what a new process pays before its first parse. Prints figures; asserts nothing.

Usage: python bench/import_bench.py [--quick]

Each figure is the best of N fresh interpreters (`-I`-like: no user site, no bytecode writes of
ours): `import gemma4_lark` and `import gemma4_incremental` (time, and how many modules they load
beyond a bare interpreter's), and the first parse in a new process, where the block parser and the
document parser are made: from the tables the package carries (what ships), built from the grammar
(what happens when the tables do not match the installed Lark), and, for comparison, from Lark's
own pickle cache in a private folder (the design that was dropped: see docs/security.md). The
first parse of each kind also compiles the lexer's regular expressions, which no cache keeps.
On a loaded machine every figure grows; compare the rows of one run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 9

_CALL = "'<|tool_call>call:f{a:1}<tool_call|>'"
_OUTPUT = "'hi<|tool_call>call:f{a:1}<tool_call|>'"

# Each snippet prints seconds (and, for imports, the number of modules loaded).
_IMPORT = "import sys, time; n = len(sys.modules); t = time.perf_counter(); import {module}; " \
          "print(time.perf_counter() - t, len(sys.modules) - n, len(sys.modules))"
_FIRST_PARSE = ("import time; t = time.perf_counter(); import gemma4_lark as g; from gemma4_lark import grammar; "
                "{setup}; u = time.perf_counter(); g.parse_call(" + _CALL + "); v = time.perf_counter(); "
                "g.parse_output_document(" + _OUTPUT + "); w = time.perf_counter(); "
                "print(w - t, v - u, w - v)")
_STORED = "assert grammar.stored_tables() is not None"
_BUILT = "grammar.stored_tables = lambda: None"
# Lark's pickle cache, at a path of our choosing in a private folder (never the shared temp folder).
_PICKLE = ("import lark, os; "
           "grammar.build = lambda starts, **k: lark.Lark(grammar.grammar_text(), start=list(starts), "
           "cache=os.path.join({folder!r}, str(len(starts))), **grammar._OPTIONS)")


def _best(code: str) -> list[float]:
    runs = []
    for _ in range(REPEAT):
        out = subprocess.run([sys.executable, "-s", "-B", "-c", code], capture_output=True, text=True, check=True)
        runs.append([float(x) for x in out.stdout.split()])
    return min(runs)


def main() -> None:
    print(f"{'new process':52} {'best of ' + str(REPEAT):>12}")
    for module in ("gemma4_lark", "gemma4_incremental", "lark"):
        seconds, loaded, total = _best(_IMPORT.format(module=module))
        print(f"{'import ' + module:52} {seconds * 1e3:9.1f} ms   {int(loaded)} modules loaded ({int(total)} in sys.modules)")
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o700)
        pickle_setup = _PICKLE.format(folder=folder)
        subprocess.run([sys.executable, "-s", "-B", "-c", _FIRST_PARSE.replace("{setup}", pickle_setup)], check=True,
                       capture_output=True)  # fill the cache
        cases = [("stored tables (shipped)", _STORED), ("built from the grammar", _BUILT),
                 ("Lark pickle cache, warm (dropped)", pickle_setup)]
        for label, setup in cases:
            total, block, document = _best(_FIRST_PARSE.replace("{setup}", setup))
            print(f"{'first parse, ' + label:52} {total * 1e3:9.1f} ms   "
                  f"(import included; first parse_call {block * 1e3:.1f} ms, "
                  f"first parse_output_document {document * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
