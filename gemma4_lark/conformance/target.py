"""The client of the JSONL protocol (protocol.py): a parser under test run as a process, asked one
request at a time, each answer waited for with a deadline. Both `gemma4-lark conformance run` and
`gemma4-lark fuzz --target` talk to their target through it, so both survive a target that hangs,
floods its output, writes more than one line, crashes or breaks the protocol: each is a `Reply`
with its category, and the next request starts the target again."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

from ..error_base import Gemma4Error
from .protocol import ProtocolError, read_answer, request_line

__all__ = ["DEFAULT_STARTUP", "DEFAULT_STOP_AFTER_HANGS", "DEFAULT_TIMEOUT", "NEVER_ANSWERED", "Reply", "Target",
           "TargetDoesNotRun"]

DEFAULT_TIMEOUT = 5.0
DEFAULT_STARTUP = 30.0
NEVER_ANSWERED = 3  # requests failed by crash or timeout before any answer: the target does not run
DEFAULT_STOP_AFTER_HANGS = 20  # timeouts in a row after which the target has stopped answering


class TargetDoesNotRun(Gemma4Error):
    """The target answered no request: it is not a running parser (a usage error, not a finding)."""


_STDERR_TAIL = 600        # bytes of a dead target's standard error read back to say why it died
_ANSWER_FLOOR = 1 << 20   # an answer line may be this long, plus _ANSWER_PER_REQUEST_BYTE per request byte
_ANSWER_PER_REQUEST_BYTE = 64
_WAIT_STEP = 1.0          # the longest single wait: any deadline works, and a waiting callback is called this often


@dataclass(frozen=True)
class Reply:
    category: str | None   # None: an answer; else "crash", "timeout" or "protocol"
    answer: dict | None
    detail: str = ""


def _shown(data: bytes) -> str:
    return repr(data[:300].decode("utf-8", "replace"))


class Target:
    """A command speaking the protocol on its standard input and output, started again after any
    request it did not answer cleanly. Its standard error goes to a file, whose last line says
    why it crashed.

    A fresh process gets `startup` seconds more for its first answer until some process has
    answered; from then on at most twice what that first answer took, so a target that loads a
    framework is waited for on every start, and one that hangs after a restart is not waited for
    `startup` seconds on every case."""

    def __init__(self, command: str, timeout: float = DEFAULT_TIMEOUT, startup: float = DEFAULT_STARTUP,
                 waiting=None):
        self.command = command
        self.timeout = timeout
        self.startup = startup
        self.waiting = waiting  # called with the seconds waited so far and the limit, about once a second of waiting
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self.answers = 0
        self.first_answer_seconds: float | None = None  # start to first answer, of the first process that answered
        self._started_at = 0.0
        self._buffer = bytearray()
        self._fresh = False
        self._stderr = tempfile.TemporaryFile()

    @property
    def allowance(self) -> float:
        """The seconds a fresh process gets on top of `timeout` for its first answer."""
        if self.first_answer_seconds is None:
            return self.startup
        return min(self.startup, 2 * self.first_answer_seconds)

    def _start(self) -> None:
        self._stderr.seek(0)
        self._stderr.truncate()
        self.process = subprocess.Popen(self.command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr, start_new_session=True)
        os.set_blocking(self.process.stdin.fileno(), False)
        os.set_blocking(self.process.stdout.fileno(), False)
        self.starts += 1
        self._started_at = time.monotonic()
        self._buffer = bytearray()
        self._fresh = True

    def stop(self, grace: float = 1.0) -> None:
        """End the target and every process it started (its own session), after `grace` seconds
        for it to exit on its own once its input is closed."""
        if self.process is None:
            return
        process, self.process = self.process, None
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            process.wait()
        else:  # its children may live on (a shell's pipeline)
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass

    def close(self) -> None:
        self.stop()
        self._stderr.close()

    def _stderr_tail(self) -> str:
        """The end of what the target wrote on standard error: the tail alone is read, however much
        it wrote."""
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - _STDERR_TAIL))
        return self._stderr.read(_STDERR_TAIL).decode("utf-8", "replace").strip()

    def _why_dead(self) -> str:
        code = self.process.poll() if self.process else None
        if code is None:
            try:
                code = self.process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                code = None
        tail = self._stderr_tail()
        said = "closed its output" if code is None else (f"was killed by signal {-code}" if code < 0 else f"exited with status {code}")
        return f"the target {said}" + (f"; its last words on stderr: {tail.splitlines()[-1][:300]}" if tail else "")

    def stray_output(self) -> str:
        """What the target wrote after its last answer and before the next request, as a sentence
        ("" when nothing): more than one line for one request. The target is stopped when there was
        some, as what it writes next cannot be matched with requests. Output that comes after the
        next request is sent cannot be told from that request's answer (docs/conformance.md)."""
        if self.process is None or self._fresh:
            return ""
        stray = bytearray()
        fd = self.process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while len(stray) < 300 and selector.select(0):
                try:
                    piece = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not piece:  # it exited after its answer: the next request finds that out
                    break
                stray += piece
        if not stray:
            return ""
        self.stop()
        return f"more than one line for one request: after the answer came {_shown(bytes(stray))}"

    def ask(self, request: dict) -> Reply:
        if self.process is None:
            self._start()
        limit = self.timeout + (self.allowance if self._fresh else 0)
        asked = time.monotonic()
        deadline = asked + limit
        data = memoryview(request_line(request).encode("ascii"))  # (a view: what is left is not copied per write)
        longest = _ANSWER_FLOOR + _ANSWER_PER_REQUEST_BYTE * len(data)
        stdin, stdout = self.process.stdin.fileno(), self.process.stdout.fileno()
        # The answer grows in a bytearray and each read is searched alone for the newline: linear in
        # the answer's length, however small the pieces it arrives in (so is the request's writing).
        line_end = -1
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if data:
                selector.register(stdin, selectors.EVENT_WRITE)
            while line_end < 0:
                now = time.monotonic()
                left = deadline - now
                if left <= 0:
                    self.stop(grace=0)  # it hangs: it will not exit on its own in time either
                    return Reply("timeout", None, f"no answer in {limit:g} s")
                if self.waiting and now - asked >= _WAIT_STEP:
                    self.waiting(now - asked, limit)
                for key, _ in selector.select(min(left, _WAIT_STEP)):
                    if key.fd == stdin:
                        try:
                            data = data[os.write(stdin, data):]
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            detail = self._why_dead()
                            self.stop()
                            return Reply("crash", None, detail)
                        if not data:
                            selector.unregister(stdin)
                    else:
                        try:
                            piece = os.read(stdout, 1 << 16)
                        except BlockingIOError:
                            continue
                        if not piece:
                            detail = self._why_dead()
                            self.stop()
                            return Reply("crash", None, detail)
                        found = piece.find(b"\n")
                        if found >= 0:
                            line_end = len(self._buffer) + found
                        self._buffer += piece
                        if line_end < 0 and len(self._buffer) > longest:
                            shown = _shown(bytes(self._buffer[:300]))
                            self.stop()
                            return Reply("protocol", None, f"an answer line longer than {longest} bytes, the most "
                                                           f"the kit reads for this request: {shown}")
        line, extra = bytes(self._buffer[:line_end]), bytes(self._buffer[line_end + 1:])
        self._buffer = bytearray()
        if self.first_answer_seconds is None:
            self.first_answer_seconds = time.monotonic() - self._started_at
        self._fresh = False
        self.answers += 1
        if extra:
            self.stop()
            return Reply("protocol", None, f"more than one line for one request: after the answer came {_shown(extra)}")
        try:
            answer = read_answer(line.decode("utf-8"))
            if "error" in answer:
                return Reply("crash", None, f"the target reported an error: {answer['error'][:300]}")
            return Reply(None, answer)
        except UnicodeDecodeError as err:
            problem = f"not UTF-8: {err.reason} at byte {err.start}"
        except ProtocolError as err:
            problem = str(err)
        self.stop()  # what follows the bad line may belong to this request: start clean
        return Reply("protocol", None, f"{problem}: {_shown(line)}")
