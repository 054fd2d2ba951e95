"""`gemma4-lark validate`: check inputs against the grammar, one output per file or per JSONL record,
with a summary over several."""

from __future__ import annotations

import json
import sys

from ..validate import validate
from .arguments import add_max_depth
from .inputs import CommandError, NotUTF8, display_name, load_json, not_utf8, os_message, read_text, stdin_binary
from .output import caret_lines, check_reader, escape_unencodable_output
from .progress import Progress
from .tools_file import read_tools_file

DEFAULT_FIELDS = ("output", "text")


def _field(record, path: str | None) -> tuple[str, str]:
    """(field name, model output) of one JSONL record: the value at `path` (dot-separated keys,
    list indexes as numbers), or the first of DEFAULT_FIELDS present; a bare JSON string is its
    own output. ValueError says why there is none."""
    if isinstance(record, str) and path is None:
        return "", record
    if path is None:
        if isinstance(record, dict):
            for name in DEFAULT_FIELDS:
                if name in record:
                    return name, _as_output(record[name], name)
        names = " or ".join(f'"{n}"' for n in DEFAULT_FIELDS)
        raise ValueError(f"no field {names} in this record (choose one with --field)")
    value = record
    for step in path.split("."):
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            raise ValueError(f'no field "{path}" in this record')
    return path, _as_output(value, path)


def _as_output(value, name: str) -> str:
    if not isinstance(value, str):
        kind = {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number",
                type(None): "null"}.get(type(value), type(value).__name__)
        raise ValueError(f'field "{name}" is {kind}, not a string')
    return value


def _record_id(record) -> str | int | None:
    """The record's `id` when it has one that names it (a string or an integer)."""
    if isinstance(record, dict):
        value = record.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
    return None


def _jsonl_records(path: str, field: str | None):
    """(line number, record id or None, field name, model output or None, problem or None) for each
    non-blank line, one at a time: memory holds one line, however long the file."""
    stream = stdin_binary() if path == "-" else open(path, "rb")
    try:
        offset = 0
        for number, raw in enumerate(stream, 1):
            if number % 256 == 0:  # a record's check costs far more than this poll; valid ones print nothing
                check_reader()
            start, offset = offset, offset + len(raw)
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    yield number, None, field, None, not_utf8(err, start)
                    continue
            if not raw.strip():
                continue
            try:
                record = load_json(raw.rstrip("\r\n"), "", "the record")
            except CommandError as err:  # not JSON, or nested past what Python's reader follows
                yield number, None, field, None, str(err)
                continue
            record_id = _record_id(record)
            try:
                name, output = _field(record, field)
            except ValueError as err:
                yield number, record_id, field, None, str(err)
                continue
            yield number, record_id, name, output, None
    finally:
        if path != "-":
            stream.close()


def record_label(name: str, number: int, record_id) -> str:
    """How a finding names a JSONL record: FILE:LINE, and its `id` when it has one."""
    if record_id is None:
        return f"{name}:{number}"
    shown = json.dumps(record_id, ensure_ascii=False)
    return f"{name}:{number} id={shown if len(shown) <= 80 else shown[:77] + '...'}"


# Distinct problems remembered to say once and count after: the first few, so memory does not grow
# with the records (problems that name an offset, like "not UTF-8", are all distinct: each is said).
_REMEMBERED_PROBLEMS = 64


class _Tally:
    """Counts for the summary of a run over several inputs: outputs by verdict, findings by code."""

    def __init__(self):
        self.valid = self.invalid = self.no_output = self.unreadable = 0
        self.codes: dict = {}
        self.repeats: dict = {}  # a problem met again (a mistyped --field): its count after the first


    def line(self, files: int) -> str:
        text = f"{files} file(s), {self.valid + self.invalid} output(s): {self.valid} valid, {self.invalid} invalid"
        if self.no_output:
            text += f"; {self.no_output} record(s) with no output to check"
        if self.unreadable:
            text += f"; {self.unreadable} file(s) could not be read"
        if self.codes:
            text += "\nfindings by code: " + ", ".join(f"{code} {n}" for code, n in sorted(self.codes.items()))
        return text

    def to_dict(self, files: int) -> dict:
        return {"files": files, "outputs": self.valid + self.invalid, "valid": self.valid, "invalid": self.invalid,
                "no_output": self.no_output, "unreadable": self.unreadable, "codes": dict(sorted(self.codes.items()))}


def cmd_validate(args) -> int:
    escape_unencodable_output()
    if args.field is not None and not args.jsonl:
        raise CommandError("--field picks a field of JSONL records: it needs --jsonl")
    several = args.jsonl or len(args.files) > 1 or args.summary
    tally = _Tally()
    progress = Progress()
    tools = read_tools_file(args.tools) if args.tools is not None else None  # before any record

    def report(where: dict, label: str, text: str | None, problem: str | None = None) -> None:
        """One output's result: its diagnostics, or the problem that kept it from being checked."""
        if problem is None:
            try:
                diagnostics = validate(text, max_depth=args.max_depth, tools=tools)
            except RecursionError:
                problem = "nested too deeply to check (lower --max-depth)"
            except ValueError as err:  # a value Python cannot hold, e.g. an integer past int's digit limit
                problem = f"cannot check: {err}"
        if problem is None:
            valid = not any(d.severity == "error" for d in diagnostics)
            result = {"valid": valid, "diagnostics": [d.to_dict() for d in diagnostics]}
            for d in diagnostics:
                tally.codes[d.code] = tally.codes.get(d.code, 0) + 1
        else:
            valid, diagnostics, result = False, [], {"valid": False, "error": problem}
        if valid:
            tally.valid += 1
        elif "line" in where and problem is not None:
            tally.no_output += 1
        else:
            tally.invalid += 1
        if args.summary:
            return
        if args.json:
            progress.clear()
            print(json.dumps({**where, **result}, ensure_ascii=False))
            return
        if problem is not None:
            repeat = (where.get("file"), problem)
            if repeat in tally.repeats:  # said once, counted after (a mistyped --field: every record)
                tally.repeats[repeat] += 1
                return
            if "line" in where and len(tally.repeats) < _REMEMBERED_PROBLEMS:
                tally.repeats[repeat] = 0
            progress.clear()
            print(f"{label}: error: {problem}")
        if diagnostics:  # (a valid output prints nothing: the status line stays)
            progress.clear()
        for d in diagnostics:
            field = f'"{where["field"]}", ' if where.get("field") else ""
            if "line" in where:  # a JSONL record: its line in the file, then the position in the output
                print(f"{label}: {field}line {d.line}, column {d.column}: {d.severity}: {d.message}")
            else:
                print(d.format(label))
            print(caret_lines(text, d.pos))

    for path in args.files:
        name = display_name(path)
        try:
            if args.jsonl:
                for number, record_id, field, output, problem in _jsonl_records(path, args.field):
                    where = {"file": name, "line": number, **({"id": record_id} if record_id is not None else {}),
                             "field": field}
                    report(where, record_label(name, number, record_id), output, problem)
                    progress.show(f"{name}: {number} line(s) read; {tally.valid} valid, {tally.invalid} invalid,"
                                  f" {tally.no_output} with no output")
            else:
                try:
                    text = read_text(path)
                except NotUTF8 as err:  # a finding about this input, like a syntax error
                    if not several:
                        raise
                    report({"file": name}, name, None, err.reason)
                    continue
                report({"file": name}, name, text)
        except (OSError, CommandError) as err:
            if not several:
                raise
            tally.unreadable += 1
            message = os_message(err, with_name=False) if isinstance(err, OSError) else str(err)
            progress.clear()
            if args.json and not args.summary:
                print(json.dumps({"file": name, "valid": False, "error": message}, ensure_ascii=False))
            print(f"gemma4-lark validate: {name}: {message}", file=sys.stderr)
        check_reader()  # after the file: what it had to say is said
    progress.clear()
    if several:
        if args.json:
            print(json.dumps({"summary": tally.to_dict(len(args.files))}))
        else:
            for (name, problem), count in tally.repeats.items():
                if count:
                    print(f"{name}: {count} more record(s): {problem}")
            print(tally.line(len(args.files)))
    if tally.unreadable:
        return 2
    return 1 if tally.invalid or tally.no_output else 0


def register(sub) -> None:
    p = sub.add_parser("validate", help="check blocks, model outputs or transcripts against the grammar",
                       description="Check each input against the grammar; exit 1 if any is invalid. A JSONL "
                                   "record is named by its line and, when it has one, its id field. On a "
                                   "terminal, a status line on standard error says how far a long run is.")
    p.add_argument("files", nargs="+", metavar="FILE", help="input files, or - for standard input")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per input (and a last summary line when there are several)")
    p.add_argument("--summary", action="store_true",
                   help="print only the summary (the counts by verdict and by code; with --json its one line): "
                        "findings are counted, not shown")
    p.add_argument("--jsonl", action="store_true",
                   help="each FILE holds one JSON record per line, the model output in a field (see --field)")
    p.add_argument("--field", metavar="NAME",
                   help='with --jsonl: the field holding the output; dots reach into objects and arrays '
                        f'(a.b.0); default: the first of {", ".join(DEFAULT_FIELDS)}, or the line itself if it is a JSON string')
    p.add_argument("--tools", metavar="tools.json",
                   help="a JSON array of tool declarations: each call is also checked against them (unknown-tool, "
                        "schema, coerced; as parse_output(tools=) decodes)")
    add_max_depth(p)
    p.set_defaults(run=cmd_validate)
