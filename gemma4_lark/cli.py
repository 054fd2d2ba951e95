"""The `gemma4-lark` command: validate and decode Gemma 4 tool-calling text.

Exit codes: 0 success (input valid), 1 invalid input, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from importlib import metadata

from . import parser as strict
from .errors import GemmaSyntaxError
from .model import to_jsonable
from .validate import _kind, validate


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    with open(path, encoding="utf-8") as f:
        return f.read()


def _caret_lines(text: str, line: int, column: int) -> str:
    source_line = text.split("\n")[line - 1] if text else ""
    return f"{source_line}\n{' ' * (column - 1)}^"


def cmd_validate(args) -> int:
    text = _read(args.file)
    diagnostics = validate(text, max_depth=args.max_depth)
    name = "<stdin>" if args.file == "-" else args.file
    if args.json:
        print(json.dumps({"file": name, "valid": not any(d.severity == "error" for d in diagnostics),
                          "diagnostics": [d.to_dict() for d in diagnostics]}))
    else:
        for d in diagnostics:
            print(d.format(name))
            print(_caret_lines(text, d.line, d.column))
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def cmd_decode(args) -> int:
    text = _read(args.file)
    start, _ = _kind(text)
    try:
        result = strict.parse(text, start, max_depth=args.max_depth)
    except GemmaSyntaxError as err:
        name = "<stdin>" if args.file == "-" else args.file
        print(f"{name}:{err.line}:{err.column}: {err.message}", file=sys.stderr)
        print(_caret_lines(text, err.line, err.column), file=sys.stderr)
        return 1
    print(json.dumps(to_jsonable(result), ensure_ascii=False, indent=args.indent))
    return 0


def cmd_conformance(args) -> int:
    from .conformance import export

    counts = export(args.directory)
    print(f"wrote {counts['valid']} valid, {counts['invalid']} invalid and {counts['streams']} stream cases to {args.directory}")
    return 0


def cmd_render(args) -> int:
    from .render import official, omp
    from .render.safety import UnsafeContentError

    try:
        messages = json.loads(_read(args.messages))
        tools = json.loads(_read(args.tools)) if args.tools else None
        if args.profile == "official":
            text = official.render_chat(messages, tools, add_generation_prompt=args.generation_prompt,
                                        enable_thinking=args.thinking, variant=args.variant, unsafe=args.unsafe)
        else:
            text = omp.render_transcript(messages, unsafe=args.unsafe)
            if tools:
                text = omp.render_tool_prompt(tools, unsafe=args.unsafe) + "\n\n" + text
    except (UnsafeContentError, ValueError, KeyError, TypeError) as err:
        print(f"gemma4-lark render: {err}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gemma4-lark", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check a block, model output or transcript against the grammar")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--max-depth", type=int, default=strict.DEFAULT_MAX_DEPTH)
    p.set_defaults(run=cmd_validate)

    p = sub.add_parser("decode", help="print the decoded block(s) as JSON")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input")
    p.add_argument("--indent", type=int, default=None)
    p.add_argument("--max-depth", type=int, default=strict.DEFAULT_MAX_DEPTH)
    p.set_defaults(run=cmd_decode)

    p = sub.add_parser("docs", help="generate the spec pages from the grammar")
    p.add_argument("--out", default="docs/spec")
    p.add_argument("--check", action="store_true", help="exit 1 listing stale files instead of writing")
    p.set_defaults(run=lambda args: __import__("gemma4_lark.docs").docs.main(args.out, args.check))

    p = sub.add_parser("conformance", help="the conformance corpus, for other implementations")
    p.add_argument("action", choices=["export"])
    p.add_argument("directory", metavar="DIR")
    p.set_defaults(run=cmd_conformance)

    p = sub.add_parser("render", help="render a conversation as a Gemma 4 prompt")
    p.add_argument("messages", metavar="messages.json", help="messages (OpenAI shape for official, OMP shape for omp)")
    p.add_argument("--profile", choices=["official", "omp"], default="official")
    p.add_argument("--tools", metavar="tools.json")
    p.add_argument("--generation-prompt", action="store_true")
    p.add_argument("--thinking", action="store_true")
    p.add_argument("--variant", choices=["e2b", "31b"], default="e2b")
    p.add_argument("--unsafe", choices=["error", "strip", "allow"], default="error")
    p.set_defaults(run=cmd_render)

    # Commands of packages built on this one (the streaming layer's `parse` and `demo`) are
    # registered as entry points, so this package never imports them by name.
    for entry in sorted(metadata.entry_points(group="gemma4_lark.commands"), key=lambda e: e.name):
        entry.load()(sub)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except OSError as err:
        print(f"gemma4-lark: {err}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as err:
        print(f"gemma4-lark: input is not UTF-8: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
