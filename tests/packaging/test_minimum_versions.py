"""The declared dependency ranges are true at their low ends: constraints/minimum.txt pins each
user-installed dependency at the lower bound pyproject.toml declares, and `make test-minimum` (run
by CI) runs the suite in a venv installed with those pins."""

import os
import re
from importlib import metadata

import pytest

from conftest import REPO, minimum_versions

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

# The extras a user installs beside the runtime dependencies (the others are our own tooling).
USER_EXTRAS = ("docs", "constrain")


def _lower_bounds() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in USER_EXTRAS:
        requirements += project["optional-dependencies"][extra]
    bounds = {}
    for requirement in requirements:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([0-9][0-9.]*)(?:\s*,\s*<\s*[0-9.]+)?", requirement)
        assert m, f"{requirement!r}: declare a lower bound (name>=X[,<Y]) so that it can be tested"
        bounds[m[1]] = m[2]
    return bounds


def _release(version: str) -> tuple:
    return tuple(int(p) for p in version.split("."))


def test_minimum_pins_are_the_declared_lower_bounds():
    pins, bounds = minimum_versions(), _lower_bounds()
    assert set(pins) == set(bounds)
    for name, bound in bounds.items():
        assert _release(pins[name]) == _release(bound) + (0,) * (len(_release(pins[name])) - len(_release(bound))), (
            f"{name}: pyproject says >={bound}, constraints/minimum.txt pins {pins[name]}")


@pytest.mark.skipif(not os.environ.get("GEMMA4_MINIMUM_VERSIONS"), reason="only in `make test-minimum`")
def test_this_run_has_the_minimum_versions_installed():
    for name, version in minimum_versions().items():
        assert metadata.version(name) == version, f"{name} {metadata.version(name)} installed, not {version}"
