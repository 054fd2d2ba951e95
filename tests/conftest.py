"""Shared fixtures: the data folder beside the repository, and hypothesis profiles.

`../shared/data` is read in place (never copied into the repository); tests that need it skip
cleanly when it is absent, so a fresh clone passes on its own.
"""

import json
import math
import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

from gemma4_lark import accelerators

REPO = pathlib.Path(__file__).resolve().parent.parent
SHARED_DATA = pathlib.Path(os.environ.get("GEMMA4_SHARED_DATA", REPO.parent / "shared" / "data"))

# `ci`, the default, is derandomized: every run of a commit draws the same examples (seeded from each
# test), so a suite that passed passes again on any clone, and a failure reproduces. Exploration,
# where each run draws new examples and may find a new counterexample, is asked for by name:
# HYPOTHESIS_PROFILE=explore (or dev, deep) and `make fuzz`.
settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("deep", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def needs_accelerators(why: str):
    """Mark a test of an accelerator's own use or of what only it achieves (`why`): with
    GEMMA4_LARK_ACCELERATORS=0 (`make test-plain`) none runs, by design, and the test skips.
    Tests that compare an accelerator with the plain path call it by name and run either way."""
    return pytest.mark.skipif(not accelerators.ENABLED, reason=f"GEMMA4_LARK_ACCELERATORS=0, the plain path: {why}")


def minimum_versions() -> dict[str, str]:
    """The lowest version of each user-installed dependency (constraints/minimum.txt)."""
    pins = {}
    for line in (REPO / "constraints" / "minimum.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip()] = version.strip()
    return pins


def shared_file(*parts) -> pathlib.Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path


def shared_cases(*parts) -> list:
    """Cases for parametrize: the file's records, or one skipped case when the data is absent
    (pytest.skip cannot be called while tests are being collected)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"shared data not present: {path}"))]
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_jsonl(*parts) -> list:
    with shared_file(*parts).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def same(a, b) -> bool:
    """Deep equality that also tells int from float and -0.0 from 0.0 (and is not recursive)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if x is not y:
                return False
        elif isinstance(x, float) or isinstance(y, float):
            if type(x) is not type(y) or x != y or math.copysign(1, x) != math.copysign(1, y):
                return False
        elif isinstance(x, dict):
            if not isinstance(y, dict) or list(x) != list(y):
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif x != y or type(x) is not type(y):
            return False
    return True


def numbers_by_value(value):
    """OMP is JavaScript: 1.0 and 1 are the same number. Numbers become floats, everywhere in
    lists, dicts and tuples, so values compare as OMP's do."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [numbers_by_value(v) for v in value]
    if isinstance(value, dict):
        return {k: numbers_by_value(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(numbers_by_value(v) for v in value)
    return value
