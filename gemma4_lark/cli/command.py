"""The `gemma4-lark` command: validate and decode Gemma 4 tool-calling text.

Exit codes: 0 success (input valid), 1 invalid input, 2 usage error or input/output that could not
be read or written. No input makes it print a traceback: every known problem is one line on
standard error that names the file and, where there is one, the position.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import metadata

from . import decode, grammar, render, validate
from .arguments import version
from .inputs import CommandError, os_message
from .output import GuardedStdout, OutputFailed, ReaderGone, discard_stdout


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gemma4-lark", description=__doc__.splitlines()[0],
                                 epilog="Exit codes: 0 valid/success, 1 invalid input, 2 usage or I/O error.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate.register(sub)
    decode.register(sub)
    grammar.register_docs(sub)
    render.register(sub)
    grammar.register_grammar(sub)

    # Commands of packages built on this one (the streaming layer's `parse` and `demo`) are
    # registered as entry points, so this package never imports them by name.
    for entry in sorted(metadata.entry_points(group="gemma4_lark.commands"), key=lambda e: e.name):
        entry.load()(sub)
    return ap



def main(argv=None) -> int:
    if sys.stderr is None:  # started with fd 2 closed: print(file=None) would write to stdout
        sys.stderr = open(os.devnull, "w")
    args = build_parser().parse_args(argv)
    prog = f"gemma4-lark {args.command}"
    if sys.stdout is None:  # started with fd 1 closed (`cmd >&-`): Python drops every print
        print(f"{prog}: standard output is closed; nothing can be written", file=sys.stderr)
        return 2
    stdout, sys.stdout = sys.stdout, GuardedStdout(sys.stdout)
    try:
        code = args.run(args)
        sys.stdout.flush()  # a write error surfaces here, while it can still be reported
        return code
    except ReaderGone:  # `| head`: the reader has what it wanted; not an error of ours
        discard_stdout()
        return 0
    except OutputFailed as err:
        print(f"{prog}: cannot write to standard output: {err}", file=sys.stderr)
        discard_stdout()
        return 2
    except CommandError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return err.code
    except OSError as err:
        print(f"{prog}: {os_message(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except Exception as err:  # a bug: still one line, not a traceback (the known cases are handled above)
        print(f"gemma4-lark: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
