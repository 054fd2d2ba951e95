"""The streaming layer's commands for `gemma4-lark`: `parse` and `demo` (registered through the
`gemma4_lark.commands` entry point group)."""

from __future__ import annotations

import codecs
import json
import os
import sys

from gemma4_lark.parser import DEFAULT_MAX_DEPTH

from . import demo
from .output import collect
from .parser import StreamParser


def register_parse(sub) -> None:
    p = sub.add_parser("parse", help="stream model output through the incremental parser")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input (read as it arrives)")
    p.add_argument("--chunk", type=int, default=0, metavar="N", help="feed N characters at a time")
    p.add_argument("--no-thinking", action="store_true", help="leave thought-channel markup in the text")
    p.add_argument("--start-in-thinking", action="store_true", help="the prompt ended inside a thought")
    p.add_argument("--strict", action="store_true", help="never recover a block the grammar rejects")
    p.add_argument("--format", choices=["events", "summary", "openai"], default="events")
    p.add_argument("--max-depth", type=int, default=DEFAULT_MAX_DEPTH)
    p.set_defaults(run=cmd_parse)


def register_demo(sub) -> None:
    p = sub.add_parser("demo", help="stream the embedded sample model output and show the events")
    p.set_defaults(run=lambda args: demo.run())


def _chunks_of(path: str, size: int):
    """The input as it arrives: standard input is read with os.read, so a pipe streams."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    if path == "-":
        fd = sys.stdin.fileno()
        read = lambda: os.read(fd, 65536)  # noqa: E731 - returns what is available, without waiting for more
    else:
        f = open(path, "rb")
        read = lambda: f.read(65536)  # noqa: E731
    while True:
        data = read()
        text = decoder.decode(data, final=not data)
        for i in range(0, len(text), size or len(text) or 1):
            yield text[i:i + size] if size else text
        if not data:
            return


def cmd_parse(args) -> int:
    parser = StreamParser(parse_thinking=not args.no_thinking, start_in_thinking=args.start_in_thinking,
                          strict=args.strict, max_depth=args.max_depth)
    events = []
    for chunk in _chunks_of(args.file, args.chunk):
        for event in parser.feed(chunk):
            if args.format == "events":
                print(json.dumps(event.to_dict(), ensure_ascii=False), flush=True)
            events.append(event)
    for event in parser.flush():
        if args.format == "events":
            print(json.dumps(event.to_dict(), ensure_ascii=False), flush=True)
        events.append(event)
    result = collect(events)
    if args.format == "summary":
        print(json.dumps({
            "text": result.text, "thinking": result.thinking, "stop": result.stop,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments, "recovered": c.recovered,
                       "diagnostics": [d.to_dict() for d in c.diagnostics]} for c in result.calls],
            "errors": [{"id": e.id, "raw": e.raw, "error": e.error} for e in result.errors],
        }, ensure_ascii=False))
    elif args.format == "openai":
        # failed blocks stay in the content and are listed beside it; recovered calls are marked
        print(json.dumps(result.to_openai(), ensure_ascii=False))
    return 1 if result.errors else 0


def register_fuzz(sub) -> None:
    p = sub.add_parser("fuzz", help="differential fuzzing: grammar parsers against hand-written ones, or a target")
    p.add_argument("--examples", type=int, default=200, help="examples per property")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target", metavar="CMD", help="an external parser speaking the JSONL protocol (see gemma4_lark.fuzz)")
    p.set_defaults(run=cmd_fuzz)


def cmd_fuzz(args) -> int:
    from gemma4_lark.fuzz import run_campaign

    def progress(label, tried, finding):
        status = "DISAGREE" if finding else "ok"
        print(f"{status:>8}  {tried:>6} cases  {label}", flush=True)
        if finding:
            print("          counterexample (shrunk):")
            for line in (finding.example or finding.detail).splitlines():
                print("            " + line)
            print("          " + finding.detail.splitlines()[0][:300])

    report = run_campaign(StreamParser, examples=args.examples, seed=args.seed, target=args.target, progress=progress)
    print(f"{sum(report.tried.values())} cases tried, {len(report.findings)} disagreement(s)")
    return 0 if report.ok else 1
