"""The documentation: generated spec pages are current, examples in the grammar are checked, and
the guide's code runs."""

import re

import pytest

from gemma4_lark import docs
from conftest import REPO



def test_spec_pages_are_current():
    stale = docs.stale(REPO / "docs" / "spec")
    assert stale == [], f"docs/spec is stale ({stale[:5]}): run gemma4-lark docs --out docs/spec"


def test_generation_is_deterministic(tmp_path):
    docs.generate(tmp_path / "a")
    docs.generate(tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_every_block_rule_has_examples_and_counterexamples():
    entries = {e.name: e for e in docs.load()}
    for name in docs.BLOCK_TOPS:
        assert entries[name].examples and entries[name].counterexamples


def test_a_wrong_example_fails_generation(monkeypatch, tmp_path):
    entries = docs.load()
    call = next(e for e in entries if e.name == "call_block")
    call.examples.append("<|tool_call>call:f{a:1,}<tool_call|>")
    with pytest.raises(docs.DocsError, match="example does not parse"):
        docs.check_examples(entries)
    call.examples.pop()
    call.counterexamples.append("<|tool_call>call:f{}<tool_call|>")
    with pytest.raises(docs.DocsError, match="counterexample parses"):
        docs.check_examples(entries)


def test_check_reports_stale_files(tmp_path, capsys):
    out = tmp_path / "spec"
    docs.generate(out)
    (out / "index.md").write_text("edited")
    (out / "extra.md").write_text("x")
    assert docs.main(str(out), check=True) == 1
    err = capsys.readouterr().err
    assert "index.md" in err and "extra.md" in err


def test_every_rule_and_terminal_has_a_page():
    entries = docs.load()
    for entry in entries:
        assert (REPO / "docs" / "spec" / entry.page).exists(), entry.name
        if not entry.is_terminal:
            assert (REPO / "docs" / "spec" / "diagrams" / f"{entry.name}.svg").exists()


def test_guide_examples_run():
    text = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 5
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/guide.md", "exec"), namespace)


def test_docs_are_linked_from_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.splitlines()[:6]
    assert any("make demo" in line for line in first) and any("make test" in line for line in first)
    # The README's list of pages is exactly the pages there are: docs/*.md, and the generated spec's index.
    listed = re.findall(r"^- `(docs/[^`]+\.md)`: ", readme.split("\n## Documentation\n", 1)[1], re.M)
    pages = sorted(f"docs/{path.name}" for path in (REPO / "docs").glob("*.md")) + ["docs/spec/index.md"]
    assert sorted(listed) == sorted(pages) and len(listed) == len(set(listed)), (set(listed) ^ set(pages), listed)
