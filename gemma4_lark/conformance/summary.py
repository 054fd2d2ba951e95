"""The terminal summary of a conformance run: failures by category, each category's failures by
kind (so two different argument bugs do not read as one), the failing cases by name, and the
smallest input of each category (docs/conformance.md#running-it).

    summary(report)        the text a maintainer reads
    difference(failure)    the kind of one failure and where it shows, e.g. ("an integer given as
                           a string", 'calls[0].arguments.n: expected 1, got "1"')

`report` is the runner's Report (gemma4_incremental.conformance); only its attributes are read.
"""

from __future__ import annotations

import json
import math
import re
import textwrap

from . import corpus
from .protocol import CATEGORIES, PROTOCOL_VERSION, same

EXAMPLE_KINDS = 5     # kinds of failure shown per category, one example each
NAMED_CASES = 12      # failing cases named per category (the report has them all)
_WIDTH = 110
_CONTROL = re.compile("[\x00-\x1f\x7f]")

# Differences a standard JSON writer makes whatever the parser found: JavaScript's JSON.stringify
# writes 1.0 as 1 and -0.0 as 0, Go's encoding/json writes 1.0 as 1, and a number held as a double
# loses the digits of an integer past 2**53.
NUMBER_WRITING = {
    "a float written as an integer (1.0 as 1)",
    "-0.0 written as 0",
    "an integer past 2**53 rounded to a double",
}


def _kind_of(value) -> str:
    return {type(None): "null", bool: "a boolean", int: "an integer", float: "a float", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def _short(value, width: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."


def _value_difference(path: str, want, have) -> tuple[str, str] | None:
    """(kind, where) of the first place two JSON values differ, or None when they are the same."""
    if same(want, have):
        return None
    if isinstance(want, dict) and isinstance(have, dict):
        for key in want:
            if key not in have:
                return "a key missing", f"{path}: no key {_short(key)}"
        for key in have:
            if key not in want:
                return "an extra key", f"{path}: key {_short(key)} is not expected"
        return next(found for key in want if (found := _value_difference(f"{path}.{key}", want[key], have[key])))
    if isinstance(want, list) and isinstance(have, list):
        if len(want) != len(have):
            return "an array of another length", f"{path}: {len(want)} items expected, got {len(have)}"
        return next(found for i, (w, h) in enumerate(zip(want, have)) if (found := _value_difference(f"{path}[{i}]", w, h)))
    where = f"{path}: expected {_short(want)}, got {_short(have)}"
    if type(want) is float and want == 0 and math.copysign(1, want) < 0 and have == 0 and type(have) in (int, float):
        return "-0.0 written as 0", where
    if type(want) is float and type(have) is int and want == have:
        return "a float written as an integer (1.0 as 1)", where
    if type(want) is int and type(have) is float and abs(want) > 2 ** 53 and float(want) == have:
        return "an integer past 2**53 rounded to a double", where
    if type(want) is not type(have):
        return f"{_kind_of(want)} given as {_kind_of(have)}", where
    return f"{_kind_of(want)} with another value", where


def difference(failure) -> tuple[str, str]:
    """(the kind of this failure, where it shows): failures of one kind are one bug, most likely."""
    category, want, have = failure.category, failure.expected, failure.got
    if category in ("crash", "timeout", "protocol"):
        said = str(have)
        return said.split(":")[0].split(";")[0][:60], said
    if category == "accepts-invalid":
        return "a call made of a rejected block", f"expected {len(want['calls'])} call(s), got {len(have['calls'])}"
    if category == "calls":
        names = ([c["name"] for c in want["calls"]], [c["name"] for c in have["calls"]])
        kind = ("a call missing" if len(names[1]) < len(names[0]) else "an extra call" if len(names[1]) > len(names[0])
                else "another name or order")
        return kind, f"calls: expected {_short(names[0])}, got {_short(names[1])}"
    if category == "arguments":
        return next(found for i, (w, h) in enumerate(zip(want["calls"], have["calls"]))
                    if (found := _value_difference(f"calls[{i}].arguments", w["arguments"], h["arguments"])))
    lost, gained = len(want["text"]) > len(have["text"]), len(want["text"]) < len(have["text"])
    kind = "text with characters lost" if lost else "text with characters added" if gained else "text with other characters"
    return kind, f"text: expected {_short(want['text'])}, got {_short(have['text'])}"


def _show(value, width: int = _WIDTH) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = json.dumps(text, ensure_ascii=False)[1:-1] if isinstance(value, str) else text
    return text if len(text) <= width else text[:width - 3] + "..."


def _plain(text: str, width: int) -> str:
    """A line of the summary: control characters escaped, cut to `width`."""
    text = _CONTROL.sub(lambda m: json.dumps(m.group())[1:-1], text)
    return text if len(text) <= width else text[:width - 3] + "..."


def _by_kind(failures: list) -> dict:
    """kind: (count, the first failure of that kind, where it shows), most frequent first."""
    kinds: dict = {}
    for failure in failures:
        kind, where = difference(failure)
        count, first, shown = kinds.get(kind, (0, failure, where))
        kinds[kind] = (count + 1, first, shown)
    return dict(sorted(kinds.items(), key=lambda item: -item[1][0]))


def summary(report) -> str:
    """The table a maintainer reads: failures per category, their kinds with an example each, the
    failing cases by name, then the smallest input of each category."""
    lines = [f"gemma4-lark conformance (corpus {corpus.VERSION}, protocol {PROTOCOL_VERSION}) against: {report.target}",
             f"{report.cases} cases ({report.counts.get('corpus', 0)} from the corpus, {report.counts.get('generated', 0)} generated,"
             f" {report.counts.get('mutated', 0)} mutated; seed {report.seed}): {report.passed} passed,"
             f" {len(report.failed)} failed, in {report.seconds:.1f} s"
             f" ({1000 * report.seconds / max(report.cases, 1):.1f} ms per case); target started {report.starts} time(s)",
             ""]
    if report.not_sent:
        lines[-1:-1] = ["", f"The target stopped answering: no answer to the last cases in a row, so the {report.not_sent}"
                        f" case(s) left were not sent (--stop-after-hangs)."]
    if not report.failed:
        lines.append("The target agrees with the kit on every case.")
        return "\n".join(lines)
    tally = report.by_category
    lines.append(f"{'category':<16}{'failed':>7}  {'first failing case':<44}what it means")
    for category, meaning in CATEGORIES.items():
        if category in tally:
            first = next(f for f in report.failed if f.category == category)
            lines.append(f"{category:<16}{tally[category]:>7}  {first.id:<44}{meaning}")

    lines += ["", f"Kinds of failure in each category (the {EXAMPLE_KINDS} most frequent, one example each):"]
    number_writing = 0
    for category in tally:
        failures = [f for f in report.failed if f.category == category]
        kinds = _by_kind(failures)
        number_writing += sum(count for kind, (count, _, _) in kinds.items() if kind in NUMBER_WRITING)
        for shown, (kind, (count, first, where)) in enumerate(kinds.items()):
            if shown == EXAMPLE_KINDS:
                lines.append(f"  {'':<16}{'':>5}  and {len(kinds) - shown} other kind(s)")
                break
            lines.append(f"  {category if shown == 0 else '':<16}{count:>5}  {kind}")
            lines.append(f"  {'':<16}{'':>5}    e.g. {first.id}: {_plain(where, _WIDTH - 30)}")
    if number_writing:
        lines += [""] + textwrap.wrap(
            f"Note: {number_writing} failure(s) differ only in how a number is written (1.0 as 1, -0.0 as 0, an"
            " integer past 2**53 rounded). A standard JSON writer does that: JavaScript's JSON.stringify and Go's"
            " encoding/json write 1.0 as 1, JavaScript's writes -0.0 as 0, and numbers held as doubles lose big"
            " integers. The kit keeps number kinds apart (docs/conformance.md), so such a target needs a writer"
            " that keeps them.", _WIDTH)

    lines += ["", "Failing cases (every one, with what was expected and got, is in --report):"]
    for category in tally:
        ids = [f.id for f in report.failed if f.category == category]
        named = ", ".join(ids[:NAMED_CASES]) + (f", and {len(ids) - NAMED_CASES} more" if len(ids) > NAMED_CASES else "")
        lines += textwrap.wrap(f"{category}: {named}", _WIDTH, initial_indent="  ", subsequent_indent="    ",
                               break_on_hyphens=False)

    if report.smallest:
        lines += ["", "Smallest failing input of each category (shrunk; the expected answer is this project's strict parser's):"]
    for category, (shrunk, origin, length) in report.smallest.items():
        lines.append(f"  {category}  (from {origin}, {length} -> {len(shrunk.request['text'])} characters)")
        lines.append(f"    input     {_show(shrunk.request['text'])}")
        if shrunk.request.get("options"):
            lines.append(f"    options   {_show(shrunk.request['options'])}")
        lines.append(f"    expected  {_show(shrunk.expected)}")
        lines.append(f"    got       {_show(shrunk.got)}")
    return "\n".join(lines)
