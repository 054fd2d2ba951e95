"""`gemma4-lark grammar`, and the exports kept in docs/exports: regenerated from the grammar, they
must be what is checked in (a changed grammar fails here until they are written again)."""

from __future__ import annotations


import pytest

from gemma4_lark import constrain
from gemma4_lark.cli import main
from conftest import REPO

EXPORTS = REPO / "docs" / "exports"
FILES = {"llguidance": "{scope}.llguidance.lark", "lark": "{scope}.lark", "gbnf": "{scope}.gbnf",
         "xgrammar": "{scope}.xgrammar.ebnf"}


@pytest.mark.parametrize("scope", ["call", "output"])
@pytest.mark.parametrize("fmt", sorted(FILES))
def test_checked_in_exports_are_current(fmt, scope):
    path = EXPORTS / FILES[fmt].format(scope=scope)
    assert path.read_text(encoding="utf-8") == constrain.grammar(fmt, scope=scope), (
        f"{path} is stale: run `gemma4-lark grammar --format {fmt} --scope {scope} > {path}`")


def test_cli_prints_the_grammar(capsys):
    assert main(["grammar", "--format", "gbnf", "--scope", "output", "--no-thinking"]) == 0
    assert capsys.readouterr().out == constrain.grammar("gbnf", scope="output", thinking=False)


def test_cli_named_tool_choice_needs_tools(capsys):
    assert main(["grammar", "--format", "gbnf", "--scope", "output", "--tool-choice", "get_weather"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gemma4-lark grammar: ") and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["grammar", "--format", "gbnf", "--scope", "call", "--tool-choice", "none"],
    ["grammar", "--format", "gbnf", "--tool-choice", "{not json"],
])
def test_cli_bad_requests_are_one_line(capsys, argv):
    assert main(argv) in (1, 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_unreadable_tools(capsys, tmp_path):
    bad = tmp_path / "tools.json"
    bad.write_text("[1", encoding="utf-8")
    assert main(["grammar", "--format", "gbnf", "--tools", str(bad)]) == 1
    assert "not JSON" in capsys.readouterr().err
