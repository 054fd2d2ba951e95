"""The conformance kit under hostile targets and requests: what a target writes (a lone surrogate,
a number past a double, an endless line, a flood of standard error, two lines for one request, a
hang after a restart) is judged and reported; it never ends the run, fills memory or takes
quadratic time. Timing and memory are compared between sizes in one run, never against a clock."""

import json
import shlex
import subprocess
import sys
import time
import tracemalloc

import pytest

from gemma4_lark.cli import main
from gemma4_lark.conformance import categorize
from gemma4_lark.conformance.protocol import ProtocolError, json_text, read_answer
from gemma4_incremental import conformance
from conftest import hostile

SERVE = [sys.executable, "-m", "gemma4_lark", "conformance", "serve"]
SMALL = ["--generated", "2", "--mutated", "2", "--shrink-seconds", "1", "--startup", "60"]


def _run(capsys, tmp_path, target, *extra):
    report = tmp_path / "report.json"
    code = main(["conformance", "run", "--target", target, "--report", str(report), *SMALL, *extra])
    out = capsys.readouterr().out
    text = report.read_bytes().decode("utf-8")  # (UTF-8 whatever the answers held)
    return code, out, json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the report"))


# --- lone surrogates: judged, and written back as the escape they came as --------------------------
def test_a_lone_surrogate_in_an_answer_is_a_text_failure_written_back_escaped(capsys, tmp_path):
    code, out, report = _run(capsys, tmp_path, hostile("surrogate"))
    assert code == 1
    assert report["categories"] == {"text": report["cases"]} and report["cases"] > 100
    assert report["failed"][0]["got"]["text"].endswith("\ud83d")
    assert "\\ud83d" in out and "Smallest failing input" in out


def test_serve_answers_every_request_line_whatever_it_holds():
    lines = [b'{"text": "a\\ud800"}', b"\xff\xfe", b"[" * 100_000, b'{"text": 5}', b"[]", b'{"text": "ok"}']
    done = subprocess.run(SERVE, input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert len(answers) == len(lines)
    assert answers[0] == {"calls": [], "text": "a\ud800"}
    assert "not UTF-8" in answers[1]["error"] and "RecursionError" in answers[2]["error"]
    assert all("error" in a for a in answers[1:5]) and answers[5] == {"calls": [], "text": "ok"}


def test_json_text_escapes_lone_surrogates_only_and_refuses_what_json_cannot_spell():
    value = {"a\udc80": ["\ud83d", "é😀"]}
    text = json_text(value)
    assert text == '{"a\\udc80": ["\\ud83d", "é😀"]}' and json.loads(text) == value
    with pytest.raises(ValueError):
        json_text({"x": float("inf")})


# --- numbers past what the kit reads: protocol errors, never Infinity in a report ------------------
def test_an_answer_with_a_number_past_a_double_is_a_protocol_error():
    for number in ("1e999", "-1e400", "1E309", "123456789e400"):
        with pytest.raises(ProtocolError, match="out of a double's range"):
            read_answer('{"calls": [{"name": "f", "arguments": {"n": %s}}], "text": ""}' % number)
    with pytest.raises(ProtocolError, match="5000 digits"):
        read_answer('{"calls": [], "text": "", "n": %s}' % ("9" * 5000))
    assert read_answer('{"calls": [{"name": "f", "arguments": {"n": 1e308}}], "text": ""}')["calls"][0]["arguments"]["n"] == 1e308
    target = conformance.Target(hostile("overflow"))
    try:
        reply = target.ask({"text": "<|tool_call>call:f{n:1}<tool_call|>"})
    finally:
        target.close()
    assert reply.category == "protocol" and "1e999 is out of a double's range" in reply.detail


def test_any_positive_number_of_seconds_is_a_wait(capsys, tmp_path):
    target = conformance.Target(hostile("echo"), timeout=1e306, startup=1e306)
    try:
        assert target.ask({"text": "hi"}) == conformance.Reply(None, {"calls": [], "text": "hi"})
    finally:
        target.close()
    code = main(["conformance", "run", "--target", shlex.join(SERVE), "--timeout", "1e306", "--startup", "1e306",
                 "--shrink-seconds", "1e306", "--generated", "1", "--mutated", "1"])
    assert code == 0, capsys.readouterr()


# --- memory and time: the tail of standard error, answers read in linear time and bounded ----------
def test_a_crashed_targets_stderr_is_read_from_its_tail():
    megabytes = 16
    target = conformance.Target(hostile("stderr", megabytes))
    tracemalloc.start()
    try:
        reply = target.ask({"text": "x"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        target.close()
    assert reply.category == "crash" and "exited with status 4" in reply.detail and "last words" in reply.detail
    assert peak < (megabytes << 20) / 64  # what it wrote was not read into memory


def test_an_answer_line_is_read_in_time_linear_in_its_length():
    """The kit's own processor time (the target's is not in it) for a request and its echo."""
    target = conformance.Target(hostile("echo"))
    try:
        target.ask({"text": "warm up"})
        seconds = {}
        for size in (1 << 20, 16 << 20):
            text = "y" * size
            for _ in range(2):  # the best of two: the machine's other work adds, never takes away
                begin = time.process_time()
                reply = target.ask({"text": text})
                seconds[size] = min(seconds.get(size, 1e9), time.process_time() - begin)
                assert reply.answer == {"calls": [], "text": text}
    finally:
        target.close()
    assert seconds[16 << 20] < 40 * seconds[1 << 20], seconds  # 16 times the size: about 16 times the time, not 256


def test_an_answer_line_that_never_ends_is_a_protocol_error_at_a_bounded_length():
    target = conformance.Target(hostile("flood"), timeout=30)
    tracemalloc.start()
    try:
        reply = target.ask({"text": "x"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        target.close()
    assert reply.category == "protocol" and "answer line longer than" in reply.detail
    limit = int(reply.detail.split("longer than ")[1].split()[0])
    assert limit < 2 << 20 and peak < 4 * limit


# --- policies: a hang after a restart, extra lines, whitespace ------------------------------------
def test_a_restarted_target_gets_the_time_its_first_start_took_not_the_startup_allowance(tmp_path):
    target = conformance.Target(hostile("once", tmp_path / "answered"), timeout=0.3, startup=600)
    try:
        first, second, third = (target.ask({"text": t}) for t in "abc")
    finally:
        target.close()
    assert first.category is None and target.first_answer_seconds is not None
    assert second.detail == "no answer in 0.3 s"  # not fresh: the timeout alone
    waited = float(third.detail.split()[3])  # a fresh start after the hang: its allowance is measured
    assert third.category == "timeout" and waited == pytest.approx(0.3 + 2 * target.first_answer_seconds, rel=1e-4)
    assert waited < 600


def test_a_target_that_stops_answering_ends_the_run_with_the_cases_left_counted(tmp_path):
    report = conformance.run(hostile("once", tmp_path / "answered"), timeout=0.3, generated=2, mutated=2,
                             shrink_seconds=0.1, stop_after_hangs=2)
    assert report.by_category["timeout"] == 2
    assert report.cases == 3 and report.not_sent == len(conformance.cases(0, 2, 2)) - 3
    assert "not sent" in conformance.summary(report)


def test_two_lines_for_one_request_are_that_requests_protocol_error():
    target = conformance.Target(hostile("twice"))
    try:
        reply = target.ask({"text": "a"})
    finally:
        target.close()
    assert reply.category == "protocol" and "more than one line for one request" in reply.detail
    target = conformance.Target(hostile("twice-later"))
    try:
        assert target.ask({"text": "a"}).category is None
        for _ in range(100):  # the second line comes 0.1 s after the first: wait for it, however busy the machine
            stray = target.stray_output()
            if stray:
                break
            time.sleep(0.1)
        assert "more than one line for one request" in stray and target.process is None
        assert target.ask({"text": "b"}).category is None and target.starts == 2  # a clean start
    finally:
        target.close()


@pytest.mark.parametrize("character", [c for c in map(chr, range(0x3000 + 1)) if not c.strip() and c not in " \t\r\n"])
def test_text_compares_without_the_grammars_whitespace_only(character):
    assert categorize({"calls": [], "text": "a" + character}, {"calls": [], "text": "a"}) == "text"
    assert categorize({"calls": [], "text": character + "a"}, {"calls": [], "text": "a"}) == "text"
    assert categorize({"calls": [], "text": " \t\r\na \n"}, {"calls": [], "text": "a"}) is None


# --- fuzz --target talks through the same client --------------------------------------------------
def test_fuzz_against_a_target_that_hangs_or_floods_reports_it_and_ends(tmp_path):
    from gemma4_lark.fuzz import run_campaign
    from gemma4_incremental import StreamParser

    # answers once, then hangs (and hangs at once when started again): a request after the first is
    # a timeout, and the target is started again for the next
    report = run_campaign(StreamParser, examples=30, target=hostile("once", tmp_path / "answered"), timeout=0.2,
                          startup=0.5)
    assert not report.ok
    assert any("timeout: no answer in" in finding.detail for finding in report.findings), report.findings
    # an answer line that never ends is a protocol failure at a bounded length, not a read forever
    report = run_campaign(StreamParser, examples=3, target=hostile("flood"), timeout=5, startup=5)
    assert any("protocol: an answer line longer than" in finding.detail for finding in report.findings), \
        report.findings


def test_fuzz_against_a_target_that_never_answers_is_a_usage_error():
    from gemma4_lark.conformance.target import TargetDoesNotRun
    from gemma4_lark.fuzz import run_campaign
    from gemma4_incremental import StreamParser

    with pytest.raises(TargetDoesNotRun, match="crash: the target exited with status 3"):
        run_campaign(StreamParser, examples=3, target="exit 3", timeout=1, startup=1)
