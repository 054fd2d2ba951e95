"""The layering of the design card: gemma4_lark never imports the streaming layer."""

import ast
import pathlib
import subprocess
import sys

import gemma4_lark
from conftest import REPO


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_gemma4_lark_never_imports_gemma4_incremental():
    package = pathlib.Path(gemma4_lark.__file__).parent
    for path in package.rglob("*.py"):
        assert not [m for m in _imports(path) if m.split(".")[0] == "gemma4_incremental"], path


def test_no_top_level_incremental_module_is_installed(tmp_path):
    # PyPI's unrelated `incremental` owns the top-level name: the install maps our `incremental/`
    # folder to `gemma4_incremental` only. Asked in a fresh process run from an empty folder in
    # isolated mode, so neither the checkout (the current folder, wherever it was cloned) nor the
    # test runner's sys.path can answer for the install.
    code = "import importlib.util; spec = importlib.util.find_spec('incremental'); print(spec and spec.origin)"
    found = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert found == "None" or not pathlib.Path(found).resolve().is_relative_to(REPO), found
    # and the name our code uses is the installed one
    code = "import gemma4_incremental; print(gemma4_incremental.__file__)"
    found = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                           check=True).stdout.strip()
    assert pathlib.Path(found).resolve().is_relative_to(REPO / "incremental") or "site-packages" in found, found
