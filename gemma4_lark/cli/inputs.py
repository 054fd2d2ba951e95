"""Reading what the commands are given: files or standard input as text, JSON with the position of
its problems, and CommandError, the one-line problem every command reports."""

from __future__ import annotations

import json
import re
import sys

from ..error_base import Gemma4Error


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
        raise CommandError(f"{prefix}{what} nests {depth} levels deep ({line_column(text, pos)}): "
                           f"too deep for Python's JSON reader", code=1) from None


def line_column(text: str, pos: int) -> str:
    """`line L column C` of offset `pos` in `text`, both counted from 1, as JSON's errors say it."""
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {column}"


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def array_item_offset(text: str, index: int) -> int | None:
    """The offset in `text`, a JSON array that json.loads has read, where its item `index` begins;
    None when an item before it nests too deeply to skip. Linear in the items skipped."""
    decoder = json.JSONDecoder()
    pos = _JSON_SPACE.match(text).end() + 1  # past the "["
    try:
        for _ in range(index):
            _, pos = decoder.raw_decode(text, _JSON_SPACE.match(text, pos).end())
            pos = _JSON_SPACE.match(text, pos).end() + 1  # past the ","
    except RecursionError:
        return None
    return _JSON_SPACE.match(text, pos).end()


def item_position(text: str, index: int, what: str = "the item") -> str:
    """Where item `index` of the JSON array `text` begins, as a note for a message ("" when unknown)."""
    pos = array_item_offset(text, index)
    return "" if pos is None else f" ({what} at {line_column(text, pos)})"


def json_list_of_objects(value, text: str, name: str, what: str) -> list:
    """`value`, read from `text`, when it is a JSON array of objects; a CommandError (exit 1)
    naming the file, and the item's position when one is not an object, otherwise."""
    if not isinstance(value, list):
        kind = "an object" if isinstance(value, dict) else f"a JSON {type(value).__name__}"
        raise CommandError(f"{name}: {what} must be a JSON array of objects, not {kind}", code=1)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise CommandError(f"{name}: {what}: item {i} must be an object, not {json.dumps(item)[:40]}"
                               f"{item_position(text, i)}", code=1)
    return value


def os_message(err: OSError, with_name: bool = True) -> str:
    reason = err.strerror or str(err)
    return f"{err.filename}: {reason}" if with_name and err.filename else reason
