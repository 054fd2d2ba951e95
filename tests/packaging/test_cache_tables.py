"""The parser tables: never unpickled, never read from or written to a temporary folder, current
with the grammar, and enough on a read-only install with no usable temporary folder."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import lark
import pytest

from conftest import REPO, minimum_versions

MINIMUM = minimum_versions()
from gemma4_lark import grammar

# Run in a fresh process before anything is imported: every way of unpickling raises, and
# `tempfile` finds no usable folder, exactly as when none is writable (gettempdir raises
# FileNotFoundError then).
_HOSTILE = """
import pickle, sys, tempfile
def refuse(*args, **kwargs):
    raise AssertionError("something was unpickled")
pickle.load = pickle.loads = refuse
class Refused:
    def __init__(self, *args, **kwargs):
        refuse()
pickle.Unpickler = Refused
tempfile.tempdir = None
tempfile._candidate_tempdir_list = lambda: []
try:
    tempfile.gettempdir()
except FileNotFoundError:
    pass
else:
    raise SystemExit("could not take the temporary folder away")
"""

# Every entry point that builds a parser, and the import of the renderers.
_USE = """
import gemma4_lark as g
from gemma4_lark import grammar
from gemma4_incremental import StreamParser
from gemma4_lark.render.official import render_chat
assert g.parse_call('<|tool_call>call:f{a:1}<tool_call|>').arguments == {"a": 1}
assert len(g.parse_output_document('hi<|tool_call>call:f{a:1}<tool_call|>').calls) == 1
assert g.validate('<|tool_call>call:f{a:1,}<tool_call|>')
parser = StreamParser()
kinds = [e.type for e in parser.feed('<|tool_call>call:f{a:1}<tool_call|>') + parser.flush()]
assert "tool_call_end" in kinds, kinds
print(grammar.__file__, getattr(grammar, "stored_tables", lambda: None)() is not None)
"""


def _run(code, env=None, user=None):
    command = [sys.executable, "-B", "-c", code]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + command
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd="/", timeout=120)


def test_nothing_unpickled_and_nothing_written_to_the_temporary_folder(tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    code = "import pickle\ndef refuse(*a, **k): raise AssertionError('unpickled')\n" \
           "pickle.load = pickle.loads = refuse\n" + _USE
    for _ in range(2):  # the second process would find whatever the first one left
        result = _run(code, env)
        assert result.returncode == 0, result.stderr
        assert list(temp.iterdir()) == []


def test_parses_with_no_usable_temporary_folder(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o555)
    env = dict(os.environ, TMPDIR=str(tmp_path / "missing"), HOME=str(home))
    result = _run(_HOSTILE + _USE, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "True"  # from the stored tables


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in root.rglob("*")}


def test_read_only_install_without_temporary_folder():
    # A copy of both packages in a read-only folder, as in a read-only site-packages. When the
    # suite runs as root (for whom modes are no obstacle), the check runs as `nobody`.
    as_nobody = os.geteuid() == 0 and shutil.which("setpriv") is not None
    site = tempfile.mkdtemp(prefix="gemma4-ro-")
    try:
        os.chmod(site, 0o755)
        shutil.copytree(REPO / "gemma4_lark", os.path.join(site, "gemma4_lark"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(REPO / "incremental", os.path.join(site, "gemma4_incremental"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path, dirs, files in os.walk(site):
            for name in files:
                os.chmod(os.path.join(path, name), 0o444)
            os.chmod(path, 0o555)
        before = _tree(__import__("pathlib").Path(site))
        lark_dir = os.path.dirname(os.path.dirname(lark.__file__))
        env = {"PATH": os.environ.get("PATH", ""), "TMPDIR": "/nonexistent", "HOME": site,
               "PYTHONPATH": os.pathsep.join([site, lark_dir])}
        # PYTHONPATH puts the copy ahead of the editable install's finder.
        result = _run(_HOSTILE + _USE, env, user=65534 if as_nobody else None)
        assert result.returncode == 0, result.stderr
        file, used_tables = result.stdout.split()[-2:]
        assert file.startswith(site) and used_tables == "True"
        assert _tree(__import__("pathlib").Path(site)) == before
    finally:
        for path, dirs, files in os.walk(site):
            os.chmod(path, 0o755)
        shutil.rmtree(site)


def test_stored_tables_are_current():
    assert grammar.stored_tables() is not None, (
        f"{grammar.TABLES_FILE} was not generated from this grammar by Lark {lark.__version__}: run `make tables`")
    assert grammar.stale_tables() == [], "the stored parser tables are stale: run `make tables`"


def test_tables_are_carried_for_the_declared_minimum_lark():
    # vLLM pins the minimum (1.2.2): a user beside it must not pay the build at every start.
    stored = grammar.decode_tables(grammar.tables_path().read_text(encoding="utf-8"))
    assert MINIMUM["lark"] in stored["lark"], f"no tables for lark {MINIMUM['lark']}: run `make tables`"
    assert lark.__version__ in stored["lark"]


def test_regenerating_keeps_the_other_versions_tables(monkeypatch):
    monkeypatch.setattr(lark, "__version__", "0.0.test")
    grammar.stored_tables.cache_clear()
    try:
        versions = grammar.generate_tables()["lark"]
        on_file = grammar.decode_tables(grammar.tables_path().read_text(encoding="utf-8"))["lark"]
        assert set(versions) == set(on_file) | {"0.0.test"}
    finally:
        monkeypatch.undo()
        grammar.stored_tables.cache_clear()


def test_a_changed_grammar_is_not_served_from_the_stored_tables(monkeypatch):
    # An edit that changes the language. Any edit changes the digest, so the stored tables stop
    # serving at once, and the meaning check reports them stale until `make tables`.
    text = grammar.grammar_text()
    changed = text.replace("value_document: value", "value_document: value | value value", 1)
    assert changed != text
    monkeypatch.setattr(grammar, "grammar_text", lambda: changed)
    grammar.stored_tables.cache_clear()
    try:
        assert grammar.stored_tables() is None
        assert grammar.stale_tables() == sorted(grammar.STORED_STARTS)
        built = grammar.build(grammar.BLOCK_STARTS)
        assert hasattr(built, "grammar")  # built from the (changed) grammar, not loaded
    finally:
        monkeypatch.undo()
        grammar.stored_tables.cache_clear()


def test_tables_of_another_lark_version_are_not_used(monkeypatch):
    monkeypatch.setattr(lark, "__version__", lark.__version__ + ".other")
    grammar.stored_tables.cache_clear()
    try:
        assert grammar.stored_tables() is None
    finally:
        monkeypatch.undo()
        grammar.stored_tables.cache_clear()


def test_meaning_check_sees_a_changed_table():
    tables = json.loads(grammar.tables_path().read_text(encoding="utf-8"))
    stored = grammar.decode_tables(grammar.tables_path().read_text(encoding="utf-8"))["lark"][lark.__version__]["block"]
    fresh = grammar.canonical_tables(grammar.build(grammar.BLOCK_STARTS, cache=False))
    assert grammar.canonical_tables(lark.Lark._load_from_dict(stored["data"], stored["memo"])) == fresh
    # Turn one shift into a shift to another state: the meaning differs.
    states = stored["data"]["parser"]["parser"]["states"]
    for row in states.values():
        shifts = [t for t, (action, arg) in row.items() if action == 0]
        if shifts:
            action, arg = row[shifts[0]]
            row[shifts[0]] = (0, (arg + 1) % len(states))
            break
    assert grammar.canonical_tables(lark.Lark._load_from_dict(stored["data"], stored["memo"])) != fresh
    assert tables["lark"]  # the file is plain JSON


def test_encoding_is_exact():
    tables = grammar.generate_tables()
    assert grammar.decode_tables(grammar.encode_tables(tables)) == tables
    with pytest.raises(TypeError):
        grammar.encode_tables({"grammar_sha256": "", "lark": {"1": {"x": {"data": {1: "a", "b": 2}}}}})
    with pytest.raises(TypeError):
        grammar.encode_tables({"grammar_sha256": "", "lark": {"1": {"x": {"data": {"~tuple": 1}}}}})
    with pytest.raises(TypeError):
        grammar.encode_tables({"grammar_sha256": "", "lark": {"1": {"x": {"data": {"a": object()}}}}})


def test_parsers_from_the_stored_tables_agree_with_built_ones():
    for starts in grammar.STORED_STARTS.values():
        loaded, built = grammar.build(starts), grammar.build(starts, cache=False)
        assert not hasattr(loaded, "grammar") and hasattr(built, "grammar")
        assert grammar.canonical_tables(loaded) == grammar.canonical_tables(built)


def test_check_command(tmp_path, monkeypatch, capsys):
    assert grammar.main(["--check"]) == 0
    monkeypatch.setattr(grammar, "tables_path", lambda: tmp_path / "tables.json")
    monkeypatch.setattr(grammar, "terminals_path", lambda: tmp_path / "terminals.json")
    monkeypatch.setattr(grammar.resources, "files", lambda package: tmp_path)
    grammar.stored_tables.cache_clear()
    (tmp_path / grammar.GRAMMAR_FILE).write_text(grammar.grammar_text(), encoding="utf-8")
    try:
        assert grammar.main(["--check"]) == 1
        assert "stale" in capsys.readouterr().err
        assert grammar.main([]) == 0
        assert grammar.main(["--check"]) == 0
        assert stat.S_ISREG((tmp_path / "tables.json").stat().st_mode)
        assert json.loads((tmp_path / "terminals.json").read_text(encoding="utf-8")) == grammar.generate_terminals()
        (tmp_path / "terminals.json").write_text("{}", encoding="utf-8")
        assert grammar.main(["--check"]) == 1 and "terminals.json is stale" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        grammar.stored_tables.cache_clear()
        grammar.terminal_specs.cache_clear()


def test_terminals_are_those_of_the_whole_grammar():
    # terminals() joins the two stored parsers' terminals rather than building a third parser.
    def described(terms):
        return {t.name: (t.pattern.type, t.pattern.value, tuple(sorted(t.pattern.flags)), t.priority) for t in terms}

    whole = grammar.build(grammar.BLOCK_STARTS + grammar.DOCUMENT_STARTS, cache=False).terminals
    assert described(grammar.terminals()) == described(whole)
    assert len(grammar.terminals()) == len(whole)


def test_stored_terminals_are_current():
    assert not grammar.stale_terminals(), f"{grammar.TERMINALS_FILE} is stale: run `make tables`"


def test_terminal_patterns_read_without_lark_are_larks():
    # terminal_pattern and literal_terminals read terminals.json; Lark's own objects must agree
    for term in grammar.terminals():
        assert grammar.terminal_pattern(term.name).pattern == term.pattern.to_regexp(), term.name
    assert grammar.literal_terminals() == {t.pattern.value: t.name for t in grammar.terminals() if t.pattern.type == "str"}


def test_stored_terminals_of_another_grammar_are_not_used(monkeypatch):
    monkeypatch.setattr(grammar, "_stored_terminals_text", lambda: grammar.encode_terminals(
        {"grammar_sha256": "0" * 64, "terminals": [["NAME", "re", "x", []]]}))
    grammar.terminal_specs.cache_clear()
    try:
        assert grammar.terminal_specs()["NAME"][1] != "x"
        assert grammar.terminal_specs() == {name: (kind, value, tuple(flags))
                                            for name, kind, value, flags in grammar.generate_terminals()["terminals"]}
    finally:
        monkeypatch.undo()
        grammar.terminal_specs.cache_clear()
