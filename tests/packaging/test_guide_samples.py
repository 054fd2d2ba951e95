"""The guide's shell sessions print what it shows, and its fuzz example cannot fail on how long
Hypothesis takes to draw calls.

A session is a ```text block of `$ ` lines: `$ cat FILE` followed by the file's lines writes that
file, `$ gemma4-lark ARGS` followed by its output runs the command (in process, in a fresh
folder) and compares what it printed, standard output then standard error, line for line."""

import re
import shlex
import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import FailedHealthCheck

from conftest import REPO
from gemma4_lark import strategies
from gemma4_lark.cli import main

GUIDE = REPO / "docs" / "guide.md"


def _sessions():
    blocks = re.findall(r"```text\n(\$ .*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    return [[(step.split("\n", 1)[0], step.split("\n", 1)[1] if "\n" in step else "")
             for step in re.split(r"^\$ ", block, flags=re.M)[1:]] for block in blocks]


def test_the_guide_has_sessions_to_run():
    commands = [command for session in _sessions() for command, _ in session]
    assert "gemma4-lark validate --jsonl evals.jsonl" in commands
    assert any(c.startswith("gemma4-lark grammar") and "--tools" in c for c in commands)


@pytest.mark.parametrize("session", _sessions(), ids=lambda s: s[-1][0])
def test_a_guide_session_prints_what_the_guide_shows(session, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for command, shown in session:
        program, *argv = shlex.split(command)
        if program == "cat":
            (tmp_path / argv[0]).write_text(shown, encoding="utf-8")
            continue
        assert program == "gemma4-lark", f"the guide runs {command!r}, which this test cannot"
        main(argv)
        out, err = capsys.readouterr()
        assert (out + err).splitlines() == shown.splitlines(), command


def _slow_calls():
    """Calls drawn as slowly as a loaded 2-core machine draws them, and slower."""
    return strategies.calls().map(lambda call: (time.sleep(0.15), call)[1])


@pytest.fixture
def hypothesis_defaults():
    """Hypothesis's own defaults loaded, as a reader of the guide runs its example (the suite's
    profile turns the too_slow check off for every test: the guide's reader has no such profile)."""
    with_defaults = hypothesis_settings(hypothesis_settings.get_profile("default"), max_examples=10, database=None)
    hypothesis_settings.register_profile("guide-reader", with_defaults)
    current = hypothesis_settings.get_current_profile_name()
    hypothesis_settings.load_profile("guide-reader")
    yield with_defaults
    hypothesis_settings.load_profile(current)


def test_fuzz_settings_keep_a_slow_draw_from_failing_the_run(hypothesis_defaults):
    @given(_slow_calls())
    def plain(call):
        pass

    with pytest.raises(FailedHealthCheck):  # what the guide's example met, 1 run in 13
        plain()

    @strategies.settings(max_examples=10)
    @given(_slow_calls())
    def steady(call):
        pass

    steady()
    assert HealthCheck.too_slow in strategies.settings().suppress_health_check and strategies.settings().deadline is None


def test_the_guide_fuzz_example_runs_with_the_steady_settings(hypothesis_defaults):
    import gemma4_lark

    block = next(b for b in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
                 if "@given" in b)
    namespace = {"g": gemma4_lark}
    exec(compile(block, "docs/guide.md", "exec"), namespace)  # runs the property, as the guide does
    used = namespace["agrees"]._hypothesis_internal_use_settings  # where hypothesis keeps a test's settings
    assert HealthCheck.too_slow in used.suppress_health_check and used.deadline is None
