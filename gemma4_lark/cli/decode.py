"""`gemma4-lark decode`: the decoded block(s) as JSON."""

from __future__ import annotations

import json
import sys

from .. import parser as strict
from ..errors import GemmaSyntaxError
from ..model import to_jsonable
from ..validate import start_rule_of
from .arguments import add_max_depth, at_least
from .inputs import CommandError, display_name, read_text
from .output import caret_lines


def cmd_decode(args) -> int:
    text = read_text(args.file)
    start, _ = start_rule_of(text)
    name = display_name(args.file)
    try:
        result = strict.parse(text, start, max_depth=args.max_depth)
    except GemmaSyntaxError as err:
        print(f"{name}:{err.line}:{err.column}: {err.message}", file=sys.stderr)
        print(caret_lines(text, err.pos), file=sys.stderr)
        return 1
    except RecursionError:
        raise CommandError(f"{name}: nested too deeply to decode (lower --max-depth)", code=1) from None
    except ValueError as err:  # a value Python cannot hold, e.g. an integer past int's digit limit
        raise CommandError(f"{name}: cannot decode: {err}", code=1) from None
    try:
        print(json.dumps(to_jsonable(result), ensure_ascii=False, indent=args.indent))
    except RecursionError:
        raise CommandError(f"{name}: the decoded value nests too deeply to write as JSON (lower --max-depth)",
                           code=1) from None
    return 0


def register(sub) -> None:
    p = sub.add_parser("decode", help="print the decoded block(s) as JSON")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input")
    p.add_argument("--indent", type=at_least(0), default=None, metavar="N",
                   help="indent the JSON by N spaces (default: one line)")
    add_max_depth(p)
    p.set_defaults(run=cmd_decode)
