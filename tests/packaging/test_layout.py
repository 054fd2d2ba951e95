"""The tests' own layout (tests/README.md): every test file sits directly in one of the folders
of kinds the README names, no two test files share a name (pytest imports each by its file name
alone, so a second `test_x.py` would clash with the first), a test file imports no other test
file, and every helper beside the folders is one the README names."""

import ast
import collections
import pathlib
import re

from conftest import TESTS

README = (TESTS / "README.md").read_text(encoding="utf-8")
KINDS = re.findall(r"^## (\w+)/$", README, re.M)


def _is_test_file(path: pathlib.PurePath) -> bool:
    return path.suffix == ".py" and (path.name.startswith("test_") or path.stem.endswith("_test"))  # pytest's patterns


def misplaced(paths, kinds) -> list[str]:
    """The test files (relative to tests/) that do not sit directly in a folder of a kind."""
    return sorted(str(p) for p in paths if _is_test_file(p) and not (len(p.parts) == 2 and p.parts[0] in kinds))


def shared_names(paths) -> dict[str, list[str]]:
    """The test file names held by more than one file, with the files."""
    by_name = collections.defaultdict(list)
    for path in paths:
        if _is_test_file(path):
            by_name[path.name].append(str(path))
    return {name: sorted(files) for name, files in by_name.items() if len(files) > 1}


def _files():
    return [path.relative_to(TESTS) for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts]


def test_the_readme_names_the_kinds_and_each_is_a_folder():
    assert KINDS == ["unit", "differential", "corpus", "properties", "attacks", "complexity", "packaging"]
    assert [kind for kind in KINDS if not (TESTS / kind).is_dir()] == []


def test_every_test_file_sits_in_a_folder_of_its_kind():
    assert misplaced(_files(), KINDS) == [], "move it into the folder of its kind (tests/README.md)"


def test_no_two_test_files_share_a_name():
    assert shared_names(_files()) == {}


def test_the_checks_catch_a_stray_file_and_a_twin():
    paths = [pathlib.PurePath(p) for p in ("unit/test_a.py", "test_b.py", "unit/deeper/test_c.py", "attacks/test_a.py",
                                           "misc/test_d.py", "stream_helpers.py", "unit/e_test.py")]
    assert misplaced(paths, KINDS) == ["misc/test_d.py", "test_b.py", "unit/deeper/test_c.py"]
    assert shared_names(paths) == {"test_a.py": ["attacks/test_a.py", "unit/test_a.py"]}


def test_no_test_file_imports_another():
    found = []
    for path in _files():
        if not _is_test_file(path):
            continue
        for node in ast.walk(ast.parse((TESTS / path).read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path}: {name}" for name in names if _is_test_file(pathlib.PurePath(name.split(".")[0] + ".py"))]
    assert found == [], "what two test files share belongs in a helper beside the folders"


def test_every_helper_beside_the_folders_is_named_in_the_readme():
    helpers = sorted(path.name for path in TESTS.glob("*.py"))
    assert [name for name in helpers if f"`{name}`" not in README] == []
