"""The wheel carries the grammar: build it, install it into a fresh virtual environment, parse."""

import subprocess
import sys
import venv

import pytest

from conftest import REPO


@pytest.mark.slow
def test_wheel_installs_and_parses(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(REPO)], check=True)
    [wheel] = dist.glob("gemma4_lark-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "gemma4_lark/gemma4.lark" in names
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True)
    code = ("import gemma4_lark as g; "
            "print(g.parse_call('<|tool_call>call:f{a:1}<tool_call|>').arguments['a'])")
    result = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "1"
