"""Findings about input: what `validate` and the lenient decoder report. No parser code here, so
the hand-written reference implementation can use it too."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple


class Code(NamedTuple):
    """A diagnostic code: the page whose code table says what it means, and its message as a
    `str.format` template when more than one module writes it (else each finding's message is
    written where it is found)."""

    page: str
    message: str | None = None


_LENIENCY = "docs/leniency.md"  # its table of recoveries
_SCHEMA = "docs/schema.md"      # its error codes and the diagnostic codes it adds

# Every code a Diagnostic carries (tests/unit/test_diagnostics.py checks that the packages write no
# other, and that each page's table lists its codes and no more).
CODES: dict[str, Code] = {
    **{code: Code(_LENIENCY) for code in (
        "missing-closer", "missing-bracket", "mismatched-closer", "trailing-comma", "empty-member", "missing-value",
        "missing-comma", "comma-in-word", "text-after-object", "second-call", "unterminated-string",
        "unterminated-string-at-end", "stray-delimiter", "interior-delimiter", "json-string", "single-quoted-string",
        "equals", "paren-call", "stray-colon", "spaced-head", "malformed-number", "number-too-long", "unreadable-key",
        "functiongemma-escape", "more-diagnostics", "missing-opener", "missing-call-keyword")},
    "duplicate-key": Code(_LENIENCY, "duplicate key `{!s:.40}`: the last value wins"),
    **{code: Code(_SCHEMA) for code in (
        "syntax", "too-deep", "internal", "coerced", "schema", "unknown-tool", "missing-call", "string-run")},
}

TOOL_CALL_ERROR_CODES = frozenset({
    "syntax", "unclosed", "lossy", "too-large", "too-deep", "unknown-tool", "tool-choice", "schema", "unreadable",
    "internal",
})
"""Every `ToolCallError.code` (docs/schema.md, "Error codes", says what each means)."""


def message(code: str, *fields) -> str:
    """The message of `code` with its `fields` (for a code whose message more than one module writes)."""
    return CODES[code].message.format(*fields)


@dataclass(frozen=True)
class Diagnostic:
    """One finding of `validate` (or of a lenient decode): severity "error" or "warning".

    `pos` is where the finding starts (an offset into the text checked) and `end` where the text it
    covers ends: what a lenient decode skipped, ignored or read in an unusual way lies in
    `[pos, end)`. A finding about a point (a missing comma) has `end == pos`, the default.
    """

    severity: str
    code: str
    message: str
    line: int
    column: int
    pos: int
    end: int | None = None

    def __post_init__(self):
        if self.end is None:
            object.__setattr__(self, "end", self.pos)

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def format(self, filename: str = "<input>") -> str:
        return f"{filename}:{self.line}:{self.column}: {self.severity}: {self.message}"

    @classmethod
    def from_error(cls, err, offset: int = 0, source: str | None = None):
        """From a GemmaSyntaxError, shifted by `offset` into `source`."""
        pos = err.pos + offset
        line, column = line_and_column(source, pos) if source is not None else (err.line, err.column)
        return cls("error", "syntax", err.message, line, column, pos)


def line_and_column(source: str, pos: int) -> tuple[int, int]:
    """1-based line and column of a 0-based offset."""
    line = source.count("\n", 0, pos) + 1
    column = pos - (source.rfind("\n", 0, pos) + 1) + 1
    return line, column


class LineIndex:
    """Line and column of many offsets into one text, each in O(log lines).

    `line_and_column` counts newlines from the start of the text, so reporting k findings in a text
    of n characters costs O(k n): quadratic when the findings grow with the text. Whatever reports
    more than one position into the same text builds one index and asks it instead. The newlines
    are found lazily, only as far as the furthest offset asked for.
    """

    __slots__ = ("_source", "_starts", "_scanned")

    def __init__(self, source: str):
        self._source = source
        self._starts = [0]  # offset where each line starts
        self._scanned = 0   # newlines before this offset are all in _starts

    def _scan_to(self, pos: int) -> None:
        starts, find = self._starts, self._source.find
        i = self._scanned
        while True:
            j = find("\n", i, pos)
            if j < 0:
                break
            starts.append(j + 1)
            i = j + 1
        self._scanned = pos

    def line_and_column(self, pos: int) -> tuple[int, int]:
        """1-based line and column of a 0-based offset (as `line_and_column(source, pos)`)."""
        if pos > self._scanned:
            self._scan_to(pos)
        line = bisect_right(self._starts, pos)  # the lines that start at or before `pos`
        return line, pos - self._starts[line - 1] + 1


# How much of a line an error message shows: long lines (a minified 4 MB output is one line) are
# cut to this many characters around the error, so a message costs the same on any input.
SHOWN_LINE_CHARS = 100


def shown_line(source: str, pos: int, line_start: int) -> tuple[str, int]:
    """The line of `source` holding `pos` as a message shows it, and the caret's offset in it.

    `line_start` is where that line starts. A line longer than `SHOWN_LINE_CHARS` is cut around
    `pos`, each cut marked with `…`. Reads O(SHOWN_LINE_CHARS) characters, never the whole line.
    """
    width = SHOWN_LINE_CHARS
    lo = max(line_start, pos - width // 2)
    limit = lo + width
    newline = source.find("\n", pos, limit)
    hi = newline if newline >= 0 else min(len(source), limit)
    cut_right = hi == limit and hi < len(source) and source[hi] != "\n"
    if lo > line_start and not cut_right and hi - line_start <= width:
        lo = line_start  # the whole line fits after all
    cut_left = lo > line_start
    shown = ("…" if cut_left else "") + source[lo:hi] + ("…" if cut_right else "")
    return shown, pos - lo + cut_left
