"""The layering of docs/architecture.md: arrows go down only, no cycles, and gemma4_lark never
imports the streaming layer.

The import graph is read from the source with `ast`: every import, at the top of a module or
inside a function (an import deferred to a call still ties the two modules together), absolute or
relative. Python's own and third-party modules are not in it."""

import ast
import pathlib
import re
import subprocess
import sys

import gemma4_lark
import gemma4_incremental
from conftest import REPO

_PACKAGES = {"gemma4_lark": pathlib.Path(gemma4_lark.__file__).parent,
             "gemma4_incremental": pathlib.Path(gemma4_incremental.__file__).parent}


def _modules() -> dict[str, tuple[pathlib.Path, bool]]:
    """Every module of both packages: dotted name -> (file, whether it is a package's __init__)."""
    found = {}
    for package, root in _PACKAGES.items():
        for path in sorted(root.rglob("*.py")):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _owner(name: str, modules) -> str | None:
    """The module of the packages that `name` (a module, or a name in one) resolves to."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: pathlib.Path, is_package: bool, modules) -> dict[str, int]:
    """The modules of the packages that `module` imports, each with the line of its first import."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [_owner(alias.name, modules) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - (node.level - 1)] + ([node.module] if node.module else []))
            # `from . import x` imports the module x; `from .m import name` imports m
            targets = [_owner(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base, modules)
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target and target != module:
                found.setdefault(target, node.lineno)
    return found


def _graph() -> dict[str, dict[str, int]]:
    modules = _modules()
    return {name: _imported(name, path, is_package, modules) for name, (path, is_package) in modules.items()}


def _cycles(graph) -> list[list[str]]:
    """Each strongly connected set of more than one module, as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(start):  # Tarjan's, with an explicit stack
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(_path_around(graph, set(members)))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def _path_around(graph, members: set[str]) -> list[str]:
    """A cycle through the first of `members`, by a breadth-first search inside them."""
    start = min(members)
    came_from = {start: None}
    queue = [start]
    for node in queue:
        for target in sorted(graph[node]):
            if target == start:
                path = [node]
                while came_from[path[-1]] is not None:
                    path.append(came_from[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, node, start]
            if target in members and target not in came_from:
                came_from[target] = node
                queue.append(target)
    return sorted(members)


def _layer_table() -> list[tuple[str, list[str]]]:
    """docs/architecture.md's layer table: (layer, the module paths its row names), bottom first."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= set("-"):
            continue
        folder, paths = "", []
        for name in re.findall(r"`([^`]+)`", cells[1]):
            if not name.endswith((".py", "/")):
                continue  # the grammar and its data files: not modules
            if name.split("/")[0] not in _PACKAGES:
                name = f"{folder}/{name}"
            folder = name.rstrip("/").rsplit("/", 1)[0]
            paths.append(name)
        rows.append((cells[0], paths))
    return rows


def _module_of(path: str) -> str:
    """`gemma4_lark/schema/lexeme.py` -> `gemma4_lark.schema.lexeme`; a folder (ending in `/`)
    keeps its trailing dot: it stands for every module under it."""
    dotted = path.removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")


def _layers() -> tuple[dict[str, int], list[str]]:
    """Each module's layer (its row's place, bottom first) and the table's layer names; a module
    named in a row of its own takes that row over its folder's."""
    table = _layer_table()
    modules = _modules()
    named: dict[str, int] = {}
    folders: dict[str, int] = {}
    for rank, (_, paths) in enumerate(table):
        for path in paths:
            module = _module_of(path)
            assert module.rstrip(".") in modules, f"docs/architecture.md's layer table names {path}: no such module"
            target = folders if module.endswith(".") else named
            assert module not in target, f"{path} is in two rows of docs/architecture.md's layer table"
            target[module] = rank
    layer = {}
    for module in modules:
        if module in named:
            layer[module] = named[module]
        else:
            enclosing = [f for f in folders if module.startswith(f) or module == f.rstrip(".")]
            assert enclosing, f"{module} has no layer: add it to docs/architecture.md's layer table"
            layer[module] = folders[max(enclosing, key=len)]
    return layer, [name for name, _ in table]


def test_the_layer_table_names_the_six_layers_bottom_first():
    assert _layers()[1] == ["grammar facts", "strict parsing", "decoding against tools", "rendering and reading back",
                            "streaming", "serving and adapters"]


def test_no_import_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (counting imports inside functions):\n" + "\n".join(
        " -> ".join(cycle) for cycle in cycles)


def test_arrows_only_go_down():
    layer, names = _layers()
    upward = [f"{source} ({names[layer[source]]}) imports {target} ({names[layer[target]]}), line {line}"
              for source, targets in _graph().items() for target, line in targets.items()
              if layer[target] > layer[source]]
    assert not upward, "\n".join(upward)


def test_gemma4_lark_never_imports_gemma4_incremental():
    found = [f"{source} imports {target}, line {line}" for source, targets in _graph().items()
             if source.split(".")[0] == "gemma4_lark"
             for target, line in targets.items() if target.split(".")[0] == "gemma4_incremental"]
    assert not found, found


def test_the_graph_sees_every_kind_of_import(tmp_path):
    modules = {"gemma4_lark": None, "gemma4_lark.a": None, "gemma4_lark.b": None, "gemma4_lark.sub": None,
               "gemma4_lark.sub.c": None, "gemma4_incremental.d": None}
    source = tmp_path / "c.py"
    source.write_text("from .. import a\nfrom ..b import name\n"
                      "def f():\n    import gemma4_incremental.d\n    from . import __version__\n", encoding="utf-8")
    assert set(_imported("gemma4_lark.sub.c", source, False, modules)) == {
        "gemma4_lark.a", "gemma4_lark.b", "gemma4_incremental.d", "gemma4_lark.sub"}
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b": 1}, "b": {}}) == []


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
# serving path never loads it, tests/packaging/test_import_cost.py), so these resolve only where Lark is
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
