"""The commands that print what the grammar generates: `gemma4-lark grammar` (a grammar for a
decoding engine) and `gemma4-lark docs` (the spec pages)."""

from __future__ import annotations

import argparse
import sys

from .arguments import optional_dependencies
from .inputs import CommandError, load_json
from .tools_file import read_tools_file


def cmd_docs(args) -> int:
    import pathlib

    if args.check and not pathlib.Path(args.out).is_dir():
        raise CommandError(
            f"no directory {args.out!r} to check: `docs --check` compares the spec pages in a checkout of "
            "the repository (run it from the repository's root, or pass --out DIR)")
    with optional_dependencies("docs"):
        from .. import docs

        return docs.main(args.out, args.check)


def cmd_grammar(args) -> int:
    from .. import constrain

    tools = read_tools_file(args.tools) if args.tools is not None else None
    tool_choice = args.tool_choice
    if tool_choice.startswith("{"):
        tool_choice = load_json(tool_choice, "--tool-choice", "the tool choice")
    elif tool_choice not in ("auto", "none", "required"):
        tool_choice = {"type": "function", "function": {"name": tool_choice}}
    try:
        text = constrain.grammar(args.format, scope=args.scope, tools=tools, tool_choice=tool_choice,
                                 thinking=args.thinking)
    except ImportError as err:
        raise CommandError(f"tools need the schema translation, which is missing: {err}") from None
    except (ValueError, TypeError) as err:
        raise CommandError(str(err), code=1) from None
    sys.stdout.write(text)
    return 0


def register_docs(sub) -> None:
    p = sub.add_parser("docs", help="generate the spec pages from the grammar")
    p.add_argument("--out", default="docs/spec", metavar="DIR",
                   help="where the pages go (default docs/spec, relative to the current directory)")
    p.add_argument("--check", action="store_true", help="exit 1 listing stale files instead of writing")
    p.set_defaults(run=cmd_docs)


def register_grammar(sub) -> None:
    p = sub.add_parser("grammar", help="a grammar for constrained decoding (llguidance, GBNF, xgrammar, Lark)",
                       description="Print the format's grammar for a decoding engine; see docs/constrained-decoding.md.")
    p.add_argument("--format", required=True, choices=["llguidance", "gbnf", "xgrammar", "lark"],
                   help="the engine's dialect")
    p.add_argument("--scope", choices=["call", "output"], default="call",
                   help="call: one call block (default); output: a whole model turn")
    p.add_argument("--tools", metavar="tools.json", help="a JSON array of tool declarations: calls follow them")
    p.add_argument("--tool-choice", default="auto", metavar="CHOICE",
                   help="auto (default), none, required, a tool's name, or OpenAI's JSON object")
    p.add_argument("--thinking", action=argparse.BooleanOptionalAction, default=True,
                   help="whether a turn may hold thoughts (default: yes)")
    p.set_defaults(run=cmd_grammar)
