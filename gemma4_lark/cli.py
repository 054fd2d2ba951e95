"""The `gemma4-lark` command: validate and decode Gemma 4 tool-calling text.

Exit codes: 0 success (input valid), 1 invalid input, 2 usage error or input/output that could not
be read or written. No input makes it print a traceback: every known problem is one line on
standard error that names the file and, where there is one, the position.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import stat
import sys
import time
from contextlib import contextmanager
from importlib import metadata

try:
    import fcntl
except ImportError:  # Windows: no way to ask, and no poll either
    fcntl = None

from . import parser as strict
from .errors import GemmaSyntaxError
from .model import to_jsonable
from .validate import start_rule_of, validate
from .error_base import Gemma4Error

DISTRIBUTION = "gemma4-lark"


class CommandError(Gemma4Error):
    """A problem the user has to fix (unreadable input, wrong JSON, missing extra): printed as one
    line after the command's name, exit `code`."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


# --- reading input ------------------------------------------------------------------------------
def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


def stdin_binary():
    """Standard input as a binary file, or a CommandError when the process was started without one."""
    if sys.stdin is None:  # started with fd 0 closed (`cmd <&-`)
        raise CommandError("standard input is closed (pass a FILE, or give the command an input)")
    return getattr(sys.stdin, "buffer", sys.stdin)


def not_utf8(err: UnicodeDecodeError, offset: int = 0) -> str:
    """What is wrong with bytes that are not UTF-8, with the offset in the file (`offset` is where
    the decoded piece `err.object` starts in it, so a read buffer's offsets never show)."""
    bad = err.object[err.start:err.start + 1]
    byte = f" 0x{bad[0]:02x}" if bad else ""
    return f"not UTF-8: byte{byte} at offset {offset + err.start} of the input: {err.reason}"


class NotUTF8(CommandError):
    def __init__(self, name: str, err: UnicodeDecodeError, offset: int = 0):
        super().__init__(f"{name}: {not_utf8(err, offset)}", code=1)
        self.reason = not_utf8(err, offset)


def read_text(path: str) -> str:
    """The whole input as text. Decoding the bytes in one piece gives UTF-8 errors their offset in
    the file, not in some read buffer."""
    name = display_name(path)
    if path == "-":
        data = stdin_binary().read()
        if isinstance(data, str):  # a text stream standing in for stdin (tests, embedding)
            return data
    else:
        with open(path, "rb") as f:
            data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise NotUTF8(name, err) from None


# A JSON string (closed or not) or a bracket: enough to measure nesting without a recursive reader.
_JSON_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.S)


def _deepest(text: str) -> tuple[int, int]:
    """(depth, offset) of the first point where `text` nests deepest, by brackets outside strings."""
    depth = best = best_pos = 0
    for match in _JSON_NESTING.finditer(text):
        c = match.group()
        if c in "[{":
            depth += 1
            if depth > best:
                best, best_pos = depth, match.start()
        elif c in "]}":
            depth -= 1
    return best, best_pos


def load_json(text: str, name: str, what: str):
    """`text` as JSON, or a CommandError naming the file and the position of the problem."""
    prefix = f"{name}: " if name else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise CommandError(f"{prefix}{what} is not JSON: {err.msg} at line {err.lineno} column {err.colno}",
                           code=1) from None
    except RecursionError:
        # Python's JSON reader recurses once per level and gives up near the interpreter's
        # recursion limit; say where the nesting is instead of the interpreter's stack.
        depth, pos = _deepest(text)
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise CommandError(f"{prefix}{what} nests {depth} levels deep (line {line} column {column}): "
                           f"too deep for Python's JSON reader", code=1) from None


# --- writing output -----------------------------------------------------------------------------
class _ReaderGone(Gemma4Error):
    """Standard output's reader went away (`| head`)."""


class _OutputFailed(Gemma4Error):
    """Standard output cannot be written (closed descriptor, full disk)."""


_POLL: dict = {}  # file descriptor -> its select.poll, or None where nothing can be told


def _poller(fd: int):
    """A poll of `fd` when it is the writing end of a pipe or a socket (where a reader can leave),
    else None: a file, a terminal or a pipe's reading end never says its reader has gone."""
    if fcntl is None or not hasattr(select, "poll"):
        return None
    try:
        mode = os.fstat(fd).st_mode
        writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except OSError:
        return None
    if not writable or not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    poller = select.poll()
    poller.register(fd, select.POLLOUT)  # (POLLERR and POLLHUP are reported whatever the mask)
    return poller


def check_reader() -> None:
    """Raise _ReaderGone when standard output is a pipe or socket whose reader has closed it. For
    the loops that write little as they go (validate's records, parse --format summary and
    openai), asked between pieces of work, so a consumer that leaves stops them early rather than
    at the end of their input: without a write, nothing else would tell. Asked only between
    inputs whose problems are already said, so no error on standard error is skipped."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture it)
        return
    if fd not in _POLL:
        _POLL[fd] = _poller(fd)
    poller = _POLL[fd]
    if poller is not None and any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
        raise _ReaderGone()


class _GuardedStdout:
    """sys.stdout while a command runs: write errors become exceptions that say they are about
    standard output, so a broken pipe to a child process (fuzz --target) is not taken for ours."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise _ReaderGone() from None
        except OSError as err:
            raise _OutputFailed(err.strerror or str(err)) from None

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise _ReaderGone() from None
        except OSError as err:
            raise _OutputFailed(err.strerror or str(err)) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def escape_unencodable_output() -> None:
    """Make standard output write what it cannot encode as a backslash escape instead of failing.
    With UTF-8 that is a lone surrogate (a JSON record's or a target's `\\ud83d`: an emoji cut in
    half), written as the same `\\ud83d`: a valid escape inside a JSON string, readable in text. For
    the commands whose output repeats what they read (validate, conformance)."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


class Progress:
    """One status line on standard error, rewritten in place, for the commands that can run long
    (validate --jsonl, conformance run); written only when standard error is a terminal, as pip
    and pytest do, so logs and pipes get no carriage returns. Whoever prints to the same terminal
    calls clear() first."""

    def __init__(self, stream=None, interval: float = 0.2):
        self.stream = sys.stderr if stream is None else stream
        try:
            self.enabled = bool(self.stream.isatty())
        except (AttributeError, OSError, ValueError):
            self.enabled = False
        self.interval = interval
        self._shown_at = float("-inf")
        self._width = 0

    def show(self, text: str) -> None:
        """Say `text`, unless the line was rewritten less than `interval` seconds ago."""
        if not self.enabled or time.monotonic() - self._shown_at < self.interval:
            return
        self._shown_at = time.monotonic()
        width = max(20, _terminal_columns() - 1)
        if len(text) > width:  # the end says how far: a long file name gives way
            text = "..." + text[len(text) - width + 3:]
        self._write("\r" + text + " " * max(0, self._width - len(text)))
        self._width = len(text)

    def clear(self) -> None:
        if self.enabled and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0
            self._shown_at = float("-inf")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on without a status
            self.enabled = False


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size(2).columns
    except (OSError, ValueError):
        return 80


def _discard_stdout() -> None:
    """Point fd 1 at the null device, so the interpreter's last flush at exit has nowhere to fail."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture it)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


# --- positions ----------------------------------------------------------------------------------
_EXCERPT = 60  # characters shown either side of a caret
_SURROGATE = re.compile("[\ud800-\udfff]")  # each is written as a six-character escape


def caret_lines(text: str, pos: int) -> str:
    """The line around offset `pos`, cut to about 2 * _EXCERPT characters, and a caret under `pos`.
    Bounded work and output per finding, however long the line is."""
    low, high = max(0, pos - _EXCERPT), min(len(text), pos + _EXCERPT)
    start = text.rfind("\n", low, pos) + 1 or low
    end = text.find("\n", pos, high)
    if end < 0:
        end = high
    prefix = "..." if start > 0 and text[start - 1] != "\n" else ""
    suffix = "..." if end < len(text) and text[end] != "\n" else ""
    escapes = len(_SURROGATE.findall(text, start, pos))
    return f"{prefix}{text[start:end]}{suffix}\n{' ' * (len(prefix) + pos - start + 5 * escapes)}^"


# --- validate -----------------------------------------------------------------------------------
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


def _load_tools(path: str):
    """The --tools file, compiled once (a malformed tool is a usage error, found before any record)."""
    from .schema.registry import compile_tools

    name = display_name(path)
    tools = load_json(read_text(path), name, "the tools file")
    try:
        compile_tools(tools)
    except ImportError as err:
        raise CommandError(f"--tools needs the schema extra: {err} (pip install 'gemma4-lark[schema]')") from None
    except (ValueError, TypeError) as err:
        raise CommandError(f"{name}: {err}") from None
    return tools


def cmd_validate(args) -> int:
    escape_unencodable_output()
    if args.field is not None and not args.jsonl:
        raise CommandError("--field picks a field of JSONL records: it needs --jsonl")
    several = args.jsonl or len(args.files) > 1 or args.summary
    tally = _Tally()
    progress = Progress()
    tools = _load_tools(args.tools) if args.tools is not None else None

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
        progress.clear()
        if args.json:
            print(json.dumps({**where, **result}, ensure_ascii=False))
            return
        if problem is not None:
            repeat = (where.get("file"), problem)
            if repeat in tally.repeats:  # said once, counted after (a mistyped --field: every record)
                tally.repeats[repeat] += 1
                return
            if "line" in where and len(tally.repeats) < _REMEMBERED_PROBLEMS:
                tally.repeats[repeat] = 0
            print(f"{label}: error: {problem}")
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


# --- decode, render, docs ----------------------------------------------------------
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


def _json_list_of_objects(value, name: str, what: str) -> list:
    if not isinstance(value, list):
        kind = "an object" if isinstance(value, dict) else f"a JSON {type(value).__name__}"
        raise CommandError(f"{name}: {what} must be a JSON array of objects, not {kind}", code=1)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise CommandError(f"{name}: {what}: item {i} must be an object, not {json.dumps(item)[:40]}", code=1)
    return value


def cmd_render(args) -> int:
    from .render import official, omp
    from .render.safety import UnsafeContentError

    name = display_name(args.messages)
    messages = _json_list_of_objects(load_json(read_text(args.messages), name, "the messages file"),
                                     name, "the messages")
    tools = None
    if args.tools:
        tools_name = display_name(args.tools)
        tools = _json_list_of_objects(load_json(read_text(args.tools), tools_name, "the tools file"),
                                      tools_name, "the tools")
    try:
        if args.profile == "official":
            text = official.render_chat(messages, tools, add_generation_prompt=args.generation_prompt,
                                        enable_thinking=args.thinking, variant=args.variant, unsafe=args.unsafe,
                                        unmatched_tool_call_id=args.unmatched_tool_call_id)
        else:  # OpenAI's shape or OMP's, told apart by the messages
            text = omp.render_transcript(messages, unsafe=args.unsafe,
                                         unmatched_tool_call_id=args.unmatched_tool_call_id)
            if tools:
                text = omp.render_tool_prompt(tools, unsafe=args.unsafe) + "\n\n" + text
    except UnsafeContentError as err:
        raise CommandError(str(err), code=1) from None
    except KeyError as err:
        raise CommandError(f"a message or tool lacks the field {err.args[0]!r}", code=1) from None
    except RecursionError:
        raise CommandError("the messages or tools nest too deeply to render", code=1) from None
    except (ValueError, TypeError, AttributeError) as err:
        # a field of the wrong JSON type deep inside a message or tool
        raise CommandError(f"a message or tool has a field of the wrong type or value: {err}", code=1) from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        # JSON's \uD800 escapes decode to lone surrogates, which no UTF-8 text can hold
        where = _surrogate_field({"messages": messages, "tools": tools}) or "the input"
        raise CommandError(f"{where} holds a lone surrogate (U+{ord(text[err.start]):04X}, from a \\u escape), which"
                           " UTF-8 cannot encode", code=1) from None
    sys.stdout.write(text)
    return 0


def _surrogate_field(value) -> str | None:
    """The first field (`messages[1].content`) whose string holds a lone surrogate, looking into
    JSON string arguments too; an explicit stack, as the input may nest deeply."""
    from .render.safety import describe

    stack = [(value, None)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if any("\ud800" <= c <= "\udfff" for c in item):
                return describe(where)
            if isinstance(where, tuple) and where[1] == "arguments":
                try:
                    stack.append((json.loads(item), where))
                except (ValueError, RecursionError):
                    pass
        elif isinstance(item, dict):
            stack.extend((v, k if where is None else (where, k)) for k, v in reversed(item.items()))
            stack.extend((k, where) for k in item if isinstance(k, str))
        elif isinstance(item, list):
            stack.extend((v, (where, i)) for i, v in reversed(list(enumerate(item))))
    return None


def cmd_docs(args) -> int:
    import pathlib

    if args.check and not pathlib.Path(args.out).is_dir():
        raise CommandError(
            f"no directory {args.out!r} to check: `docs --check` compares the spec pages in a checkout of "
            "the repository (run it from the repository's root, or pass --out DIR)")
    with optional_dependencies("docs"):
        from . import docs

        return docs.main(args.out, args.check)


# --- optional dependencies ----------------------------------------------------------------------
# The distribution that provides each optional top-level module, to find the extra naming it.
_OPTIONAL_MODULES = {"hypothesis": "hypothesis", "railroad": "railroad-diagrams"}


def missing_extra(err: ModuleNotFoundError, command: str) -> CommandError:
    """The message for an optional dependency that is not installed: which extra brings it (read from
    this distribution's metadata, so it follows pyproject.toml)."""
    module = (err.name or "").split(".")[0]
    dist = _OPTIONAL_MODULES.get(module, module)
    extras = []
    try:
        for requirement in metadata.requires(DISTRIBUTION) or []:
            head, _, marker = requirement.partition(";")
            if re.match(re.escape(dist) + r"(?![\w.-])", head.strip(), re.I) and "extra" in marker:
                extras += re.findall(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        pass
    how = (f"pip install '{DISTRIBUTION}[{extras[0]}]'" if extras else f"pip install {dist}")
    return CommandError(f"`{command}` needs {dist}, which is not installed (an optional dependency): {how}")


@contextmanager
def optional_dependencies(command: str):
    """Around code that imports optional dependencies: a missing one becomes a CommandError that
    says what to install."""
    try:
        yield
    except ModuleNotFoundError as err:
        if err.name and err.name.split(".")[0] in _OPTIONAL_MODULES:
            raise missing_extra(err, command) from None
        raise


# --- arguments ----------------------------------------------------------------------------------
def at_least(minimum: int):
    """An argparse type: an integer >= minimum (a usage error, exit 2, otherwise)."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    convert.__name__ = f"integer >= {minimum}"
    return convert


def add_max_depth(p) -> None:
    p.add_argument("--max-depth", type=at_least(1), default=strict.DEFAULT_MAX_DEPTH, metavar="N",
                   help=f"nesting deeper than N arrays/objects is an error (default {strict.DEFAULT_MAX_DEPTH})")


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "(not installed)"

def cmd_grammar(args) -> int:
    from . import constrain

    tools = None
    if args.tools is not None:
        tools = load_json(read_text(args.tools), display_name(args.tools), "the tool list")
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


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="gemma4-lark", description=__doc__.splitlines()[0],
                                 epilog="Exit codes: 0 valid/success, 1 invalid input, 2 usage or I/O error.")
    ap.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

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

    p = sub.add_parser("decode", help="print the decoded block(s) as JSON")
    p.add_argument("file", metavar="FILE", help="input file, or - for standard input")
    p.add_argument("--indent", type=at_least(0), default=None, metavar="N",
                   help="indent the JSON by N spaces (default: one line)")
    add_max_depth(p)
    p.set_defaults(run=cmd_decode)

    p = sub.add_parser("docs", help="generate the spec pages from the grammar")
    p.add_argument("--out", default="docs/spec", metavar="DIR",
                   help="where the pages go (default docs/spec, relative to the current directory)")
    p.add_argument("--check", action="store_true", help="exit 1 listing stale files instead of writing")
    p.set_defaults(run=cmd_docs)

    p = sub.add_parser("render", help="render a conversation as a Gemma 4 prompt")
    p.add_argument("messages", metavar="messages.json",
                   help="a JSON array of messages (OpenAI shape; for omp also OMP shape, told apart by its"
                        " toolResult messages and toolCall/thinking parts), or - for standard input")
    p.add_argument("--profile", choices=["official", "omp"], default="official",
                   help="official: Google's chat template; omp: oh-my-pi's prompt (default official)")
    p.add_argument("--tools", metavar="tools.json", help="a JSON array of tool declarations (OpenAI shape or bare function schemas)")
    p.add_argument("--generation-prompt", action="store_true", help="end with the opening of a model turn")
    p.add_argument("--thinking", action="store_true", help="official: turn thinking on in the system turn")
    p.add_argument("--variant", choices=["e2b", "31b"], default="e2b",
                   help="official: which model's template (they differ in the generation prompt; default e2b)")
    p.add_argument("--unsafe", choices=["error", "strip", "allow"], default="error",
                   help="what to do with control tokens inside content: refuse (default), remove, or keep")
    p.add_argument("--unmatched-tool-call-id", choices=["error", "keep"], default="error",
                   help="a tool message that answers no call of the message before it: refuse (default) or"
                        " render it as the official template does")
    p.set_defaults(run=cmd_render)

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

    # Commands of packages built on this one (the streaming layer's `parse` and `demo`) are
    # registered as entry points, so this package never imports them by name.
    for entry in sorted(metadata.entry_points(group="gemma4_lark.commands"), key=lambda e: e.name):
        entry.load()(sub)
    return ap


def os_message(err: OSError, with_name: bool = True) -> str:
    reason = err.strerror or str(err)
    return f"{err.filename}: {reason}" if with_name and err.filename else reason


def main(argv=None) -> int:
    if sys.stderr is None:  # started with fd 2 closed: print(file=None) would write to stdout
        sys.stderr = open(os.devnull, "w")
    args = build_parser().parse_args(argv)
    prog = f"gemma4-lark {args.command}"
    if sys.stdout is None:  # started with fd 1 closed (`cmd >&-`): Python drops every print
        print(f"{prog}: standard output is closed; nothing can be written", file=sys.stderr)
        return 2
    stdout, sys.stdout = sys.stdout, _GuardedStdout(sys.stdout)
    try:
        code = args.run(args)
        sys.stdout.flush()  # a write error surfaces here, while it can still be reported
        return code
    except _ReaderGone:  # `| head`: the reader has what it wanted; not an error of ours
        _discard_stdout()
        return 0
    except _OutputFailed as err:
        print(f"{prog}: cannot write to standard output: {err}", file=sys.stderr)
        _discard_stdout()
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
