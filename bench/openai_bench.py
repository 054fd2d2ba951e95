"""OpenAI chunk streaming benchmark (issue 10). Prints figures; asserts nothing.

Usage: python bench/openai_bench.py [--quick]

1. A typical agent output (prose, a thought, two calls with code in a string) in 4-character deltas:
   µs per delta through `StreamParser` alone and through `OpenAIStream` with
   `stream_arguments=False` and `True`, and their ratios to the parser alone (target <= 1.5x).
   Also the floor of any stream that sends a chunk per delta: `StreamParser` plus one bare
   `chat.completion.chunk` dict per delta (nothing parsed, nothing checked). With argument
   streaming nearly every delta of a call is a chunk, so streamed mode cannot cost less than that.
2. Linearity of argument streaming: one call whose string argument is 5 and 40 KB (and a call of
   as many short members), in 4-character deltas: µs per delta, and the 40 KB / 5 KB ratio
   (target <= 1.3).
Best of several runs, timed in CPU time of this process (`time.process_time`: the machine is a
shared VM, and wall time counts the other processes' turns), with the garbage collector off while
timing, as `timeit` does (a collection landing in one run or another is most of the noise between
runs). Ratios are taken within one run; chunks are dropped as a server drops them once sent.
"""

from __future__ import annotations

import gc
import sys
import time

from gemma4_incremental import StreamParser
from gemma4_incremental.openai import OpenAIStream

QUICK = "--quick" in sys.argv
REPEAT = 3 if QUICK else 7
D = '<|"|>'


def agent_output(copies: int) -> str:
    code = "def f(x):\n    return {'a': [x, x + 1], \"b\": x < 3}\n" * 20
    one = ("<|channel>thought\nThe user wants the file fixed. I will read it, then write the new version"
           " and run the tests.<channel|>I'll read the file first, then write the fix.\n"
           "<|tool_call>call:read_file{path:" + D + "src/app.py" + D + ",lines:[1,200]}<tool_call|>"
           "<|tool_call>call:write_file{path:" + D + "src/app.py" + D + ",content:" + D + code + D
           + ",mode:overwrite,backup:true,retries:3,timeout:2.5}<tool_call|><|tool_response>")
    return one * copies


def deltas(text: str, size: int = 4) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def run_parser(pieces):
    parser = StreamParser()
    for piece in pieces:
        parser.feed(piece)
    parser.flush()


def run_stream(pieces, stream_arguments):
    stream = OpenAIStream(StreamParser(), stream_arguments=stream_arguments, completion_id="c", created=0)
    for piece in pieces:
        stream.feed(piece)
    stream.flush()


def run_floor(pieces):
    """StreamParser, and a bare tool-call chunk per delta: what any chunk-per-delta stream pays."""
    parser = StreamParser()
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gemma-4"}
    for piece in pieces:
        parser.feed(piece)
        chunk = head.copy()
        chunk["choices"] = [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]},
                             "finish_reason": None, "logprobs": None}]
    parser.flush()


def best_once(fn, *args) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        fn(*args)
        return time.process_time() - start
    finally:
        gc.enable()


def main() -> None:
    pieces = deltas(agent_output(5 if QUICK else 20))
    n = len(pieces)
    parser = whole = streamed = floor = float("inf")
    for _ in range(REPEAT):  # interleaved, so that the machine's noise hits all alike
        parser = min(parser, best_once(run_parser, pieces))
        whole = min(whole, best_once(run_stream, pieces, False))
        streamed = min(streamed, best_once(run_stream, pieces, True))
        floor = min(floor, best_once(run_floor, pieces))
    print(f"1. typical agent output, {sum(map(len, pieces)) / 1000:.0f} KB in {n} deltas of 4 characters")
    print(f"   StreamParser alone:                 {parser / n * 1e6:6.2f} µs/delta")
    print(f"   OpenAIStream(stream_arguments=False): {whole / n * 1e6:6.2f} µs/delta  ratio {whole / parser:.2f}x")
    print(f"   OpenAIStream(stream_arguments=True):  {streamed / n * 1e6:6.2f} µs/delta  ratio {streamed / parser:.2f}x"
          "  (target <= 1.5x)")
    print(f"   floor: StreamParser + a bare chunk per delta: {floor / n * 1e6:6.2f} µs/delta  ratio {floor / parser:.2f}x")
    print("2. one call in 4-character deltas, OpenAIStream(stream_arguments=True): µs per delta")
    shapes = {
        "string argument": lambda kb: "<|tool_call>call:write{content:" + D + ("x = [1, 2] # ok\n" * (kb * 64)) + D
        + "}<tool_call|>",
        "many members": lambda kb: "<|tool_call>call:write{" + ",".join(
            f"k{i}:[{i},2.5,true,{D}s{D}]" for i in range(kb * 40)) + "}<tool_call|>",
    }
    for label, make in shapes.items():
        calls = {kb: deltas(make(kb)) for kb in (5, 40)}
        per_delta = {kb: float("inf") for kb in calls}
        alone = {kb: float("inf") for kb in calls}
        for _ in range(REPEAT):  # interleaved, so that the machine's noise hits both sizes alike
            for kb, call in calls.items():
                per_delta[kb] = min(per_delta[kb], best_once(run_stream, call, True) / len(call) * 1e6)
                alone[kb] = min(alone[kb], best_once(run_parser, call) / len(call) * 1e6)
        print(f"   {label:16} 5 KB: {per_delta[5]:6.2f}  40 KB: {per_delta[40]:6.2f}  ratio 40/5:"
              f" {per_delta[40] / per_delta[5]:.2f} (target <= 1.3)   [StreamParser alone: {alone[5]:.2f},"
              f" {alone[40]:.2f}, ratio {alone[40] / alone[5]:.2f}]")


if __name__ == "__main__":
    main()
