"""How a module serves names it does not define at import: a name exported lazily (imported when
first asked, so `import gemma4_lark` loads no renderer, no Lark), and an old name kept for one
release, which warns (docs/architecture.md, "Names").

It imports nothing of the package: any module may use it without an import cycle.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any, Callable

__all__ = ["module_getattr"]


def module_getattr(module: str, *, lazy: dict[str, str] | None = None,
                   renamed: dict[str, str] | None = None) -> Callable[[str], Any]:
    """A module `__getattr__` (PEP 562) for `module`.

    `lazy` maps a name to where it lives, `"package.module:attribute"` or `"package.module"` for
    a module itself: imported on first use, then kept in the module's namespace. `renamed` maps an
    old name to its new one: asking for the old name gives the new name's object and a
    DeprecationWarning naming both, at the caller's line.
    """
    lazy = dict(lazy or {})
    renamed = dict(renamed or {})

    def __getattr__(name: str) -> Any:
        if name in lazy:
            where, _, attribute = lazy[name].partition(":")
            value = importlib.import_module(where)
            if attribute:
                value = getattr(value, attribute)
            setattr(sys.modules[module], name, value)
            return value
        if name in renamed:
            new = renamed[name]
            warnings.warn(f"{module}.{name} is deprecated: it is {module}.{new} now, and the old name goes in the"
                          f" next release", DeprecationWarning, stacklevel=2)
            return getattr(sys.modules[module], new)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
