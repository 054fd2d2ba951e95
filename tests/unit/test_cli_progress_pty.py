"""The status line of a long command, on a real terminal: `gemma4-lark` in a child process whose
standard error is a pseudo-terminal shows it there (carriage returns, rewritten in place, cleared at
the end) and writes none of it into standard output; with standard error a pipe it says nothing.
The in-process tests (test_cli_validate_many.py, test_conformance_summary.py) force the tty check;
this one asks the operating system's."""

import json
import os
import select
import subprocess
import sys
import time

import pytest
from conftest import TESTS

pty = pytest.importorskip("pty")

HOSTILE = str(TESTS / "targets" / "hostile.py")


def _run_on_a_terminal(argv, timeout=60.0):
    """(exit code, standard output, what the terminal showed on standard error)."""
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "gemma4_lark", *argv], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.1)
            if ready:
                try:
                    piece = os.read(leader, 65536)
                except OSError:  # the child has gone and the terminal is closed (EIO on Linux)
                    break
                if not piece:
                    break
                shown += piece
            elif child.poll() is not None:
                break
        out = child.communicate(timeout=max(1.0, deadline - time.monotonic()))[0]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(leader)
    return child.returncode, out.decode("utf-8"), shown.decode("utf-8", "replace")


@pytest.fixture
def evals(tmp_path):
    path = tmp_path / "evals.jsonl"
    record = json.dumps({"output": "<|tool_call>call:f{a:1}<tool_call|>"})
    path.write_text((record + "\n") * 2000)
    return path


def test_validate_jsonl_shows_its_progress_on_a_terminal_only(evals):
    code, out, shown = _run_on_a_terminal(["validate", "--jsonl", str(evals)])
    assert code == 0 and out == "1 file(s), 2000 output(s): 2000 valid, 0 invalid\n"
    assert "line(s) read" in shown and shown.startswith("\r") and shown.endswith("\r"), shown[-500:]
    # rewritten a few times a second, not once per record (a 100,000-record run wrote 200,000 times)
    assert shown.count("\r") < 200, shown.count("\r")
    piped = subprocess.run([sys.executable, "-m", "gemma4_lark", "validate", "--jsonl", str(evals)],
                           capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and piped.stderr == "" and piped.stdout == out


@pytest.mark.slow  # waits out a hanging target
def test_conformance_run_says_on_a_terminal_that_the_target_is_silent(tmp_path):
    target = " ".join([sys.executable, HOSTILE, "once", str(tmp_path / "answered")])
    argv = ["conformance", "run", "--target", target, "--timeout", "1.5", "--generated", "0", "--mutated", "0",
            "--shrink-seconds", "0.1", "--stop-after-hangs", "1"]
    code, out, shown = _run_on_a_terminal(argv)
    assert code == 1 and "\r" not in out and "not sent" in out
    assert "case 2/" in shown and "no answer yet" in shown, shown
