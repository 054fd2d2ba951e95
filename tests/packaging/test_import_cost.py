"""What the serving path loads: `import gemma4_incremental` and the OpenAI layer, and the parse of
well-formed output, need no Lark (the fast path takes such blocks, and the terminals' patterns come
from terminals.json); the first block the fast path leaves to the LALR parser loads it, and its
error is the same as ever."""

import subprocess
import sys

from conftest import needs_accelerators

_SERVING = r"""
import sys
import gemma4_incremental
from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.openai import OpenAIStream
assert "lark" not in sys.modules, "imported"
text = 'It is <|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3,units:[c,f]}<tool_call|>'
out = parse_output(text)
assert out.calls[0].arguments == {"city": "Paris", "days": 3, "units": ["c", "f"]}, out
parser = StreamParser()
events = [e for i in range(0, len(text), 4) for e in parser.feed(text[i:i + 4])] + parser.flush()
assert [e.type for e in events if e.type.startswith("tool")][-1] == "tool_call_end", events
assert "lark" not in sys.modules, "parsed"
import gemma4_lark
try:
    gemma4_lark.parse_call('<|tool_call>call:f{a:1,,}<tool_call|>')
except gemma4_lark.GemmaSyntaxError as exc:
    print(exc.pos, "lark" in sys.modules)
"""


@needs_accelerators("Lark's parser reads every block, so the first one loads it")
def test_the_serving_path_loads_lark_only_for_a_block_the_fast_path_leaves():
    result = subprocess.run([sys.executable, "-c", _SERVING], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    pos, loaded = result.stdout.split()
    assert loaded == "True"
    import gemma4_lark
    try:
        gemma4_lark.parse_call('<|tool_call>call:f{a:1,,}<tool_call|>')
    except gemma4_lark.GemmaSyntaxError as exc:
        assert int(pos) == exc.pos


_NO_HYPOTHESIS = r"""
import sys
import gemma4_lark, gemma4_incremental
import gemma4_lark.fuzz, gemma4_incremental.openai, gemma4_incremental.integrations.base
import runpy
sys.argv = ["gemma4-lark", "--help"]
try:
    runpy.run_module("gemma4_lark", run_name="__main__")
except SystemExit:
    pass
print(sorted(name for name in sys.modules if name.split(".")[0] == "hypothesis"))
"""


def test_the_library_and_the_cli_load_no_hypothesis():
    # hypothesis is a test dependency: only gemma4_lark.strategies imports it, and only the fuzz
    # campaign (when it runs) and tests import that
    result = subprocess.run([sys.executable, "-c", _NO_HYPOTHESIS], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout[-2000:]
