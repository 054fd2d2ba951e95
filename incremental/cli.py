"""The streaming layer's commands for `gemma4-lark`: `parse` and `demo` (registered through the
`gemma4_lark.commands` entry point group)."""

from __future__ import annotations

import codecs
import json
import os
import sys

from gemma4_lark.cli import (
    CommandError, NotUTF8, Progress, add_max_depth, at_least, check_reader, display_name, escape_unencodable_output,
    optional_dependencies, stdin_binary,
)
from gemma4_lark.events import Stop, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError

from . import demo
from .message_writer import OpenAIMessageWriter
from .parser import StreamParser


def register_parse(sub) -> None:
    p = sub.add_parser("parse", help="stream model output through the incremental parser",
                       description="Feed model output to the streaming parser and print what it finds; "
                                   "exit 1 if a block failed. parse is what a server does with a stream: it "
                                   "recovers the blocks docs/leniency.md lists (a trailing comma, a block closed "
                                   "by <turn|>) and judges call blocks alone, so it exits 0 on outputs that "
                                   "validate rejects. With --strict a block the grammar rejects fails (exit 1); "
                                   "validate also judges what is around blocks (text after a stop marker).")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input (read as it arrives)")
    p.add_argument("--chunk", type=at_least(1), default=None, metavar="N",
                   help="feed N characters at a time (default: each read as it arrives)")
    p.add_argument("--no-thinking", action="store_true", help="leave thought-channel markup in the text")
    p.add_argument("--start-in-thinking", action="store_true", help="the prompt ended inside a thought")
    p.add_argument("--strict", action="store_true",
                   help="never recover a block the grammar rejects: it fails, and the exit status is 1")
    p.add_argument("--format", choices=["events", "summary", "openai"], default="events",
                   help="events: one JSON event per line as they come, in constant memory (default); "
                        "summary: text, thoughts, calls and errors as one JSON object; "
                        "openai: one assistant message in OpenAI's shape")
    add_max_depth(p)
    p.set_defaults(run=cmd_parse)


def register_demo(sub) -> None:
    p = sub.add_parser("demo", help="stream the embedded sample model output and show the events")
    p.set_defaults(run=lambda args: demo.run())


_READ_SIZE = 65536


def _reads(path: str):
    """The input as text, one piece per read, as it arrives: standard input is read with os.read,
    so a pipe streams. A UTF-8 error names its byte offset in the whole input."""
    name = display_name(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    if path == "-":
        try:
            fd = stdin_binary().fileno()
        except (AttributeError, OSError, ValueError):
            raise CommandError("standard input has no file descriptor to read from") from None
        f = None
        read = lambda: os.read(fd, _READ_SIZE)  # noqa: E731 - returns what is available, without waiting for more
    else:
        f = open(path, "rb")
        read = lambda: f.read(_READ_SIZE)  # noqa: E731
    consumed = 0  # bytes read before this read
    try:
        while True:
            try:
                data = read()
            except OSError as err:
                if path != "-":
                    raise
                raise CommandError(f"cannot read standard input: {err.strerror or err}") from None
            try:
                text = decoder.decode(data, final=not data)
            except UnicodeDecodeError as err:
                # err.object is the bytes the decoder held back from the last read, then this read
                raise NotUTF8(name, err, consumed - (len(err.object) - len(data))) from None
            consumed += len(data)
            check_reader()  # the summary and openai formats write little as they go
            yield text
            if not data:
                return
    finally:
        if f is not None:
            f.close()


def _batches(parser: StreamParser, path: str, size: int | None):
    """The parser's events, one list per read of the input (fed in pieces of `size` characters),
    then the flush's."""
    try:
        for text in _reads(path):
            if size is None:
                yield parser.feed(text)
            else:
                yield [event for i in range(0, len(text), size) for event in parser.feed(text[i:i + size])]
        yield parser.flush()
    except RecursionError:
        raise CommandError(f"{display_name(path)}: nested too deeply to parse (lower --max-depth)", code=1) from None
    except ValueError as err:  # a value Python cannot hold, e.g. an integer past int's digit limit
        raise CommandError(f"{display_name(path)}: cannot parse: {err}", code=1) from None


class _Summary:
    """What `--format summary` prints, gathered event by event: the events themselves are not kept."""

    def __init__(self):
        self.text: list = []
        self.thinking: list = []
        self.calls: list = []
        self.errors: list = []
        self.stop = None
        self.counts: dict = {}
        self._thought: list | None = None  # the open thought's deltas (the stream keeps none)

    def add(self, event) -> None:
        self.counts[event.type] = self.counts.get(event.type, 0) + 1
        if isinstance(event, Text):
            self.text.append(event.text)
        elif isinstance(event, ThinkingStart):
            self._thought = []
        elif isinstance(event, ThinkingDelta) and self._thought is not None:
            self._thought.append(event.text)
        elif isinstance(event, ThinkingEnd):
            self.thinking.append("".join(self._thought or ()))
            self._thought = None
        elif isinstance(event, ToolCallEnd):
            self.calls.append({"id": event.id, "name": event.name, "arguments": event.arguments,
                               "recovered": event.recovered, "diagnostics": [d.to_dict() for d in event.diagnostics]})
        elif isinstance(event, ToolCallError):
            self.errors.append({"id": event.id, "raw": event.raw, "error": event.error})
        elif isinstance(event, Stop) and self.stop is None:
            self.stop = event.marker

    def to_dict(self) -> dict:
        return {"text": "".join(self.text), "thinking": self.thinking, "stop": self.stop,
                "calls": self.calls, "errors": self.errors, "counts": self.counts}


def cmd_parse(args) -> int:
    parser = StreamParser(parse_thinking=not args.no_thinking, start_in_thinking=args.start_in_thinking,
                          strict=args.strict, max_depth=args.max_depth)
    batches = _batches(parser, args.file, args.chunk)
    if args.format == "events":
        # Constant memory: each event is written and dropped; only the count of failed blocks stays.
        failed = 0
        write = sys.stdout.write
        try:
            for events in batches:
                for event in events:
                    write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
                    failed += isinstance(event, ToolCallError)
                sys.stdout.flush()  # once per read, so a pipe sees events as the input arrives
        except RecursionError:
            raise _too_deep(args) from None
        return _exit_code(args, failed)
    if args.format == "summary":
        summary = _Summary()
        try:
            for events in batches:
                for event in events:
                    summary.add(event)
            print(json.dumps(summary.to_dict(), ensure_ascii=False))
        except RecursionError:
            raise _too_deep(args) from None
        return _exit_code(args, len(summary.errors))
    # openai: failed blocks stay in the content and are listed beside it; recovered calls are marked.
    # Gathered in temporary files, written at the end: memory holds about one block, and an input
    # the command gives up on (not UTF-8, nested too deeply) writes no half message.
    writer = OpenAIMessageWriter(sys.stdout.write)
    failed = 0
    try:
        for events in batches:
            for event in events:
                writer.add(event)
                failed += isinstance(event, ToolCallError)
        writer.close()
    except RecursionError:
        raise _too_deep(args) from None
    finally:
        writer.discard()
    sys.stdout.write("\n")
    return _exit_code(args, failed)


def _too_deep(args) -> CommandError:
    return CommandError(f"{display_name(args.file)}: a decoded value nests too deeply to write as JSON "
                        "(lower --max-depth)", code=1)


def _exit_code(args, failed: int) -> int:
    """1 when a block failed, said on standard error too (the output itself is for programs)."""
    if not failed:
        return 0
    print(f"gemma4-lark parse: {display_name(args.file)}: {failed} tool call block(s) failed "
          "(tool_call_error)", file=sys.stderr)
    return 1


def register_fuzz(sub) -> None:
    p = sub.add_parser("fuzz", help="differential fuzzing: grammar parsers against hand-written ones, or a target")
    p.add_argument("--examples", type=at_least(1), default=200, metavar="N", help="examples per property (default 200)")
    p.add_argument("--seed", type=int, default=0, help="the random seed, for a reproducible campaign (default 0)")
    p.add_argument("--target", metavar="CMD", help="an external parser speaking the JSONL protocol (see gemma4_lark.fuzz)")
    p.set_defaults(run=cmd_fuzz)


def cmd_fuzz(args) -> int:
    from gemma4_lark.conformance.target import TargetDoesNotRun

    with optional_dependencies("fuzz"):
        from gemma4_lark import strategies  # noqa: F401 - the campaign's; it needs hypothesis: said before it starts
        from gemma4_lark.fuzz import run_campaign

    def progress(label, tried, finding):
        status = "DISAGREE" if finding else "ok"
        print(f"{status:>8}  {tried:>6} cases  {label}", flush=True)
        if finding:
            print("          counterexample (shrunk):")
            for line in (finding.example or finding.detail).splitlines():
                print("            " + line)
            print("          " + finding.detail.splitlines()[0][:300])

    try:
        report = run_campaign(StreamParser, examples=args.examples, seed=args.seed, target=args.target,
                              progress=progress)
    except TargetDoesNotRun as err:
        raise CommandError(f"the --target command {args.target!r} answered no request: {err}") from None
    except OSError as err:  # standard output's own errors arrive as other exceptions (see gemma4_lark.cli)
        if not args.target:
            raise
        raise CommandError(f"the --target command {args.target!r} stopped reading its input: "
                           f"{err.strerror or err}") from None
    print(f"{sum(report.tried.values())} cases tried, {len(report.findings)} disagreement(s)")
    return 0 if report.ok else 1


def register_conformance(sub) -> None:
    p = sub.add_parser("conformance", help="the conformance kit: export the corpus, or run it against a parser",
                       description="The conformance kit (docs/conformance.md): the corpus as files, and a run of it "
                                   "against any parser that speaks the JSONL protocol.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    e = actions.add_parser("export", help="write the corpus and its manifest as files")
    e.add_argument("directory", metavar="DIR", help="where to write it (its valid/, invalid/ and streams/ are replaced)")
    e.set_defaults(run=cmd_conformance_export)
    r = actions.add_parser("run", help="send every case to a parser under test; exit 1 if it disagrees on any",
                           description="Run the corpus and generated and mutated cases against --target; print a "
                                       "summary by category and kind of failure, naming the failing cases. On a "
                                       "terminal, a status line on standard error says how far the run is. A "
                                       "target's answer is one line per request; more is a protocol failure. "
                                       "Exit 0: every case agrees; 1: some disagree; 2: usage error, or a target "
                                       "that never answers.")
    r.add_argument("--target", required=True, metavar="CMD",
                   help="the parser under test: a shell command reading requests and writing answers, one JSON line each")
    r.add_argument("--timeout", type=_seconds, default=5.0, metavar="SECONDS",
                   help="per case: no answer in this time is the case's failure (default 5)")
    r.add_argument("--startup", type=_seconds, default=30.0, metavar="SECONDS",
                   help="extra time for the target's first answer (default 30); a restarted target gets at most "
                        "twice what that first answer took")
    r.add_argument("--report", metavar="FILE.json", help="also write the full report, every failure, as JSON")
    r.add_argument("--generated", type=at_least(0), default=200, metavar="N",
                   help="canonical model outputs generated from the seed (default 200)")
    r.add_argument("--mutated", type=at_least(0), default=200, metavar="N", help="mutated cases (default 200)")
    r.add_argument("--seed", type=int, default=0, help="seed of the generated and mutated cases (default 0)")
    r.add_argument("--shrink-seconds", type=_seconds, default=10.0, metavar="SECONDS",
                   help="time to shrink the smallest failure of each category (default 10)")
    r.add_argument("--stop-after-hangs", type=at_least(0), default=20, metavar="N",
                   help="N cases in a row with no answer in time: the target has stopped answering, the cases "
                        "left are not sent and the run ends (exit 1); 0: never (default 20)")
    r.set_defaults(run=cmd_conformance_run)
    s = actions.add_parser("serve", help="this project's parser as a target (what the kit expects)")
    s.set_defaults(run=cmd_conformance_serve)


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def cmd_conformance_export(args) -> int:
    from gemma4_lark.conformance import export

    counts = export(args.directory)
    print(f"wrote {counts['valid']} valid, {counts['invalid']} invalid and {counts['streams']} stream cases "
          f"and manifest.json to {args.directory}")
    return 0


def cmd_conformance_run(args) -> int:
    from gemma4_lark.conformance.protocol import json_text

    from . import conformance

    escape_unencodable_output()  # the summary repeats the target's answers, which may hold a lone surrogate
    if args.report:
        try:  # a report that cannot be written is a usage error, found before the run rather than after
            open(args.report, "a").close()
        except OSError as err:
            raise CommandError(f"cannot write the report {args.report}: {err.strerror or err}") from None

    progress = Progress()  # on a terminal: how far the run is, and how long the target has said nothing
    try:
        report = conformance.run(args.target, timeout=args.timeout, startup=args.startup, seed=args.seed,
                                 generated=args.generated, mutated=args.mutated, shrink_seconds=args.shrink_seconds,
                                 stop_after_hangs=args.stop_after_hangs, status=progress.show)
    except conformance.TargetDoesNotRun as err:
        raise CommandError(f"the target {args.target!r} answered no case: {err}") from None
    finally:
        progress.clear()
    if args.report:  # made whole before the file is opened: a report is written entirely or not at all
        text = json_text(report.to_dict(), indent=1) + "\n"
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(text)
    print(conformance.summary(report))
    if args.report:
        print(f"\nfull report: {args.report}")
    return 1 if report.failed else 0


def cmd_conformance_serve(args) -> int:
    from . import conformance

    conformance.serve(stdin_binary(), sys.stdout)  # bytes: a line that is not UTF-8 is one request's error
    return 0
