"""The pinned vLLM and SGLang, without installing them: their wheels' Python sources on `sys.path`,
and stubs (integration/stubs.txt) for the GPU stacks and servers their parser modules import.

    python integration/harness.py CACHE    # extract the .py files of the wheels in CACHE

`activate(cache)` puts the extracted trees first on `sys.path` and installs the stub finder. The
adapters then run through the frameworks' own classes: vLLM's `ToolParserManager`,
`ReasoningParserManager`, `ParserManager.get_parser` and `ChatStreamProcessor.step` (the streaming
loop's per-chunk call); SGLang's `FunctionCallParser`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The pinned releases: (distribution, version, the top-level package).
PINS = (("vllm", "0.33.0", "vllm"), ("sglang", "0.5.23", "sglang"))


def read_stubs(path: Path = HERE / "stubs.txt"):
    """(stubbed names, aliases, hollow packages, {stubbed name: distribution version})."""
    stubs, aliases, hollow, versions = set(), {}, [], {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.endswith("/"):
            hollow.append(line[:-1])
        elif "==" in line:
            name, version = (part.strip() for part in line.split("==", 1))
            stubs.add(name)
            versions[name] = version
        elif "=" in line:
            name, other = (part.strip() for part in line.split("=", 1))
            aliases[name] = other
        else:
            stubs.add(line)
    return frozenset(stubs), aliases, tuple(hollow), versions


def wheel(cache: Path, distribution: str, version: str) -> Path:
    found = sorted(cache.glob(f"{distribution}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no {distribution} {version} wheel in {cache}: run `make integration`")
    return found[0]


def extract(cache: Path) -> None:
    """Each pinned wheel's .py files under CACHE/NAME-VERSION/ (once; a marker file says it is done)."""
    for distribution, version, package in PINS:
        target = cache / f"{distribution}-{version}"
        done = target / ".extracted"
        if done.exists():
            continue
        with zipfile.ZipFile(wheel(cache, distribution, version)) as archive:
            for name in archive.namelist():
                if name.startswith(package + "/") and name.endswith(".py"):
                    archive.extract(name, target)
        done.write_text(wheel(cache, distribution, version).name + "\n")


class _StubMeta(type):
    """A stub class: any attribute is another stub, it subscripts and unions to itself, iterates as
    empty, and called with a lone callable (a decorator) it returns that callable."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(f"{cls.__name__}.{name}")

    def __getitem__(cls, item):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    # A stub used as a number at import (a field's bound, torch.iinfo(torch.long).max): zero.
    def __index__(cls):
        return 0

    __int__ = __index__

    def __call__(cls, *args, **kwargs):
        if cls.__dict__.get("_stub") and len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return super().__call__(*args, **kwargs)


class _Stub(metaclass=_StubMeta):
    def __init_subclass__(cls, **kwargs):  # (msgspec.Struct subclasses pass options)
        pass

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):  # a stub-typed field takes anything
        from pydantic_core import core_schema
        return core_schema.any_schema()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub_class(name)()

    def __call__(self, *args, **kwargs):
        return _stub_class("result")()

    def __iter__(self):
        return iter(())

    def __index__(self):
        return 0

    __int__ = __index__

    # Import-time arithmetic on a stub's result (a schema string built at import): the stub vanishes.
    def __radd__(self, other):
        return other

    def __add__(self, other):
        return other


def _stub_class(name: str) -> type:
    return _StubMeta(name.rsplit(".", 1)[-1], (_Stub,), {"_stub": True, "__module__": "stub"})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub_class(name)
        setattr(self, name, value)
        return value


class _HollowPackage(types.ModuleType):
    """A package whose __init__ did not run: a name it would have defined is its submodule when it
    has one, else a stub (its __init__ re-exports what vLLM's config and renderer modules import)."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if any((Path(p) / f"{name}.py").exists() or (Path(p) / name).is_dir() for p in self.__path__):
            value = importlib.import_module(f"{self.__name__}.{name}")
        else:
            value = _stub_class(name)
        setattr(self, name, value)
        return value


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on `sys.meta_path`: serves what nothing installed does, for the listed top-level names."""

    def __init__(self, stubs: frozenset[str], aliases: dict[str, str], versions: dict[str, str]):
        self.stubs = stubs
        self.aliases = aliases
        self.versions = versions
        self.served: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.split(".", 1)[0]
        if top in self.stubs or fullname in self.aliases:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        if spec.name in self.aliases:
            return importlib.import_module(self.aliases[spec.name])
        module = _StubModule(spec.name)
        module.__path__ = []
        if spec.name in self.versions:
            module.__version__ = self.versions[spec.name]
        self.served.add(spec.name)
        return module

    def exec_module(self, module):
        pass


def activate(cache: Path) -> StubFinder:
    """The extracted trees first on `sys.path`, the stub finder last on `sys.meta_path`."""
    roots = [cache / f"{distribution}-{version}" for distribution, version, _ in PINS]
    for root in roots:
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    for finder in sys.meta_path:
        if isinstance(finder, StubFinder):
            return finder
    stubs, aliases, hollow, versions = read_stubs()
    metadata = cache / "dist-info"
    for name, version in versions.items():
        info = metadata / f"{name}-{version}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if str(metadata) not in sys.path:
        sys.path.append(str(metadata))
    for package in hollow:  # parents first (the file lists them so)
        if package not in sys.modules:
            folder = Path(*package.split("."))
            module = _HollowPackage(package)
            module.__path__ = [str(root / folder) for root in roots if (root / folder).is_dir()]
            sys.modules[package] = module
            parent, _, name = package.rpartition(".")
            if parent:
                setattr(sys.modules[parent], name, module)
    finder = StubFinder(stubs, aliases, versions)
    sys.meta_path.append(finder)
    for name in sorted(stubs):
        # A folder of a stubbed name on sys.path (integration/xgrammar/, on it since conftest.py put
        # integration/ there) is a namespace package that the path finder, first, would import in
        # place of the stub: the stub goes in sys.modules before it can.
        spec = importlib.machinery.PathFinder.find_spec(name)
        if name not in sys.modules and spec is not None and spec.origin is None:
            sys.modules[name] = finder.create_module(importlib.machinery.ModuleSpec(name, finder, is_package=True))
    return finder


if __name__ == "__main__":
    extract(Path(sys.argv[1]))
