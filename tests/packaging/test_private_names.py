"""No module reaches into another's private names (docs/architecture.md): a name that starts with
`_` is its module's own. What another module needs is API: named, documented, without `_`.

Checked on the source of both packages, as text the type checker cannot see:
- `from X import _name` (or `X._name`) where X is another module of the packages;
- `obj._name` where `obj` is not `self`/`cls` (an attribute of another object), unless the name is
  defined by the same module (a module may use its own private names on its own objects: a helper
  class's attributes, a dataclass built next to its reader)."""

import ast
import pathlib

import gemma4_lark
import gemma4_incremental

# dunder names are Python's, not anyone's private names; `_replace`/`_asdict`/`_fields` are
# namedtuple's public API, `_value_`/`_name_` enum's.
_PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make", "_value_", "_name_", "_missing_"}


# Private names of Lark and CPython's `re` that the grammar's tooling reads: in gemma4_lark/_compat.py
# only, which tests/packaging/test_compat.py runs at the lowest and the newest Lark (so that no new use slips
# in unseen, and a release that moves one breaks one module).
_COMPAT = "_compat.py"
_THIRD_PARTY_PRIVATE = {
    (_COMPAT, "_definitions"), (_COMPAT, "_ignore_names"), (_COMPAT, "_load_from_dict"), (_COMPAT, "_mres"),
    (_COMPAT, "_parse_tree_builder"),
}
# Modules of the standard library that are private or the deprecated aliases of private ones.
_PRIVATE_STDLIB_MODULES = {"sre_parse", "sre_constants", "sre_compile"}


def _sources():
    for package in (gemma4_lark, gemma4_incremental):
        root = pathlib.Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            yield package.__name__, root, path


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) \
        and name not in _PUBLIC_UNDERSCORED


def _defined_names(tree: ast.AST) -> set[str]:
    """Every name the module defines or assigns anywhere (functions, classes, attributes of
    `self`, slots, module and class variables): its own private names."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __slots__ entries, getattr() names
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _reach_ins(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _defined_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if node.level and node.module is None:
                    continue  # `from . import _states`: a package's private module, for its own modules
                if _private(alias.name) and (node.level or (node.module or "").split(".")[0] in
                                             ("gemma4_lark", "gemma4_incremental")):
                    found.append(f"{path.name}:{node.lineno} imports {alias.name} from {'.' * node.level}{node.module}")
        elif (isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own
              and (path.name, node.attr) not in _THIRD_PARTY_PRIVATE):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            found.append(f"{path.name}:{node.lineno} reads .{node.attr}")
    return found


def _outside_names(path: pathlib.Path) -> list[str]:
    """Imports of another library's private names or modules (`from re import _parser`,
    `import re._constants`, `from lark.parsers.lalr_parser import _Parser`, `import sre_parse`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] not in ("gemma4_lark", "gemma4_incremental") and (
                        any(_private(part) for part in parts) or parts[0] in _PRIVATE_STDLIB_MODULES):
                    found.append(f"{path.name}:{node.lineno} imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            parts = node.module.split(".")
            if parts[0] in ("gemma4_lark", "gemma4_incremental"):
                continue
            if any(_private(part) for part in parts) or parts[0] in _PRIVATE_STDLIB_MODULES:
                found.append(f"{path.name}:{node.lineno} imports from {node.module}")
            found += [f"{path.name}:{node.lineno} imports {alias.name} from {node.module}"
                      for alias in node.names if _private(alias.name)]
    return found


def test_private_names_of_other_libraries_are_read_in_the_compat_module_only():
    found = [hit for _, _, path in _sources() if path.name != _COMPAT for hit in _outside_names(path)]
    assert not found, "\n".join(found)


def test_the_compat_check_sees_each_spelling(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from re import _parser\nimport re._constants\nimport sre_parse\n"
                      "from lark.parsers.lalr_parser import _Parser\nfrom lark import Lark\nimport re\n", encoding="utf-8")
    assert len(_outside_names(sample)) == 4


def test_no_module_uses_another_modules_private_names():
    found = [hit for _, _, path in _sources() for hit in _reach_ins(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_a_reach_in(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from gemma4_lark.parser import _hidden\nfrom .other import _x\n"
                      "def f(parser):\n    return parser._state\n", encoding="utf-8")
    assert len(_reach_ins(sample)) == 3
