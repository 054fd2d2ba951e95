"""The streaming layer and the lenient decoder under attack: time and peak memory per input shape.
Prints figures; asserts nothing.

Usage: python bench/stream_attack_bench.py [SIZE_KIB,SIZE_KIB,...] [SHAPE,...]
(default: 1024,2048,4096 KiB, every shape)

Each shape is one call block (or one thought) of about SIZE characters, streamed through a lenient
StreamParser (max_block_chars raised to 8 MiB so the biggest size still decodes). For each size:
the time (without tracing) and the tracemalloc peak (a second run), as MiB and as a multiple of the
input's character count; then the time ratio per doubling (linear: about 2).
Chunks are made as they are fed, so the peak counts only what the parser keeps.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

from gemma4_incremental import StreamParser

D = '<|"|>'


def _block(body: str) -> str:
    return "<|tool_call>call:f{" + body + "}<tool_call|>"


def _fill(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


# name: (text of about n characters, chunk size or None for whole)
SHAPES = {
    "delimiter-runs": lambda n: (_block("a:" + _fill(D, n)), None),
    "json-strings": lambda n: (_block("a:[" + _fill('"x",', n) + "1]"), None),
    "trailing-commas": lambda n: (_block("a:[" + _fill("1,,", n) + "1]"), None),
    "missing-commas": lambda n: (_block("a:[" + _fill(D + "x" + D + " ", n) + "1]"), None),
    "interior-delimiters": lambda n: (_block("a:" + D + _fill("x" + D + "y", n) + D), None),
    "missing-values": lambda n: (_block(_fill("k,", n) + "z:1"), None),
    "stray-delimiters": lambda n: (_block("a:[" + _fill("b" + D + ",", n) + "1]"), None),
    "single-quoted": lambda n: (_block("a:[" + _fill("'x',", n) + "1]"), None),
    "equals-duplicate-keys": lambda n: (_block(_fill("k=1,", n) + "z:1"), None),
    "paren-shell": lambda n: ("call:f(" + _fill("k=1,", n) + "z=1)", None),
    "bare-words": lambda n: (_block("a:" + _fill("a ", n) + ",b:1,"), None),
    "cut-at-end": lambda n: ("<|tool_call>call:f{a:" + D + _fill("x, y: z ", n), None),
    "cjk-block-1-char-chunks": lambda n: (_block("a:" + D + _fill("字", n) + D), 1),
    "cjk-thought-1-char-chunks": lambda n: ("<|channel>thought\n" + _fill("字", n) + "<channel|>", 1),
    "thought-64k-chunks": lambda n: ("<|channel>thought\n" + _fill("thinking ", n) + "<channel|>", 65536),
    "bare-block-1-char-chunks": lambda n: ("call:f{a:" + D + _fill("x", n) + D + "}", 1),
}


def _chunks(text: str, size):
    if not size:
        yield text
        return
    for i in range(0, len(text), size):
        yield text[i:i + size]


def _stream(text: str, size, trace: bool):
    parser = StreamParser(max_block_chars=8 * 1024 * 1024)
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    for chunk in _chunks(text, size):
        parser.feed(chunk)
    parser.flush()
    elapsed = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] if trace else 0
    if trace:
        tracemalloc.stop()
    return elapsed, peak


def main(argv) -> None:
    sizes = [int(s) * 1024 for s in argv[0].split(",")] if argv else [1024 * 1024, 2048 * 1024, 4096 * 1024]
    names = argv[1].split(",") if len(argv) > 1 else list(SHAPES)
    print(f"{'shape':28s} " + " | ".join(f"{n // 1024:>6} KiB: time    peak (x chars)" for n in sizes) + " | ratios")
    for name in names:
        cells, times = [], []
        for n in sizes:
            text, size = SHAPES[name](n)
            elapsed, _ = _stream(text, size, trace=False)
            _, peak = _stream(text, size, trace=True)
            times.append(elapsed)
            cells.append(f"{elapsed:8.2f}s {peak / 2**20:7.1f} MiB ({peak / len(text):4.1f})")
        ratios = " ".join(f"{b / a:.2f}" for a, b in zip(times, times[1:]) if a > 0)
        print(f"{name:28s} " + " | ".join(cells) + f" | {ratios}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
