"""The accelerators' switch (gemma4_lark/accelerators.py): GEMMA4_LARK_ACCELERATORS=0 turns every
accept-only second implementation off, and the results stay the same.

Each check runs a fresh interpreter (the switch is read once, at import) with the accelerators'
entry points instrumented: a counter wraps each one, a workload that would use them all runs, and
the counts come back. The same probe with the switch on must see each one used, or the counts
could not tell anything apart.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO
from gemma4_lark import accelerators

_PROBE = r'''
import json

import gemma4_incremental as gi
import gemma4_lark as g
from gemma4_incremental import _block_jump, _machine, express
from gemma4_lark import fastpath, lalr

used = {}


def count(owner, name, label):
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        used[label] = used.get(label, 0) + 1
        return real(*args, **kwargs)
    setattr(owner, name, counted)


count(fastpath, "parse_call", "fast path")
count(lalr.LeanLALR, "_run", "lean driver")
count(lalr.LeanLALR, "parse_with_lark", "lark parser")
count(express, "read_whole", "express path")
count(_block_jump, "block_rest_end", "block jump")
count(_machine.StreamMachine, "scan_chunk", "scan")

D = '<|"|>'
CALL = "<|tool_call>call:get_weather{location:" + D + "Tokyo, JP" + D + ",days:3}<tool_call|>"
THOUGHT = "<|channel>thought\nThe user wants the weather.<channel|>"


def stream_text():
    parser = gi.StreamParser(strict=True)
    return parser.feed("hello ") + parser.feed("world") + parser.flush()


def stream_block():
    parser = gi.StreamParser(id_factory=lambda: "id")
    return parser.feed("hi " + CALL + " bye") + parser.flush()


workloads = {
    "parse_call": lambda: g.parse_call(CALL),
    "parse_call, a block the fast path leaves": lambda: g.parse_call("<|tool_call>call:f{a:.5}<tool_call|>"),
    "parse_call, repeated keys": lambda: (lambda found: (g.parse_call(
        "<|tool_call>call:f{k:1,k:2}<tool_call|>", duplicates=found), found))([]),
    "parse_output_document": lambda: g.parse_output_document("hi " + THOUGHT + CALL),
    "parse_output": lambda: gi.parse_output("Text " + THOUGHT + CALL, id_factory=lambda: "id"),
    "parse_output with tools": lambda: gi.parse_output(CALL, id_factory=lambda: "id", tools=[
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]),
    "stream, text": stream_text,
    "stream, a block": stream_block,
}
report = {}
for name, run in workloads.items():
    used.clear()
    try:
        result = repr(run())
    except Exception as exc:
        result = "raised " + repr(exc)
    report[name] = {"used": dict(used), "result": result}
print(json.dumps(report))
'''


def _probe(switch: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != accelerators.ENV_VAR}
    if switch is not None:
        env[accelerators.ENV_VAR] = switch
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def on():
    return _probe(None)


@pytest.fixture(scope="module")
def off():
    return _probe("0")


def _used(report: dict, workload: str, accelerator: str) -> int:
    return report[workload]["used"].get(accelerator, 0)


@pytest.mark.parametrize("value, enabled", [
    (None, True), ("0", False), ("1", True), ("", True), ("false", True), (" 0", True), ("00", True),
])
def test_the_switch_is_off_only_for_0(value, enabled):
    env = {k: v for k, v in os.environ.items() if k != accelerators.ENV_VAR}
    if value is not None:
        env[accelerators.ENV_VAR] = value
    code = "from gemma4_lark import accelerators; print(accelerators.ENABLED, accelerators.enabled())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(enabled)] * 2


def test_on_every_accelerator_is_used(on):
    """The probe sees each accelerator at work when the switch is on (so its zeros, off, mean something)."""
    assert _used(on, "parse_call", "fast path") == 1 and _used(on, "parse_call", "lean driver") == 0
    assert _used(on, "parse_call, a block the fast path leaves", "lean driver") == 1
    assert _used(on, "parse_output_document", "lean driver") == 1
    assert _used(on, "parse_output", "express path") == 1
    assert _used(on, "stream, a block", "block jump") >= 1 and _used(on, "stream, a block", "fast path") == 1
    assert _used(on, "stream, text", "scan") == 0  # both chunks taken by feed's inlined path
    for workload in on:
        assert _used(on, workload, "lark parser") == 0, workload


def test_off_the_parsers_run_larks_parser_alone(off):
    for workload in ("parse_call", "parse_call, a block the fast path leaves", "parse_call, repeated keys",
                     "parse_output_document"):
        assert _used(off, workload, "fast path") == 0, workload
        assert _used(off, workload, "lean driver") == 0, workload
        assert _used(off, workload, "lark parser") == 1, workload


def test_off_parse_output_reads_with_the_stream(off):
    for workload in ("parse_output", "parse_output with tools"):
        assert _used(off, workload, "express path") == 0, workload
        assert _used(off, workload, "lean driver") == 0, workload
        assert _used(off, workload, "lark parser") >= 1, workload


def test_off_the_stream_scans_every_chunk(off):
    assert _used(off, "stream, text", "scan") == 2
    for workload in ("stream, a block", "parse_output", "parse_output with tools"):
        assert _used(off, workload, "block jump") == 0, workload
        assert _used(off, workload, "fast path") == 0, workload


def test_the_results_are_the_same_both_ways(on, off):
    assert {name: r["result"] for name, r in on.items()} == {name: r["result"] for name, r in off.items()}


def test_every_proof_the_architecture_page_names_is_a_test():
    """docs/architecture.md's table names each accelerator's proofs as `tests/FILE.py::test`
    (then `::test` for more of the same file): each must be a test function of that file."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| **")]
    assert len(rows) == 5, rows
    for row in rows:
        proofs = row.rsplit(" | ", 1)[1]
        named, path = [], None
        for file, test in re.findall(r"`(?:(tests/[\w/]+\.py))?::(\w+)`", proofs):
            path = file or path
            named.append((path, test))
        assert named, row
        for path, test in named:
            tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
            tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            assert test in tests, f"{path}::{test}"
