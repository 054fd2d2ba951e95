"""The status line of a long command on a terminal."""

from __future__ import annotations

import os
import sys
import time


class Progress:
    """One status line on standard error, rewritten in place, for the commands that can run long
    (validate --jsonl, conformance run); written only when standard error is a terminal, as pip
    and pytest do, so logs and pipes get no carriage returns. Whoever prints to the same terminal
    calls clear() just before it prints (not before work that prints nothing: that would rewrite
    the line once per record)."""

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
        """Blank the line, when one is shown. It comes back at the next show() after `interval`: a
        run that prints many findings redraws it a few times a second, not once per finding."""
        if self.enabled and self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the work goes on without a status
            self.enabled = False


def _terminal_columns() -> int:
    try:
        columns = os.get_terminal_size(2).columns
    except (OSError, ValueError):
        return 80
    return columns or 80  # a terminal whose size nobody set (a fresh pseudo-terminal) says 0
