"""Doubling checks: the same input shape at n and 2n (and 4n), through each entry point, in one run.

Never an absolute time (the machine is shared and noisy): the time at 4n over the time at n, the
best of a few runs each, is 4 for linear code and 16 for quadratic; the check allows 7. Memory
(tracemalloc's peak, the input itself excluded) is checked the same way, and against the target of
issue 9: at most 8 times the largest open block, plus a constant.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from dataclasses import dataclass
from typing import Callable

import gemma4_lark
from gemma4_lark import tokens
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.recovery import decode_call
from gemma4_incremental import StreamParser

_O, _C, _D = tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE, tokens.STRING_DELIMITER

MAX_TIME_RATIO = 7.0    # t(4n) / t(n): linear 4, quadratic 16
MAX_MEMORY_RATIO = 3.0  # peak(2n) / peak(n): linear 2
MEMORY_FACTOR = 8       # peak <= 8 x the block + MEMORY_CONSTANT (issue 9, item 3)
MEMORY_CONSTANT = 1 << 20


def _call(arguments: str) -> str:
    return _O + "call:f{" + arguments + "}" + _C


# Each shape: n -> text, with about n repetitions of its unit. Named as in issue 9.
SHAPES: dict[str, Callable[[int], str]] = {
    "list-items": lambda n: _call("a:[" + ",".join(["1"] * n) + "]"),
    "object-members": lambda n: _call(",".join(f"k{i}:1" for i in range(n))),
    "nested-lists": lambda n: _call("a:" + "[1," * n + "1" + "]" * n),
    "calls-in-output": lambda n: _call("a:1") * n,
    "tiny-calls": lambda n: (_O + "call:f{}" + _C) * n,
    "delimiter-runs": lambda n: _call("a:" + _D * n),
    "lt-dense-string": lambda n: _call("a:" + _D + "<|<x<t" * n + _D),
    "unclosed-string": lambda n: _call("a:" + _D + "x, y: " * n),
    "bracket-runs": lambda n: _call("a:" + "[" * n),
    "closing-runs": lambda n: _call("a:1" + "]" * n),
    "partial-markers": lambda n: "<|tool_ca" * n,
    "broken-blocks": lambda n: _call("a:") * n,
    "json-strings": lambda n: _call(",".join(f'k{i}:"v"' for i in range(n))),
    "trailing-commas": lambda n: _call("a:[1,]," * n + "z:1"),
    "missing-commas": lambda n: _call(" ".join(f"k{i}:1" for i in range(n))),
    "bare-words": lambda n: _call("a:" + "a " * n),
    "turns": lambda n: tokens.BOS + (tokens.TURN_OPEN + "user\nhi" + tokens.TURN_CLOSE + "\n") * n,
}


def _stream(text: str, chunk: int, **options) -> None:
    parser = StreamParser(max_block_chars=1 << 30, **options)
    for i in range(0, len(text), chunk):
        parser.feed(text[i:i + chunk])
    parser.flush()


def _quiet(function):
    def call(text):
        try:
            function(text)
        except (GemmaSyntaxError, ValueError):  # errors must be linear too; which ones: see properties
            pass
    return call


ENTRY_POINTS: dict[str, Callable[[str], None]] = {
    "parse_call": _quiet(gemma4_lark.parse_call),
    "parse_output_document": _quiet(gemma4_lark.parse_output_document),
    "parse_transcript": _quiet(gemma4_lark.parse_transcript),
    "validate": _quiet(gemma4_lark.validate),
    "StreamParser": _quiet(lambda text: _stream(text, 1 << 30)),
    "StreamParser(strict)": _quiet(lambda text: _stream(text, 1 << 30, strict=True)),
    "StreamParser(64-char chunks)": _quiet(lambda text: _stream(text, 64)),
    "decode_call": decode_call,
}


def applies(shape: str, entry_point: str) -> bool:
    """Whether the pair means something (a block decoder is handed one block)."""
    if entry_point in ("parse_call", "decode_call"):
        return shape not in ("calls-in-output", "tiny-calls", "partial-markers", "broken-blocks", "turns")
    if entry_point == "parse_transcript":
        return shape == "turns"
    return shape != "turns" or entry_point == "validate"


def pairs():
    return [(shape, entry) for shape in SHAPES for entry in ENTRY_POINTS if applies(shape, entry)]


@dataclass
class TimeFigures:
    shape: str
    entry_point: str
    n: int
    seconds: list    # best time at n, 2n, 4n

    @property
    def ratio(self) -> float:
        """t(4n) / t(n); 1 when even 4n takes under 20 ms (too fast to tell growth from noise)."""
        if self.seconds[2] < 0.02:
            return 1.0
        return self.seconds[2] / max(self.seconds[0], 1e-9)


def _best(function, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        function(text)
        best = min(best, time.perf_counter() - start)
    return best


def time_doubling(shape: str, entry_point: str, n: int, repeat: int = 3, min_seconds: float = 0.02,
                  max_chars: int = 1 << 20) -> TimeFigures:
    """Times at n, 2n, 4n; n first doubled until one run takes `min_seconds` (shorter times are
    mostly noise) or the text would pass `max_chars` (what stays that fast is not quadratic)."""
    function = ENTRY_POINTS[entry_point]
    make = SHAPES[shape]
    while _best(function, make(n), 1) < min_seconds and len(make(n * 8)) <= max_chars:
        n *= 2
    seconds = [_best(function, make(n * k), repeat) for k in (1, 2, 4)]
    return TimeFigures(shape, entry_point, n, seconds)


def check_time(shape: str, entry_point: str, n: int, repeat: int = 3, min_seconds: float = 0.02,
               max_chars: int = 1 << 20) -> TimeFigures:
    figures = time_doubling(shape, entry_point, n, repeat, min_seconds, max_chars)
    assert figures.ratio <= MAX_TIME_RATIO, (
        f"{entry_point} on {shape}: time x{figures.ratio:.1f} from n={n} to 4n (linear: x4); "
        f"{[round(s, 4) for s in figures.seconds]} s")
    return figures


# --- memory ----------------------------------------------------------------------------------------
MEMORY_SHAPES: dict[str, Callable[[int], str]] = {
    "lt-dense-block": lambda n: _call("a:" + _D + "<" * n + _D),
    "bare-word-block": lambda n: _call("a:" + "a " * (n // 2)),
    "ascii-block": lambda n: _call("a:" + _D + "x" * n + _D),
    "cjk-block": lambda n: _call("a:" + _D + "\u65e5" * n + _D),
    "thought": lambda n: tokens.THOUGHT_OPEN + "x" * n + tokens.CHANNEL_CLOSE,
}


def _peak_streaming(text: str, chunk: int) -> int:
    chunks = [text[i:i + chunk] for i in range(0, len(text), chunk)]
    gc.collect()
    tracemalloc.start()
    try:
        parser = StreamParser(max_block_chars=1 << 30)
        for piece in chunks:
            parser.feed(piece)
        parser.flush()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@dataclass
class MemoryFigures:
    shape: str
    n: int
    chunk: int
    peaks: list      # bytes at n and 2n
    block_bytes: int  # the block at n, in bytes as Python stores it

    @property
    def ratio(self) -> float:
        return self.peaks[1] / max(self.peaks[0], 1)

    @property
    def per_block(self) -> float:
        return self.peaks[0] / max(self.block_bytes, 1)


def memory_doubling(shape: str, n: int, chunk: int = 1) -> MemoryFigures:
    make = MEMORY_SHAPES[shape]
    text = make(n)
    width = 4 if max(text) > "\uffff" else 2 if max(text) > "\xff" else 1
    return MemoryFigures(shape, n, chunk, [_peak_streaming(make(n * k), chunk) for k in (1, 2)], len(text) * width)


def check_memory(shape: str, n: int, chunk: int = 1) -> MemoryFigures:
    figures = memory_doubling(shape, n, chunk)
    assert figures.ratio <= MAX_MEMORY_RATIO, (
        f"StreamParser on {shape} in {chunk}-char chunks: peak memory x{figures.ratio:.1f} from n={n} to 2n")
    assert figures.peaks[0] <= MEMORY_FACTOR * figures.block_bytes + MEMORY_CONSTANT, (
        f"StreamParser on {shape} in {chunk}-char chunks: peak {figures.peaks[0]} bytes for a block of "
        f"{figures.block_bytes} bytes ({figures.per_block:.0f}x; target {MEMORY_FACTOR}x + {MEMORY_CONSTANT})")
    return figures
