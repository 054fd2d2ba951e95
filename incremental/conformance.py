"""The conformance run: the kit's cases sent to a parser under test, each answer judged, the
disagreements reported by category with the smallest failing input of each (docs/conformance.md).

    run(command, ...)   a Report: every case sent to the target, one process restarted after any
                        case that crashed, hung or broke the protocol
    serve(...)          this project's parser as a target (`gemma4-lark conformance serve`)
    expected_answer()   the answer the kit expects for a generated case: the streaming parser in
                        strict mode, a rejected block's raw text kept in `text` as
                        `to_openai_message` keeps it in `content`

Corpus cases carry their answers in their files; generated and mutated ones are judged against
this project's parser, which passes every corpus case.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from gemma4_lark import tokens
from gemma4_lark.error_base import Gemma4Error
from gemma4_lark.conformance import corpus, generate
from gemma4_lark.conformance.protocol import (
    CATEGORIES, PROTOCOL_VERSION, ProtocolError, categorize, json_text, read_answer, request_line,
)
from gemma4_lark.conformance.summary import summary  # noqa: F401 - the runner's summary, where the CLI finds it

from .openai import to_openai_message
from .output import collect
from .parser import StreamParser

OPTIONS = ("parse_thinking", "start_in_thinking")  # the request options a case may carry
DEFAULT_TIMEOUT = 5.0
DEFAULT_STARTUP = 30.0
_NEVER_ANSWERED = 3  # cases failed by crash or timeout before any answer: the target does not run
DEFAULT_STOP_AFTER_HANGS = 20  # timeouts in a row after which the target has stopped answering


def expected_answer(request: dict) -> dict:
    options = {k: v for k, v in (request.get("options") or {}).items() if k in OPTIONS}
    parser = StreamParser(strict=True, id_factory=iter(range(1 << 62)).__next__, **options)
    out = collect(parser.feed(request["text"]) + parser.flush())
    return {"calls": [{"name": c.name, "arguments": c.arguments} for c in out.calls],
            "text": to_openai_message(out)["content"] or ""}


def serve(stdin, stdout) -> None:
    """Answer each request line of `stdin` (bytes or text) on `stdout` as the kit expects. A line
    that is not a request (not UTF-8, not JSON, nested past the JSON reader, not the shape) gets an
    answer with an "error", and the next line is read: no request ends the loop."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            if isinstance(line, bytes):
                line = line.decode("utf-8")
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("text"), str):
                raise TypeError('a request is a JSON object whose "text" is a string')
            answer = expected_answer(request)
        except UnicodeDecodeError as err:
            answer = {"error": f"the request is not UTF-8: {err.reason} at byte {err.start} of its line"}
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as err:
            answer = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
        stdout.write(json_text(answer) + "\n")  # (a lone surrogate of the request goes back escaped)
        stdout.flush()


# --- the target process -----------------------------------------------------------------------------
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


# --- the run ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Failure:
    id: str
    category: str
    request: dict
    expected: dict
    got: object          # the answer, or for crash, timeout and protocol what happened
    detail: str = ""

    def to_dict(self) -> dict:
        entry = {"id": self.id, "category": self.category, "input": self.request["text"],
                 "expected": self.expected, "got": self.got}
        if self.request.get("options"):
            entry["options"] = self.request["options"]
        if self.detail:
            entry["detail"] = self.detail
        return entry


@dataclass
class Report:
    target: str
    cases: int = 0
    passed: int = 0
    failed: list = field(default_factory=list)
    smallest: dict = field(default_factory=dict)   # category: (the failure shrunk, the id it came from, its length)
    seconds: float = 0.0
    starts: int = 0
    seed: int = 0
    counts: dict = field(default_factory=dict)      # cases per kind: corpus, generated, mutated
    not_sent: int = 0                               # cases left when the run gave up on a hanging target

    @property
    def by_category(self) -> dict:
        tally = {}
        for failure in self.failed:
            tally[failure.category] = tally.get(failure.category, 0) + 1
        return {c: tally[c] for c in CATEGORIES if c in tally}

    def to_dict(self) -> dict:
        return {
            "target": self.target, "cases": self.cases, "passed": self.passed,
            "failed": [f.to_dict() for f in self.failed],
            "categories": self.by_category,
            "smallest": {c: {**shrunk.to_dict(), "id": origin, "original_length": length}
                         for c, (shrunk, origin, length) in self.smallest.items()},
            "corpus_version": corpus.VERSION, "protocol": PROTOCOL_VERSION,
            "seed": self.seed, "kinds": self.counts, "seconds": round(self.seconds, 3), "target_starts": self.starts,
            "not_sent": self.not_sent,
        }


class TargetDoesNotRun(Gemma4Error):
    """The target answered no case: it is not a running parser (a usage error, not a finding)."""


def cases(seed: int = 0, generated: int = 200, mutated: int = 200) -> list[corpus.TargetCase]:
    found = corpus.target_cases()
    outputs = generate.generated(seed, generated)
    found += [corpus.TargetCase(f"generated/{i}", {"text": t}, expected_answer({"text": t})) for i, t in enumerate(outputs)]
    bases = [c.request["text"] for c in found if c.id.startswith("valid/")] + outputs
    found += [corpus.TargetCase(f"mutated/{i}", {"text": t}, expected_answer({"text": t}))
              for i, t in enumerate(generate.mutated(seed, mutated, bases))]
    return found


def _judge(target: Target, request: dict, expected: dict) -> tuple[str | None, object, str]:
    """(category or None, the answer or what happened, the target's stray output after its previous
    answer: "" when there was none)."""
    stray = target.stray_output()
    reply = target.ask(request)
    if reply.category:
        return reply.category, reply.detail, stray
    return categorize(expected, reply.answer), reply.answer, stray


def _wrote_more(report: Report, case: corpus.TargetCase, stray: str) -> None:
    """The previous case's verdict, made a `protocol` failure: its answer was followed by more."""
    if report.failed and report.failed[-1].id == case.id:
        report.failed.pop()
    else:
        report.passed -= 1
    report.failed.append(Failure(case.id, "protocol", case.request, case.answer, stray))


_ATOMS = sorted(set(tokens.CONTROL_TOKENS), key=len, reverse=True)


def _atoms(text: str) -> list[str]:
    """The text as control tokens and single characters: a shrink step never cuts a token."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "<":
            token = next((t for t in _ATOMS if text.startswith(t, i)), None)
            if token:
                out.append(token)
                i += len(token)
                continue
        out.append(text[i])
        i += 1
    return out


def shrink(target: Target, failure: Failure, seconds: float) -> Failure:
    """A smaller input failing in the same category (delta debugging over tokens and characters,
    each candidate's expected answer from this project's parser), within `seconds`."""
    deadline = time.monotonic() + seconds
    options = failure.request.get("options")
    best = failure

    def attempt(atoms) -> Failure | None:
        request = {"text": "".join(atoms), **({"options": options} if options else {})}
        expected = expected_answer(request)
        category, got, _ = _judge(target, request, expected)
        return Failure(failure.id, category, request, expected, got) if category == failure.category else None

    atoms = _atoms(failure.request["text"])
    parts = 2
    while len(atoms) >= 2 and time.monotonic() < deadline:
        size = -(-len(atoms) // parts)
        for start in range(0, len(atoms), size):
            if time.monotonic() >= deadline:
                break
            smaller = attempt(atoms[:start] + atoms[start + size:])
            if smaller:
                atoms, best = atoms[:start] + atoms[start + size:], smaller
                parts = max(parts - 1, 2)
                break
        else:
            if size == 1:
                break
            parts = min(parts * 2, len(atoms))
    return best


def run(command: str, *, timeout: float = DEFAULT_TIMEOUT, startup: float = DEFAULT_STARTUP, seed: int = 0,
        generated: int = 200, mutated: int = 200, shrink_seconds: float = 10.0,
        stop_after_hangs: int = DEFAULT_STOP_AFTER_HANGS, status=None) -> Report:
    """Send every case to `command`; a Report of what it got wrong. Raises TargetDoesNotRun when
    the first cases all crash or time out and the target never answered. After `stop_after_hangs`
    timeouts in a row (0: never) the target has stopped answering: the cases left are not sent
    (`Report.not_sent`). `status(text)`, when given, is told how far the run is: after each case,
    about once a second while the target says nothing, and before each shrink."""
    status = status or (lambda text: None)
    start = time.monotonic()
    todo = cases(seed, generated, mutated)
    report = Report(command, seed=seed, counts={
        "corpus": sum(1 for c in todo if not c.id.startswith(("generated/", "mutated/"))),
        "generated": generated, "mutated": mutated})
    target = Target(command, timeout, startup)
    hangs = 0
    try:
        previous = None
        for number, case in enumerate(todo, 1):
            target.waiting = lambda seconds, limit, n=number, i=case.id: status(
                f"case {n}/{len(todo)} ({i}): no answer yet, {seconds:.0f} s of {limit:g} s")
            category, got, stray = _judge(target, case.request, case.answer)
            if stray and previous:
                _wrote_more(report, previous, stray)
            previous = case
            report.cases += 1
            if category is None:
                report.passed += 1
            else:
                report.failed.append(Failure(case.id, category, case.request, case.answer, got))
                if target.answers == 0 and category in ("crash", "timeout") and len(report.failed) >= _NEVER_ANSWERED:
                    raise TargetDoesNotRun(got)
            status(f"case {number}/{len(todo)}: {report.passed} passed, {len(report.failed)} failed")
            hangs = hangs + 1 if category == "timeout" else 0
            if stop_after_hangs and hangs >= stop_after_hangs:
                report.not_sent = len(todo) - number
                break
        stray = target.stray_output()
        if stray and previous:
            _wrote_more(report, previous, stray)
        target.waiting = None
        for category in CATEGORIES:
            failures = [f for f in report.failed if f.category == category]
            if failures:
                first = min(failures, key=lambda f: len(f.request["text"]))
                status(f"shrinking the smallest {category} failure ({first.id}), {shrink_seconds:g} s at most")
                report.smallest[category] = (shrink(target, first, shrink_seconds), first.id, len(first.request["text"]))
    finally:
        report.starts = target.starts
        target.close()
        report.seconds = time.monotonic() - start
    return report
