"""The public API type-checks: `mypy --strict` on a user's script (tests/typing/user_script.py),
with the package read as an installed, typed (py.typed) dependency whose own errors are its own."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "tests" / "typing" / "user_script.py"

pytest.importorskip("mypy", reason="mypy is in the test extra")


def test_both_packages_are_marked_typed():
    assert (REPO / "gemma4_lark" / "py.typed").is_file()
    assert (REPO / "incremental" / "py.typed").is_file()


def test_user_script_runs():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_user_script_passes_mypy_strict(tmp_path):
    # The packages as a user's site-packages holds them (the editable install's import hook is
    # invisible to mypy, and `incremental/` installs as `gemma4_incremental`). Errors inside them
    # are not the user's: follow_imports=silent, as mypy treats an installed typed package.
    site = tmp_path / "site"
    site.mkdir()
    (site / "gemma4_lark").symlink_to(REPO / "gemma4_lark")
    (site / "gemma4_incremental").symlink_to(REPO / "incremental")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n\n[mypy-gemma4_lark.*,gemma4_incremental.*]\nfollow_imports = silent\n")
    env = dict(os.environ, MYPYPATH=str(site))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", str(SCRIPT)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_public_functions_document_what_they_raise():
    import inspect

    import gemma4_incremental
    import gemma4_lark
    from gemma4_lark import messages
    from gemma4_lark.events import ToolCallEnd
    from gemma4_lark.render import demote_thinking, official, omp

    functions = [getattr(gemma4_lark, n) for n in gemma4_lark.__all__]
    functions += [getattr(gemma4_incremental, n) for n in gemma4_incremental.__all__]
    functions = [f for f in functions if inspect.isfunction(f)]
    functions += [gemma4_incremental.StreamParser.feed, gemma4_incremental.StreamParser.flush,
                  ToolCallEnd.to_openai, official.render_chat, demote_thinking,
                  messages.read_official, messages.read_omp, messages.from_openai_messages,
                  messages.to_openai_messages]
    functions += [f for name, f in vars(omp).items()
                  if name.startswith("render_") and inspect.isfunction(f) and f.__module__ == omp.__name__]
    assert len(functions) > 25
    silent = [f.__qualname__ for f in functions if "Raises" not in (f.__doc__ or "")]
    assert silent == []
