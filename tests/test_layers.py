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


# Annotations that name Lark's own types: the modules import Lark only when they use it (the
# serving path never loads it, tests/test_import_cost.py), so these resolve only where Lark is
# imported already; every other annotation resolves with typing.get_type_hints.
_LARK_ANNOTATED = {("gemma4_lark.errors", "_viable"), ("gemma4_lark.errors", "from_lark"),
                   ("gemma4_lark.grammar", "build"), ("gemma4_lark.grammar", "canonical_tables")}


def test_every_annotation_resolves():
    # `to_openai_message` named ParsedOutput only for type checkers (an import cycle with
    # output.py): get_type_hints, which pydantic, FastAPI and Sphinx run, raised NameError
    import importlib
    import inspect
    import pkgutil
    import typing

    import gemma4_incremental
    failures = []
    for package in (gemma4_lark, gemma4_incremental):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith(("__main__", ".integrations.vllm", ".integrations.sglang")):
                continue  # (the adapters need their server installed)
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if getattr(obj, "__module__", None) != module.__name__ or (module.__name__, name) in _LARK_ANNOTATED:
                    continue
                targets = [obj] + ([v for v in vars(obj).values() if inspect.isfunction(v)] if inspect.isclass(obj) else [])
                for target in targets:
                    if inspect.isfunction(target) or inspect.isclass(target):
                        try:
                            typing.get_type_hints(target)
                        except Exception as exc:  # noqa: BLE001 - collected, then shown
                            failures.append(f"{module.__name__}.{target.__qualname__}: {exc!r}")
    assert not failures, failures
