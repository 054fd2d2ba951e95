"""Streaming benchmark (issue: incremental layer). Prints figures; asserts nothing.

Usage: python bench/stream_bench.py [--quick]

1. A deterministic ~1 MB synthetic output (prose, ~500 thoughts, ~900 calls) fed whole and in
   chunks of 64, 4 and 1 characters: MB/s.
2. Linearity: one call whose string argument is 5, 10, 20, 40 KB, fed in 4-character chunks: µs per
   chunk, and the 40 KB / 5 KB ratio.
3. Prose with no markers (and no `<` at all): fed whole (MB/s), and in 4-character chunks (µs
   per chunk).
4. A typical agent output (prose, a thought, two calls) in 4-character chunks: MB/s.
Every call block is validated against the grammar as it closes.
"""

from __future__ import annotations

import random
import sys
import time

from gemma4_incremental import StreamParser, ToolCallEnd

QUICK = "--quick" in sys.argv
D = '<|"|>'
WORDS = ("the model reads a file and then writes a short answer with some numbers 42 and "
         "symbols like a < b, {braces} and [brackets] that are not blocks").split()


def prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def synthetic(size: int = 1_000_000, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts, total, calls, thoughts = [], 0, 0, 0
    while total < size:
        r = rng.random()
        if r < 0.25:
            piece = "<|channel>thought\n" + prose(rng, 40) + "<channel|>"
            thoughts += 1
        elif r < 0.70:
            piece = ("<|tool_call>call:write_file{path:" + D + "src/" + str(calls) + ".py" + D + ",content:" + D
                     + prose(rng, 20) + " }<tool_call|> " + D + ",mode:overwrite,n:" + str(calls)
                     + ",opts:{dry:false,tags:[a,b]}}<tool_call|>")
            calls += 1
        else:
            piece = prose(rng, 200) + "\n"
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


def feed_all(text: str, size: int) -> float:
    chunks = [text[i:i + size] for i in range(0, len(text), size)] if size else [text]
    parser = StreamParser()
    start = time.perf_counter()
    feed = parser.feed
    for chunk in chunks:
        feed(chunk)
    parser.flush()
    return time.perf_counter() - start


def best(fn, repeat=3):
    return min(fn() for _ in range(repeat))


def main() -> None:
    text = synthetic(300_000 if QUICK else 1_000_000)
    events = StreamParser().feed(text)
    n_calls = sum(isinstance(e, ToolCallEnd) for e in events)
    n_thoughts = sum(e.type == "thinking_end" for e in events)
    mb = len(text.encode()) / 1e6
    print(f"1. synthetic output: {mb:.2f} MB, {n_thoughts} thoughts, {n_calls} calls")
    for size in (0, 64, 4, 1):
        seconds = best(lambda: feed_all(text, size), 1 if size == 1 or QUICK else 3)
        label = "whole" if size == 0 else f"{size}-char chunks"
        print(f"   {label:>16}: {mb / seconds:8.1f} MB/s")

    print("2. one call with a long string argument, 4-char chunks")
    per_chunk = {}
    for kb in (5, 10, 20, 40):
        block = "<|tool_call>call:write{content:" + D + ("x<y " * (kb * 256))[: kb * 1024] + D + "}<tool_call|>"
        seconds = best(lambda: feed_all(block, 4), 3 if QUICK else 9)
        per_chunk[kb] = seconds / (len(block) / 4)
        print(f"   {kb:>3} KB: {per_chunk[kb] * 1e6:6.3f} µs per chunk")
    print(f"   ratio 40 KB / 5 KB: {per_chunk[40] / per_chunk[5]:.2f}")

    plain = (prose(random.Random(1), 200_000) + " ").replace("<", "&lt;")[: 1_000_000]
    seconds = best(lambda: feed_all(plain, 0), 5)
    print(f"3. prose, no markers, whole: {len(plain) / 1e6 / seconds:8.1f} MB/s")
    small = plain[:200_000]
    seconds = best(lambda: feed_all(small, 4))
    print(f"   prose, 4-char chunks: {seconds / (len(small) / 4) * 1e6:.3f} µs per chunk")

    rng = random.Random(3)
    agent = (prose(rng, 35) + "<|channel>thought\n" + prose(rng, 90) + "<channel|>"
             + "<|tool_call>call:read_file{path:" + D + "src/app/main.py" + D + ",start_line:10,end_line:80,encoding:" + D + "utf-8" + D + ",follow:true}<tool_call|>"
             + "<|tool_call>call:search{query:" + D + "where is the config loaded, and by whom?" + D + ",limit:20,paths:[" + D + "src" + D + "," + D + "tests" + D + "]}<tool_call|><|tool_response>")
    repeat = 50 if QUICK else 200
    seconds = best(lambda: sum(feed_all(agent, 4) for _ in range(repeat)), 5 if QUICK else 25)
    print(f"4. typical agent output ({len(agent)} B), 4-char chunks: {len(agent) * repeat / 1e6 / seconds:.2f} MB/s")


if __name__ == "__main__":
    main()
