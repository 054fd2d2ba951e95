"""Peer comparison (issue 20): gemma4-lark against the Gemma 4 parsers of mlx-lm, SGLang and vLLM.

Usage: make peers                     (downloads the wheels, then runs this)
       python bench/peer_bench.py CACHE [--pairs N] [--quick]

Opt-in, never in CI, like `make integration`. The peers' parsers come from their PyPI wheels,
without torch and without installing them: `make peers` downloads mlx-lm 0.32.2, SGLang 0.5.23
and vLLM 0.33.0 with `--no-deps` into CACHE and `regex` (mlx-lm's one import) into CACHE/site;
mlx-lm's `tool_parsers/gemma4.py` is loaded alone from its wheel, and SGLang's and vLLM's sources
run as `make integration` runs them (integration/harness.py: the wheels' Python sources on
`sys.path`, stubs for the GPU stacks).

Method (what the issue's table was measured with):
* each parser in its own worker process (ours too), so no peer's imports or heap weigh on another;
* every workload is checked first: a peer whose calls (names and arguments, compared as JSON
  values) differ from ours on it is printed as `wrong` and gets no ratio for it;
* warm-up runs, then `gc.collect()` and `gc.freeze()`: the heap that exists is left out of every
  later collection (a full collection before each run would charge big-heap peers for their
  imports); the collector stays on while timing;
* a run is CPU time (`time.process_time`) of R repetitions, each with a fresh parser;
* runs are interleaved in pairs (ours, peer, ours, peer, ...), and the figure is the median of the
  per-pair ratios peer time / our time (> 1: we are faster), so a burst of load on the shared
  machine falls on both sides of a pair.

Workloads: a typical ~1 KB agent output (prose, a thought, two calls) whole and in 4-character
token-aligned deltas (markers arrive whole, as a tokenizer gives them); a 20 KB call (source code
in a string) whole; the OpenAI delta path per delta (ours: `OpenAIStream.feed`; vLLM:
`parse_delta`, its serving path's per-delta call). Our own linearity (µs per delta at 40 KB and
5 KB) is printed too. Rows a peer cannot run say why.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
D = '<|"|>'

# ----------------------------------------------------------------------------------- workloads ----
_CODE = "def f(x):\n    return {'a': [x, x + 1], \"b\": x < 3}\n"


def typical_output() -> str:
    """About 1 KB: what an agent turn usually is."""
    return ("<|channel>thought\nThe user wants the weather in two cities and a file read. I will call the"
            " tools, then answer briefly.<channel|>Let me check both cities and the file.\n"
            "<|tool_call>call:get_weather{location:" + D + "Tokyo, JP" + D + ",unit:" + D + "celsius" + D
            + ",days:3}<tool_call|>"
            "<|tool_call>call:read_file{path:" + D + "src/app.py" + D + ",lines:[1,200],follow:true}<tool_call|>"
            "<|tool_call>call:write_file{path:" + D + "notes.md" + D + ",content:" + D + _CODE * 8 + D
            + ",retries:3,timeout:2.5}<tool_call|>")


def big_call() -> str:
    source = (REPO / "gemma4_lark" / "errors.py").read_text(encoding="utf-8")
    return "<|tool_call>call:write_file{path:" + D + "a.py" + D + ",content:" + D + (source * 4)[:20_000] + D + "}<tool_call|>"


CONTROL = ("<|tool_call>", "<tool_call|>", "<|channel>", "<channel|>", '<|"|>', "<|tool_response>", "<turn|>", "<eos>")


def token_deltas(text: str, size: int = 4) -> list[str]:
    """`text` in deltas of `size` characters that never split a control token (each is one)."""
    out, i, piece = [], 0, ""
    while i < len(text):
        marker = next((m for m in CONTROL if text.startswith(m, i)), None)
        if marker:
            if piece:
                out.append(piece)
                piece = ""
            out.append(marker)
            i += len(marker)
            continue
        piece += text[i]
        i += 1
        if len(piece) == size:
            out.append(piece)
            piece = ""
    if piece:
        out.append(piece)
    return out


WORKLOADS = {
    "typical 1 KB, whole": ("whole", typical_output),
    "typical 1 KB, 4-char stream": ("stream", typical_output),
    "20 KB call, whole": ("whole", big_call),
    "OpenAI delta path, per delta": ("openai", typical_output),
}
# The workloads' tools, with the schemas that make a peer which types values by schema (vLLM) read
# them as the grammar does.
_STRING, _INT = {"type": "string"}, {"type": "integer"}
TOOLS = {
    "get_weather": {"location": _STRING, "unit": _STRING, "days": _INT},
    "read_file": {"path": _STRING, "lines": {"type": "array", "items": _INT}, "follow": {"type": "boolean"}},
    "write_file": {"path": _STRING, "content": _STRING, "retries": _INT, "timeout": {"type": "number"}},
}


def openai_tools():
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": p}}}
            for n, p in TOOLS.items()]


# ------------------------------------------------------------------------------------- peers ----
class Ours:
    def __init__(self, cache):
        from gemma4_incremental import StreamParser, parse_output
        from gemma4_incremental.openai import OpenAIStream
        self.StreamParser, self.parse_output, self.OpenAIStream = StreamParser, parse_output, OpenAIStream

    def whole(self, text, keep):
        output = self.parse_output(text)
        return [(c.name, c.arguments) for c in output.calls] if keep else None

    def stream(self, deltas, keep):
        parser = self.StreamParser()
        feed = parser.feed
        if not keep:  # timed: what a server does per delta, nothing more
            for d in deltas:
                feed(d)
            parser.flush()
            return None
        events = []
        for d in deltas:
            events += feed(d)
        events += parser.flush()
        return [(e.name, e.arguments) for e in events if type(e).__name__ == "ToolCallEnd"]

    def openai(self, deltas, keep):
        stream = self.OpenAIStream(self.StreamParser(), completion_id="c", created=0)
        feed = stream.feed
        if not keep:
            for d in deltas:
                feed(d)
            stream.flush()
            return None
        chunks = []
        for d in deltas:
            chunks += feed(d)
        chunks += stream.flush()
        return _calls_from_chunks(chunks)


def _calls_from_chunks(chunks):
    calls = {}
    for chunk in chunks:
        for choice in chunk.get("choices", ()):
            for call in (choice.get("delta") or {}).get("tool_calls") or ():
                name, args = calls.get(call["index"], ("", ""))
                fn = call.get("function") or {}
                calls[call["index"]] = (name + (fn.get("name") or ""), args + (fn.get("arguments") or ""))
    return [(n, json.loads(a)) for _, (n, a) in sorted(calls.items())]


class MlxLm:
    """mlx-lm's `tool_parsers/gemma4.py`, as its server uses it: the text between the markers of
    each block, parsed when the block closes (its server streams no arguments)."""

    def __init__(self, cache):
        sys.path.insert(0, str(cache / "site"))  # `regex`
        path = cache / "src" / "mlx_lm" / "tool_parsers" / "gemma4.py"
        if not path.exists():
            import zipfile
            [wheel] = sorted(cache.glob("mlx_lm-0.32.2-*.whl"))
            with zipfile.ZipFile(wheel) as archive:
                archive.extract("mlx_lm/tool_parsers/gemma4.py", cache / "src")
        spec = importlib.util.spec_from_file_location("mlx_lm_gemma4", path)
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)

    def _parse(self, inner):
        found = self.module.parse_tool_call(inner)
        return [(c["name"], c["arguments"]) for c in (found if isinstance(found, list) else [found])]

    def whole(self, text, keep):
        start, end, calls, i = self.module.tool_call_start, self.module.tool_call_end, [], 0
        while (j := text.find(start, i)) >= 0 and (k := text.find(end, j)) >= 0:
            calls += self._parse(text[j + len(start):k])
            i = k + len(end)
        return calls

    def stream(self, deltas, keep):
        start, end = self.module.tool_call_start, self.module.tool_call_end
        calls, inside, buffer = [], False, []
        for d in deltas:  # the server's loop: a marker is one token
            if d == start:
                inside, buffer = True, []
            elif d == end and inside:
                inside = False
                calls += self._parse("".join(buffer))
            elif inside:
                buffer.append(d)
        return calls


class SGLang:
    def __init__(self, cache):
        _activate(cache)
        from sglang.srt.entrypoints.openai.protocol import Tool
        from sglang.srt.function_call.gemma4_detector import Gemma4Detector
        self.Detector = Gemma4Detector
        self.tools = [Tool(**tool) for tool in openai_tools()]

    def whole(self, text, keep):
        result = self.Detector().detect_and_parse(text, self.tools)
        return [(c.name, json.loads(c.parameters)) for c in result.calls] if keep else None

    def stream(self, deltas, keep):
        detector, calls = self.Detector(), {}
        feed = detector.parse_streaming_increment
        if not keep:
            for d in deltas:
                feed(d, self.tools)
            return None
        for d in deltas:
            for item in feed(d, self.tools).calls:
                name, args = calls.get(item.tool_index, ("", ""))
                calls[item.tool_index] = (name + (item.name or ""), args + (item.parameters or ""))
        return [(n, json.loads(a)) for _, (n, a) in sorted(calls.items())]


class VLLM:
    def __init__(self, cache):
        _activate(cache)
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
        from vllm.parser.gemma4 import Gemma4Parser
        self.request = ChatCompletionRequest(model="gemma-4", messages=[{"role": "user", "content": "hi"}],
                                             tools=openai_tools(), tool_choice="auto", stream=True)
        self.Parser = Gemma4Parser
        self.tokenizer = _Tokenizer()

    def _parser(self):
        return self.Parser(self.tokenizer, self.request.tools)

    def whole(self, text, keep):
        info = self._parser().extract_tool_calls(text, self.request)
        return [(c.function.name, json.loads(c.function.arguments)) for c in info.tool_calls] if keep else None

    def openai(self, deltas, keep):
        parser, calls = self._parser(), {}
        prompt = self.tokenizer.prompt()
        ids, last = [self.tokenizer.ids_of(d) for d in deltas], len(deltas) - 1  # the engine gives ids
        for n, d in enumerate(deltas):
            message = parser.parse_delta(d, ids[n], self.request, prompt, finished=n == last)
            if not keep:
                continue
            for call in (message.tool_calls if message is not None else None) or ():
                name, args = calls.get(call.index, ("", ""))
                fn = call.function
                calls[call.index] = (name + ((fn and fn.name) or ""), args + ((fn and fn.arguments) or ""))
        return [(n, json.loads(a)) for _, (n, a) in sorted(calls.items())]


class _Tokenizer:
    """Gemma 4's control tokens, one id each; other text one id per delta (the parsers read text)."""

    TEXT = 10_000

    def __init__(self):
        from gemma4_lark import tokens
        self.ids = {m: i for i, m in enumerate(tokens.CONTROL_TOKENS, start=1)}
        self.vocab = dict(self.ids)
        self.text_of = {i: m for m, i in self.ids.items()}

    def get_vocab(self):
        return dict(self.ids)

    def decode(self, ids):
        return "".join(self.text_of.get(i, "") for i in ids)

    def ids_of(self, delta):
        return [self.ids.get(delta, self.TEXT)]

    def prompt(self):
        return [self.ids["<|turn>"], self.TEXT]


def _activate(cache):
    sys.path.insert(0, str(REPO / "integration"))
    import harness
    harness.extract(cache)
    harness.activate(cache)


PEERS = {"ours": Ours, "mlx-lm 0.32.2": MlxLm, "SGLang 0.5.23": SGLang, "vLLM 0.33.0": VLLM}


# ------------------------------------------------------------------------------------ worker ----
def worker(name: str, cache: Path) -> None:
    """Answer one JSON request a line: {"check": workload} -> the calls, or {"time": workload,
    "reps": R} -> CPU seconds of R fresh-parser repetitions."""
    import logging
    logging.disable(logging.CRITICAL)
    peer = PEERS[name](cache)
    inputs = {}
    for label, (kind, make) in WORKLOADS.items():
        text = make()
        inputs[label] = (kind, text if kind == "whole" else token_deltas(text))
    frozen = False
    for line in sys.stdin:
        request = json.loads(line)
        label = request.get("check") or request.get("time")
        kind, data = inputs[label]
        fn = getattr(peer, kind, None)
        if fn is None:
            print(json.dumps({"error": f"no {kind} path"}), flush=True)
            continue
        try:
            if "check" in request:
                for _ in range(3):  # warm-up
                    result = fn(data, True)
                print(json.dumps({"calls": result}, sort_keys=True, default=str), flush=True)
                continue
            if not frozen:
                gc.collect()
                gc.freeze()
                frozen = True
            reps = request["reps"]
            t0 = time.process_time()
            for _ in range(reps):
                fn(data, False)
            print(json.dumps({"seconds": time.process_time() - t0}), flush=True)
        except Exception as exc:  # noqa: BLE001 - a peer's failure is a row, not a crash
            print(json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:200]}"}), flush=True)


class Worker:
    def __init__(self, name: str, cache: Path):
        self.name = name
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", name, str(cache)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=REPO)

    def ask(self, **request) -> dict:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"error": "the worker died (its error is above)"}
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"error": "the worker died (its error is above)"}

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=30)


def _canonical(calls):
    return json.dumps(calls, sort_keys=True)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    quick = "--quick" in argv
    pairs = 7 if quick else 21
    for i, a in enumerate(argv):
        if a == "--pairs":
            pairs = int(argv[i + 1])
            args.remove(argv[i + 1])
    if not args:
        print(__doc__)
        return 2
    cache = Path(args[0]).resolve()
    ours = Worker("ours", cache)
    print(f"peer comparison: median of {pairs} interleaved pairs of CPU-time runs, fresh parser per repetition;"
          " ratio = peer time / ours (> 1: gemma4-lark is faster)")
    print(f"{'workload':32} {'peer':16} {'ours µs':>9} {'peer µs':>9} {'ratio':>7}")
    expected = {label: ours.ask(check=label) for label in WORKLOADS}
    for name in [n for n in PEERS if n != "ours"]:
        peer = Worker(name, cache)
        try:
            for label, (kind, _) in WORKLOADS.items():
                got = peer.ask(check=label)
                if "error" in got:
                    print(f"{label:32} {name:16} {'':>9} {'':>9}  not run: {got['error']}")
                    continue
                if _canonical(got["calls"]) != _canonical(expected[label]["calls"]):
                    print(f"{label:32} {name:16} {'':>9} {'':>9}  wrong: {got['calls']!r:.150}")
                    continue
                reps = _reps(ours, label)
                ratios, mine, theirs = [], [], []
                for _ in range(pairs):
                    a = ours.ask(time=label, reps=reps)["seconds"]
                    b = peer.ask(time=label, reps=reps)["seconds"]
                    ratios.append(b / a)
                    mine.append(a)
                    theirs.append(b)
                unit = _unit(label, kind, reps)
                print(f"{label:32} {name:16} {statistics.median(mine) * unit:9.2f} {statistics.median(theirs) * unit:9.2f}"
                      f" {statistics.median(ratios):7.2f}")
        finally:
            peer.close()
    ours.close()
    _linearity()
    return 0


def _reps(worker: Worker, label: str) -> int:
    """Repetitions for a run of about 20 ms of ours."""
    reps = 1
    while True:
        seconds = worker.ask(time=label, reps=reps)["seconds"]
        if seconds > 0.02 or reps > 100_000:
            return reps
        reps *= 4


def _unit(label: str, kind: str, reps: int) -> float:
    """Seconds of a run -> µs per workload (whole) or per delta (streams)."""
    if kind == "whole":
        return 1e6 / reps
    return 1e6 / reps / len(token_deltas(WORKLOADS[label][1]()))


def _linearity() -> None:
    """Ours: µs per 4-character delta through OpenAIStream for a call with a 40 KB and a 5 KB string."""
    from gemma4_incremental import StreamParser
    from gemma4_incremental.openai import OpenAIStream

    def per_delta(size):
        text = "<|tool_call>call:write_file{content:" + D + ("x = 1 < 2\n" * (size // 10)) + D + "}<tool_call|>"
        deltas = token_deltas(text)
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            stream = OpenAIStream(StreamParser(), completion_id="c", created=0)
            for d in deltas:
                stream.feed(d)
            stream.flush()
            best = min(best, time.process_time() - t0)
        return best / len(deltas) * 1e6

    small, large = per_delta(5_000), per_delta(40_000)
    print(f"ours, OpenAI stream µs/delta: 5 KB {small:.2f}, 40 KB {large:.2f}, ratio {large / small:.2f} (target <= 1.3)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], Path(sys.argv[3]))
    else:
        raise SystemExit(main(sys.argv[1:]))
