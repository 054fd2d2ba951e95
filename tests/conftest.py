"""Shared fixtures: the data folder beside the repository, and hypothesis profiles.

`../shared/data` is read in place (never copied into the repository); tests that need it skip
cleanly when it is absent, so a fresh clone passes on its own.
"""

import json
import math
import os
import pathlib
import shlex
import sys

import pytest
from hypothesis import HealthCheck, settings

from gemma4_lark import accelerators

TESTS = pathlib.Path(__file__).resolve().parent  # the helpers and data folders beside the test folders
REPO = TESTS.parent
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


def hostile(*args) -> str:
    """The command line of tests/targets/hostile.py, a conformance target that misbehaves as `args` say."""
    return shlex.join([sys.executable, str(TESTS / "targets" / "hostile.py"), *map(str, args)])


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


# --- the fast tier: `make check` ----------------------------------------------------------------
# `make test` (CI's command) runs every test. `make check` (`pytest --fast`) is the tier run on
# every edit, in well under a minute and a half: it leaves out the tests marked `slow` and draws at
# most FAST_EXAMPLES examples in each property test (a sample of each property; `make test` draws
# each test's full count, `make fuzz` far more). Slow, and only here: every complexity guard (made
# by timing.guard_tests: each times its work at n and 16n, and its quadratic twin), and the modules
# and tests below (subprocesses, builds, whole campaigns, exports checked by llguidance).
FAST_EXAMPLES = 10
# By file name, whatever the folder (no two test files share one: packaging/test_layout.py).
SLOW = [
    "test_packaging.py::test_wheel_installs_and_parses",  # builds the wheel, installs it in a new venv
    "test_packaging.py::test_the_documented_install_serves_requests_with_tools_beside_vllms_pins",
    "test_typing.py::test_user_script_passes_mypy_strict",
    "test_fuzz_campaigns.py",  # every campaign, the corpus, doubling and memory checks: `make fuzz` in small
    "test_cli.py::test_fuzz_campaign_small",
    "test_constrain_attack.py::test_hostile_tools_get_an_export_or_a_clear_error",  # 2,000-value enums, 400 properties
    "test_openai.py::test_omp_stream_cases_accumulate_to_the_message_and_to_omps_calls",  # every OMP case, 1-char chunks
    "test_cli_streaming.py",  # memory of a command over growing inputs
    "test_message_writer.py::test_parse_format_openai_memory_does_not_grow_with_the_input",
    "test_errors.py::test_an_error_at_the_end_of_a_large_block_costs_no_parse_tree",
    "test_constrain_never_wider.py::test_the_property_ran_on_enough_examples",  # counts the full run's examples
    "test_accelerators.py",  # two fresh interpreters with every accelerator instrumented
    "test_conformance_hostile.py",  # hostile targets: floods, hangs, crashes
]


def pytest_addoption(parser):
    parser.addoption("--fast", action="store_true",
                     help="the fast tier (make check): no slow test, at most %d examples per property" % FAST_EXAMPLES)


def _is_slow(item) -> bool:
    if item.get_closest_marker("slow"):
        return True
    if getattr(getattr(item, "function", None), "__module__", None) == "timing":  # a complexity guard
        return True
    module, _, test = item.nodeid.partition("::")
    module = module.rpartition("/")[2]
    return module in SLOW or f"{module}::{test.partition('[')[0]}" in SLOW


# --- the order files start in, on two workers -------------------------------------------------------
# `make test` hands whole files to its workers (--dist loadfile, --no-loadscope-reorder), in the
# order collected: the longest first, so that the last files to start are short and neither worker
# waits long for the other at the end. CPU seconds of the full run, measured on the 2-core VM; a stale
# entry costs balance, never a result.
LONGEST_FIRST = [
    "test_complexity.py",  # ~40 s
    "test_packaging.py",  # builds and installs wheels: ~30 s of CPU, more of waiting
    "test_fastpath.py", "test_openai.py",  # ~45 s each
    "test_constrain_export.py", "test_stray_markup.py", "test_openai_complexity.py", "test_fuzz_campaigns.py",
    "test_constrain_attack.py", "test_stream_block_jump.py", "test_stream_trust.py", "test_express.py",  # 20-30 s
    "test_constrain_greedy.py", "test_grammar.py", "test_constrain_printers.py", "test_render_attacks.py",
    "test_lean_driver.py", "test_openai_messages_in.py", "test_cli_abuse.py",  # 15-20 s
]


def _start_order(item) -> int:
    name = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_start_order)  # stable: each file's own order, and the others' order, stay
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
    if not config.getoption("--fast"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
    for item in items:
        _cap_examples(getattr(item, "obj", None))


def _cap_examples(test) -> None:
    # hypothesis keeps a test's settings on the test (its own attribute, read when the test runs);
    # where a later hypothesis keeps them elsewhere, the tier runs the full count: slower, not weaker
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(current, settings) and current.max_examples > FAST_EXAMPLES:
        test._hypothesis_internal_use_settings = settings(current, max_examples=FAST_EXAMPLES)
