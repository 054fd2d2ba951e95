"""Adversarial benchmark: every input shape at doubling sizes, through every entry point.

Usage: python bench/adversarial_bench.py [--sizes 512K,1M,2M,4M] [--quick] [--shapes a,b] [--entries x,y]
       [--budget SECONDS] [--no-memory]

Each shape is a family of inputs an attacker (or an unlucky model) can grow without limit: more
list items, members, calls, turns, errors, `<` characters, digits. Each is run at doubling sizes
through the strict parser (parse_*), validate, the stream parser (strict and lenient), the
lenient recovery decoder and the command line, and the table shows the time ratio between
consecutive sizes (linear: 2.0; every ratio should stay <= 2.3) and the peak memory at the
largest size as a multiple of the input (tracemalloc in process; the child's peak RSS above an idle child's for the CLI). Times are
CPU seconds (the child's, for the CLI), best of 3 below 256K characters, else of --repeat runs.

A row whose run takes longer than --budget seconds stops growing (marked `>budget`): that is the
sign of a super-linear path. Prints figures; asserts nothing. `tests/complexity/test_complexity.py` runs a
small subset of the same table as a test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass

import gemma4_lark as g

D = '<|"|>'  # the string delimiter


@dataclass
class Case:
    """One input: what it is (`value`, `call`, `output` or `transcript`), its text, and the chunk
    size the stream entry points feed it in."""

    kind: str
    text: str
    chunk: int = 32


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _call(arguments: str) -> str:
    return "<|tool_call>call:f{" + arguments + "}<tool_call|>"


def _value_call(value: str) -> str:
    return _call("v:" + value)


# name -> a function of the size in characters (approximately) -> Case. Add shapes here; every
# entry point runs every shape it applies to.
SHAPES = {
    # repetitions of every kind
    "list items": lambda n: Case("value", "[" + _repeat("1,", n)[:-1] + "]"),
    "object members": lambda n: Case("value", "{" + ",".join(f"k{i}:1" for i in range(max(1, n // 9))) + "}"),
    "nested objects": lambda n: Case("value", "[" + _repeat("{a:{b:{c:[1,{d:2}]}}},", n)[:-1] + "]"),
    "strings in a list": lambda n: Case("value", "[" + _repeat(D + "x" + D + ",", n)[:-1] + "]"),
    "calls in an output": lambda n: Case("output", _repeat(_call("a:1,b:" + D + "x" + D) + "\n", n)),
    "tiny calls": lambda n: Case("output", _repeat("<|tool_call>call:f{}<tool_call|>", n)),
    "turns": lambda n: Case("transcript", "<bos>" + _repeat("<|turn>user\nhi<turn|>\n", n)),
    "turn parts": lambda n: Case("transcript", "<bos><|turn>model\n" + _repeat(
        "text<|tool_call>call:f{a:1}<tool_call|><|tool_response>response:f{v:1}<tool_response|><|image|>", n)
        + "<turn|>\n"),
    "thought": lambda n: Case("output", "<|channel>thought\n" + _repeat("hmm, ", n) + "<channel|>done"),
    # the regex engine's worst cases
    "<-dense string": lambda n: Case("call", _call("a:" + D + _repeat("<a", n) + D)),
    "<-dense text": lambda n: Case("output", _repeat("a<b", n)),
    "bare-word run": lambda n: Case("value", _repeat("a ", n) + "b"),
    "<-dense bare word": lambda n: Case("value", _repeat("a<", n) + "b"),
    "long digits": lambda n: Case("value", _repeat("7", n)),
    "long float": lambda n: Case("value", "0." + _repeat("7", n)),
    "whitespace run": lambda n: Case("call", _call("a:1" + _repeat(" ", n) + ",b:2")),
    # broken input: errors and recoveries that grow with the input
    "unclosed string": lambda n: Case("call", "<|tool_call>call:f{a:" + D + _repeat("x", n)),
    "delimiter runs": lambda n: Case("call", _call("a:" + _repeat(D, n))),
    "open brackets": lambda n: Case("call", _call("a:" + _repeat("[", n))),
    "close brackets": lambda n: Case("call", _call("a:1" + _repeat("]", n))),
    "partial markers": lambda n: Case("output", _repeat("<|tool_ca", n)),
    "many broken blocks": lambda n: Case("output", _repeat(_call("a:1,") + " some text\n", n)),
    "mixed broken output": lambda n: Case("output", _repeat(
        "Let me check.<|channel>thought\nok<channel|>" + _call("city:" + D + "Paris" + D)
        + _call('q:"json",n:1 m:2') + _call("a:[1,2,],b:{c:3,}") + "\n", n)),
    "json-quoted members": lambda n: Case("call", _call(",".join(f'k{i}:"v"' for i in range(max(1, n // 10))))),
    "missing commas": lambda n: Case("call", _call(" ".join(f"k{i}:1" for i in range(max(1, n // 7))))),
    # streaming: one block fed a character at a time
    "1-char chunks": lambda n: Case("call", _call("a:" + D + _repeat("text ", n) + D), chunk=1),
}


def block_text(case: Case) -> str | None:
    """The input as one call block, if it is one."""
    if case.kind == "value":
        return _value_call(case.text)
    return case.text if case.kind == "call" else None


def output_text(case: Case) -> str:
    """The input as a model output (a value is wrapped in a call)."""
    return block_text(case) or case.text


def _parse(case: Case):
    parse = {"value": g.parse_value, "call": g.parse_call, "output": g.parse_output_document,
             "transcript": g.parse_transcript}[case.kind]
    try:
        parse(case.text)
    except g.GemmaSyntaxError:
        pass


def _stream(strict: bool):
    def run(case: Case):
        from gemma4_incremental import StreamParser

        parser = StreamParser(strict=strict)
        text, size = output_text(case), case.chunk
        for i in range(0, len(text), size):
            parser.feed(text[i:i + size])
        parser.flush()
    return run


def _recovery(case: Case):
    from gemma4_lark.recovery import decode_call

    block = block_text(case)
    if block is None:
        return NotImplemented
    decode_call(block)


# Runs a command and prints its CPU seconds and peak RSS. It is itself a small process: a child
# forked straight from this (large) one would report this process's pages as its peak RSS.
_MEASURE = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
usage = os.wait4(child.pid, 0)[2]
print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)
"""


def _measured_child(command: list[str]) -> tuple[float, int]:
    """(CPU seconds, peak RSS in bytes) of a command, run in a child process."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *command], capture_output=True, text=True, check=True)
    cpu, rss = out.stdout.split()
    return float(cpu), int(rss)


def _cli(*arguments: str):
    def run(case: Case, path: str):
        return _measured_child([sys.executable, "-m", "gemma4_lark", *arguments, path])
    run.cli = True
    return run


# name -> function(case) (in process) or function(case, path) with `.cli` set (a child process).
# A function returns NotImplemented for a case it does not apply to.
ENTRIES = {
    "parse": _parse,
    "validate": lambda case: g.validate(output_text(case)),
    "stream strict": _stream(True),
    "stream lenient": _stream(False),
    "recovery": _recovery,
    "cli validate": _cli("validate"),
    "cli parse": _cli("parse", "--format", "summary"),  # keeps what it prints: text, calls, failed blocks
    "cli events": _cli("parse", "--format", "events"),  # streams: memory stays flat
}


NOISE = 0.01  # seconds


def timed(entry, case: Case, path: str | None = None) -> tuple[float, object]:
    """(CPU seconds, result) of one run. CPU time, not wall time: on a shared machine other
    processes' load would otherwise swamp the ratios."""
    if getattr(entry, "cli", False):
        return entry(case, path)  # the child's own CPU time, and its peak RSS
    start = time.process_time()
    result = entry(case)
    return time.process_time() - start, result


def peak_memory(entry, case: Case) -> int:
    """Peak bytes traced while `entry` runs `case`."""
    tracemalloc.start()
    try:
        entry(case)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _size(text: str) -> int:
    units = {"K": 1024, "M": 1024 * 1024}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def _idle_child_rss() -> int:
    return _measured_child([sys.executable, "-c", "import gemma4_lark, gemma4_incremental"])[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="512K,1M,2M,4M", help="comma-separated doubling sizes (K, M suffixes)")
    ap.add_argument("--quick", action="store_true", help="sizes 32K,64K,128K,256K")
    ap.add_argument("--shapes", help="comma-separated shape names (default: all)")
    ap.add_argument("--entries", help="comma-separated entry points (default: all)")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds; a row stops growing past it")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size above 256K (the best counts)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    args = ap.parse_args(argv)
    sizes = [_size(s) for s in ("32K,64K,128K,256K" if args.quick else args.sizes).split(",")]
    shapes = args.shapes.split(",") if args.shapes else list(SHAPES)
    entries = args.entries.split(",") if args.entries else list(ENTRIES)
    idle_rss = _idle_child_rss() if any(getattr(ENTRIES[e], "cli", False) for e in entries) else 0

    print(f"sizes: {', '.join(str(s) for s in sizes)} characters; budget {args.budget:g} s a run")
    print(f"{'shape':22s} {'entry':15s} {'time at largest':>15s}  ratios per doubling       peak/input")
    worst = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "input.txt")
        for shape in shapes:
            for name in entries:
                entry = ENTRIES[name]
                times, case, last = [], None, None
                for size in sizes:
                    case = SHAPES[shape](size)
                    if getattr(entry, "cli", False):
                        with open(path, "w", encoding="utf-8") as f:
                            f.write(output_text(case))
                    runs = 3 if size <= 256 * 1024 else args.repeat
                    best, result = min((timed(entry, case, path) for _ in range(runs)), key=lambda run: run[0])
                    if result is NotImplemented:
                        break
                    times.append(best)
                    last = (case, result)
                    if best > args.budget:
                        break
                if not times:
                    continue
                # A ratio of times under NOISE seconds says more about the clock than the code.
                ratios = [b / max(a, 1e-6) for a, b in zip(times, times[1:])]
                flagged = [r > 2.3 and t >= NOISE for r, t in zip(ratios, times[1:])]
                shown = " ".join(f"{r:5.2f}{'!' if f else ' '}" for r, f in zip(ratios, flagged))
                if len(times) < len(sizes):
                    shown += " >budget"
                case, result = last
                length = len(output_text(case)) if getattr(entry, "cli", False) else len(case.text)
                if args.no_memory:
                    memory = ""
                elif getattr(entry, "cli", False):
                    memory = f"{max(0, result - idle_rss) / length:6.1f}x"
                elif times[-1] <= args.budget:
                    memory = f"{peak_memory(entry, case) / length:6.1f}x"
                else:
                    memory = "   n/a"
                print(f"{shape:22s} {name:15s} {times[-1]:13.3f} s  {shown:26s} {memory}", flush=True)
                if any(flagged) or len(times) < len(sizes):
                    worst.append(f"{shape} / {name}")
    print(f"\nrows with a ratio above 2.3 or over budget: {len(worst)}")
    for row in worst:
        print("  " + row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
