"""Time and peak memory (RSS) of the command line on a synthetic model output.

    python bench/cli_bench.py [MEGABYTES ...]     (default: 4 8)

Each command runs in a new process that reports its own peak RSS; `parse --format events` should
stay flat as the input doubles (it keeps no events), the others grow with what they hold.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

UNIT = ('Let me check the weather for you.\n<|channel>thought\nThe user wants Paris; call the tool.<channel|>'
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3,units:[celsius,null]}<tool_call|>\n')

RUNNER = """
import resource, sys
from gemma4_lark.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("RSS_KB=%d\\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""

COMMANDS = {
    "parse --format events": ["parse", "{file}"],
    "parse --format summary": ["parse", "{file}", "--format", "summary"],
    "parse --format openai": ["parse", "{file}", "--format", "openai"],
    "decode": ["decode", "{file}"],
    "validate": ["validate", "{file}"],
    "validate --jsonl": ["validate", "--jsonl", "{jsonl}"],
}


def measure(argv) -> tuple[float, int]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", RUNNER, *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    rss = int(result.stderr.rsplit("RSS_KB=", 1)[1].split()[0])
    return elapsed, rss


def main() -> None:
    sizes = [float(a) for a in sys.argv[1:]] or [4, 8]
    print(f"{'command':<26}{'input':>9}{'time':>10}{'peak RSS':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for megabytes in sizes:
            count = int(megabytes * 2**20) // len(UNIT)
            file = Path(tmp) / "output.txt"
            file.write_text(UNIT * count)
            jsonl = Path(tmp) / "evals.jsonl"
            record = json.dumps({"output": UNIT * 100}) + "\n"
            jsonl.write_text(record * (count // 100))
            for label, template in COMMANDS.items():
                argv = [a.format(file=file, jsonl=jsonl) for a in template]
                elapsed, rss = measure(argv)
                print(f"{label:<26}{megabytes:>7g}MB{elapsed:>9.1f}s{rss / 1024:>10.0f}MB", flush=True)


if __name__ == "__main__":
    main()
