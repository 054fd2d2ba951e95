"""The terminal summary of a conformance run: each category's failures by kind with an example of
each, the failing cases by name, the note on number writing, and the status a long run gives."""

import io
import sys

from gemma4_lark.cli import main
from gemma4_lark.conformance import target
from gemma4_lark.conformance.summary import NAMED_CASES, NUMBER_WRITING, difference, summary
from gemma4_incremental import conformance
from conftest import hostile


def _failure(case_id, category, expected_arguments=None, got_arguments=None, *, got=None, want_text="", got_text=""):
    expected = {"calls": [{"name": "f", "arguments": expected_arguments}] if expected_arguments is not None else [],
                "text": want_text}
    if got is None:
        got = {"calls": [{"name": "f", "arguments": got_arguments}] if got_arguments is not None else [], "text": got_text}
    return conformance.Failure(case_id, category, {"text": "..."}, expected, got)


def test_each_failure_has_a_kind_that_says_which_bug_it_is():
    kinds = {
        "a float written as an integer (1.0 as 1)": _failure("a", "arguments", {"n": 1.0}, {"n": 1}),
        "-0.0 written as 0": _failure("b", "arguments", {"n": [-0.0]}, {"n": [0]}),
        "an integer past 2**53 rounded to a double": _failure("c", "arguments", {"n": 2 ** 60 + 1}, {"n": float(2 ** 60 + 1)}),
        "an integer given as a string": _failure("d", "arguments", {"n": {"m": 7}}, {"n": {"m": "7"}}),
        "a string with another value": _failure("e", "arguments", {"s": "a b"}, {"s": "a  b"}),
        "a key missing": _failure("f", "arguments", {"s": 1, "t": 2}, {"s": 1}),
        "an extra key": _failure("g", "arguments", {}, {"x": None}),
        "an array of another length": _failure("h", "arguments", {"l": [1]}, {"l": []}),
        "a call missing": _failure("i", "calls", {}, None),
        "text with characters lost": _failure("j", "text", want_text="a\xa0", got_text="a"),
        "the target exited with status 3": _failure("k", "crash", got="the target exited with status 3; its last words"),
        "not JSON": _failure("l", "protocol", got="not JSON: Expecting value: 'OK'"),
    }
    for kind, failure in kinds.items():
        assert difference(failure)[0] == kind, failure
    assert difference(kinds["an integer given as a string"])[1] == 'calls[0].arguments.n.m: expected 7, got "7"'
    assert NUMBER_WRITING < set(kinds)


def test_the_summary_shows_each_kind_with_an_example_names_the_cases_and_notes_number_writing():
    failed = ([_failure(f"valid/float-{i}", "arguments", {"n": 2.0}, {"n": 2}) for i in range(NAMED_CASES + 3)]
              + [_failure("valid/int-string", "arguments", {"n": 2}, {"n": "2"})])
    report = conformance.Report("t", cases=20, passed=4, failed=failed)
    text = summary(report)
    assert f"  {'arguments':<16}{NAMED_CASES + 3:>5}  a float written as an integer (1.0 as 1)\n" in text
    assert "e.g. valid/float-0: calls[0].arguments.n: expected 2.0, got 2" in text
    assert "1  an integer given as a string" in text and "e.g. valid/int-string:" in text  # a second bug, shown apart
    assert f"Note: {NAMED_CASES + 3} failure(s) differ only in how a number is written" in text
    assert "valid/float-0, valid/float-1" in text and "and 4 more" in text
    clean = conformance.Report("t", cases=2, passed=2)
    assert "Note" not in summary(clean) and "agrees with the kit on every case" in summary(clean)


def test_a_run_says_how_far_it_is_and_that_it_waits(tmp_path, monkeypatch):
    monkeypatch.setattr(target, "_WAIT_STEP", 0.1)  # said every tenth of a second of silence, not every second
    said = []
    conformance.run(hostile("once", tmp_path / "answered"), timeout=0.5, generated=0, mutated=0, shrink_seconds=0.1,
                    stop_after_hangs=1, status=said.append)
    assert any(s.startswith("case 1/") and " passed, " in s for s in said)
    assert any("(valid/" in s and "no answer yet" in s and s.endswith(" s of 0.5 s") for s in said)
    assert any(s.startswith("shrinking the smallest timeout failure") for s in said)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_the_status_is_on_a_terminal_only_and_cleared_before_the_summary(tmp_path, capsys, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["conformance", "run", "--target", hostile("once", tmp_path / "answered"), "--timeout", "0.5",
                 "--generated", "0", "--mutated", "0", "--shrink-seconds", "0.1", "--stop-after-hangs", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "\r" not in out and "not sent" in out
    assert "case 1/" in terminal.getvalue() and terminal.getvalue().endswith("\r")
