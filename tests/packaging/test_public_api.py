"""One public API, one vocabulary: each package's `__init__` exports what the README and the
guide teach; no name of the two packages names two different things; the names of one release
before still work, and warn (docs/architecture.md, "Names")."""

import ast
import importlib
import re
import subprocess
import sys
import types
import warnings

import pytest

import gemma4_incremental
import gemma4_lark
from conftest import REPO

PACKAGES = {"gemma4_lark": gemma4_lark, "gemma4_incremental": gemma4_incremental}

# old name -> new name, by module: each old name gives the new name's object, with a warning.
RENAMED = {
    "gemma4_lark": {"Text": "TextPart", "StopMarker": "StopPart", "ModelOutput": "OutputDocument",
                    "parse_model_output": "parse_output_document"},
    "gemma4_lark.model": {"Text": "TextPart", "StopMarker": "StopPart", "ModelOutput": "OutputDocument"},
    "gemma4_lark.parser": {"parse_model_output": "parse_output_document"},
}


def _python_blocks(page: str):
    text = (REPO / page).read_text(encoding="utf-8")
    return [ast.parse(block) for block in re.findall(r"```python\n(.*?)```", text, re.S)]


def _taught_names(page: str) -> set[tuple[str, str, object]]:
    """(package, name, the object the page reaches it by) for every name of the two packages a
    page's Python blocks import or use: `from gemma4_lark.x import name`, and `g.name` after
    `import gemma4_lark as g`."""
    taught = set()
    for tree in _python_blocks(page):
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in PACKAGES:
                        aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                module = importlib.import_module(node.module)
                for alias in node.names:
                    reached = getattr(module, alias.name, None) or importlib.import_module(
                        f"{node.module}.{alias.name}")
                    taught.add((node.module.split(".")[0], alias.name, reached))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                package = aliases[node.value.id]
                taught.add((package, node.attr, getattr(PACKAGES[package], node.attr)))
    return taught


# The guide's fuzzing tools, imported from their modules on purpose: `strategies` needs hypothesis
# (a test extra, which `import gemma4_lark` never loads), `fuzz` runs the campaign with them, and
# `reference` is the independent oracle.
_TOOLING = {"fuzz", "strategies", "read_call"}


@pytest.mark.parametrize("page", ["README.md", "docs/guide.md"])
def test_every_name_the_page_teaches_is_exported_by_its_package(page):
    taught = _taught_names(page)
    assert {"render_chat", "StreamParser", "parse_call"} <= {name for _, name, _ in taught}
    for package, name, reached in sorted(taught, key=repr):
        if name in _TOOLING:
            continue
        namespace = {}
        exec(f"from {package} import {name}", namespace)  # noqa: S102 - the import a reader writes
        assert namespace[name] is reached, (package, name)
        assert name in PACKAGES[package].__all__, (package, name)


def _public_names(package) -> dict[str, object]:
    """A package's public names: its `__all__`, and whatever else its namespace holds that is not
    a module (a submodule's name is its own: `gemma4_lark.parser` is not `gemma4_incremental.parser`)."""
    names = {name: getattr(package, name) for name in package.__all__}
    for name, value in vars(package).items():
        if not name.startswith("_") and not isinstance(value, types.ModuleType):
            names.setdefault(name, value)
    return names


def test_no_public_name_names_two_things():
    lark_names, stream_names = _public_names(gemma4_lark), _public_names(gemma4_incremental)
    both = set(lark_names) & set(stream_names)
    assert not [name for name in both if lark_names[name] is not stream_names[name]]


def test_each_package_lists_its_public_names():
    for package in PACKAGES.values():
        names = _public_names(package)
        assert sorted(package.__all__) == sorted(set(package.__all__)), "a name listed twice"
        assert set(names) == set(package.__all__), set(names) ^ set(package.__all__)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(f"from {package.__name__} import *", {})  # noqa: S102 - every listed name resolves


@pytest.mark.parametrize("module", sorted(RENAMED))
def test_old_names_still_work_and_warn(module):
    namespace = importlib.import_module(module)
    for old, new in RENAMED[module].items():
        with pytest.warns(DeprecationWarning, match=rf"{re.escape(module)}\.{old} is deprecated: it is .*\.{new}"):
            value = getattr(namespace, old)
        assert value is getattr(namespace, new)
        assert old not in vars(namespace) and old not in getattr(namespace, "__all__", ())
    with pytest.raises(AttributeError):
        getattr(namespace, "no_such_name")


def test_to_openai_has_one_spelling():
    parsed = gemma4_incremental.parse_output("Hi")
    with pytest.warns(DeprecationWarning, match="to_openai_message"):
        old = parsed.to_openai()
    assert old == gemma4_incremental.to_openai_message(parsed)


_NO_OLD_NAME_USED = r"""
import importlib, pkgutil, warnings
warnings.filterwarnings("error", message=r".* is deprecated: it is ", category=DeprecationWarning)
import gemma4_lark, gemma4_incremental
for package in (gemma4_lark, gemma4_incremental):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not info.name.endswith(("__main__", ".integrations.vllm", ".integrations.sglang")):
            importlib.import_module(info.name)
print(gemma4_lark.parse_output_document("Hi<|tool_call>call:f{a:1}<tool_call|><turn|>"))
"""


def test_the_library_uses_no_old_name():
    # in a fresh interpreter, so every module is imported here, with the old names as errors
    result = subprocess.run([sys.executable, "-c", _NO_OLD_NAME_USED], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "TextPart(text='Hi')" in result.stdout and "StopPart(marker='<turn|>')" in result.stdout


def test_the_names_table_of_the_docs_is_the_code():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = {}
    for old_cell, new_cell in re.findall(r"^\| (`gemma4_lark\.[^|]*) \| `(\w+)` \|", page, re.M):
        for old in re.findall(r"`([\w.]+)`", old_cell):
            module, _, name = old.rpartition(".")
            documented.setdefault(module, {})[name] = new_cell
    assert documented == RENAMED
