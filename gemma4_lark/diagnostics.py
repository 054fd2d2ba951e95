"""Findings about input: what `validate` and the lenient decoder report. No parser code here, so
the hand-written reference implementation can use it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Diagnostic:
    """One finding of `validate` (or of a lenient decode): severity "error" or "warning"."""

    severity: str
    code: str
    message: str
    line: int
    column: int
    pos: int

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
