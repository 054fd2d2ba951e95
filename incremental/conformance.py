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
import time
from dataclasses import dataclass, field

from gemma4_lark import tokens
from gemma4_lark.conformance import corpus, generate
from gemma4_lark.conformance.protocol import CATEGORIES, PROTOCOL_VERSION, categorize, json_text
from gemma4_lark.conformance.summary import summary  # noqa: F401 - the runner's summary, where the CLI finds it
# the client of the protocol, shared with `fuzz --target` (Reply: what `Target.ask` returns, named here too)
from gemma4_lark.conformance.target import (  # noqa: F401 - Reply, TargetDoesNotRun: API of this module too
    DEFAULT_STARTUP, DEFAULT_STOP_AFTER_HANGS, DEFAULT_TIMEOUT, NEVER_ANSWERED, Reply, Target, TargetDoesNotRun,
)

from .openai import to_openai_message
from .output import collect
from .parser import StreamParser

OPTIONS = ("parse_thinking", "start_in_thinking")  # the request options a case may carry


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
                if target.answers == 0 and category in ("crash", "timeout") and len(report.failed) >= NEVER_ANSWERED:
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
