"""Writing standard output: a reader that leaves (`| head`) stops a command quietly, a write that
fails is one line on standard error, and a finding's position is shown with a caret."""

from __future__ import annotations

import os
import re
import select
import stat
import sys

try:
    import fcntl
except ImportError:  # Windows: no way to ask, and no poll either
    fcntl = None

from ..error_base import Gemma4Error


# --- writing output -----------------------------------------------------------------------------
class ReaderGone(Gemma4Error):
    """Standard output's reader went away (`| head`)."""


class OutputFailed(Gemma4Error):
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
    """Raise ReaderGone when standard output is a pipe or socket whose reader has closed it. For
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
        raise ReaderGone()


class GuardedStdout:
    """sys.stdout while a command runs: write errors become exceptions that say they are about
    standard output, so a broken pipe to a child process (fuzz --target) is not taken for ours."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone() from None
        except OSError as err:
            raise OutputFailed(err.strerror or str(err)) from None

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone() from None
        except OSError as err:
            raise OutputFailed(err.strerror or str(err)) from None

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

def discard_stdout() -> None:
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
