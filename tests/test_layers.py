"""The layering of the design card: gemma4_lark never imports the streaming layer."""

import ast
import pathlib

import gemma4_lark


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


def test_no_top_level_incremental_module_is_installed():
    import importlib.util

    spec = importlib.util.find_spec("incremental")
    assert spec is None or "gemma4" not in str(spec.origin)
