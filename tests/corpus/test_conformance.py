"""The conformance corpus, run as data (in the spirit of toml-test): every valid input parses to its
expected JSON, every invalid input fails at its expected line and column."""

import json

import pytest

import gemma4_lark as g
from gemma4_lark.model import to_jsonable
from gemma4_lark.parser import parse

from conftest import same, TESTS

CORPUS = TESTS / "conformance"


def _cases(kind):
    return sorted(p.with_suffix("") for p in (CORPUS / kind).glob("*.gemma"))


def _load(base):
    text = base.with_suffix(".gemma").read_bytes().decode("utf-8")
    spec = json.loads(base.with_suffix(".json").read_text(encoding="utf-8"))
    return text, spec


def test_corpus_size():
    assert len(_cases("valid")) >= 80
    assert len(_cases("invalid")) >= 60
    assert len(list((CORPUS / "streams").glob("*.json"))) >= 10


def test_corpus_is_current():
    """The manifest lists every file of the corpus with its checksum (after editing a case: run
    `python -m gemma4_lark.conformance.corpus`)."""
    from gemma4_lark.conformance import check_manifest

    assert check_manifest() == []


def _stream_cases():
    return sorted((CORPUS / "streams").glob("*.json"))


@pytest.mark.parametrize("path", _stream_cases(), ids=lambda p: p.stem)
@pytest.mark.parametrize("size", [0, 1, 3])
def test_stream(path, size):
    from stream_helpers import merged, run, split_every

    case = json.loads(path.read_text(encoding="utf-8"))
    events = run(split_every(case["text"], size) if size else [case["text"]], **case["options"])
    assert [e.to_dict() for e in merged(events)] == case["events"]


@pytest.mark.parametrize("base", _cases("valid"), ids=lambda p: p.name)
def test_valid(base):
    text, spec = _load(base)
    result = to_jsonable(parse(text, spec["start"]))
    assert same(result, spec["expected"]), (result, spec["expected"])
    assert not [d for d in g.validate(text) if d.severity == "error"] or spec["start"] in ("thought", "value_document")


@pytest.mark.parametrize("base", _cases("invalid"), ids=lambda p: p.name)
def test_invalid(base):
    text, spec = _load(base)
    with pytest.raises(g.GemmaSyntaxError) as info:
        parse(text, spec["start"])
    err = info.value
    assert (err.line, err.column, err.pos) == (spec["line"], spec["column"], spec["pos"]), str(err)
    assert spec["message"] in err.message, str(err)
    # One line of message, then the source line, then the caret under the column.
    first, source_line, caret = str(err).split("\n")
    assert first.startswith(f"line {err.line}, column {err.column}: ")
    assert caret == " " * (err.column - 1) + "^"
