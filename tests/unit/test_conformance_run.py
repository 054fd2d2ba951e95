"""`gemma4-lark conformance run`: targets with a planted bug of each category are caught with that
category, a crashing or hanging target does not stop the run, this project's parser passes its own
kit, and the corpus files agree with their manifest and with the parser."""

import json
import shlex
import sys

import pytest

from gemma4_lark.cli import main
from gemma4_lark.conformance import CATEGORIES, check_manifest, categorize, export, target_cases
from gemma4_lark.conformance.protocol import ProtocolError, read_answer, same
from gemma4_incremental import conformance
from conftest import REPO, TESTS

PLANTED = TESTS / "targets" / "planted.py"
SERVE = shlex.join([sys.executable, "-m", "gemma4_lark", "conformance", "serve"])  # any path, spaces too
SMALL = ["--generated", "10", "--mutated", "10", "--shrink-seconds", "2", "--startup", "60"]


def _run(capsys, tmp_path, target, *extra):
    report = tmp_path / "report.json"
    code = main(["conformance", "run", "--target", target, "--report", str(report), *SMALL, *extra])
    out = capsys.readouterr().out
    return code, out, json.loads(report.read_text()) if report.exists() and report.stat().st_size else None


def test_own_parser_passes_its_own_kit(capsys, tmp_path):
    code, out, report = _run(capsys, tmp_path, SERVE)
    assert code == 0, out
    assert report["failed"] == [] and report["passed"] == report["cases"] == len(target_cases()) + 20
    assert "agrees with the kit on every case" in out


@pytest.mark.parametrize("bug, category", [
    ("calls", "calls"), ("arguments", "arguments"), ("text", "text"), ("accepts-invalid", "accepts-invalid"),
    ("crash", "crash"), ("raises", "crash"), ("timeout", "timeout"), ("protocol", "protocol"),
])
def test_planted_bug_is_caught_with_its_category(capsys, tmp_path, bug, category):
    code, out, report = _run(capsys, tmp_path, shlex.join([sys.executable, str(PLANTED), bug]), "--timeout", "1")
    assert code == 1, out
    assert report["categories"].keys() == {category}, report["categories"]
    assert report["cases"] == len(target_cases()) + 20  # the run went on past every failure
    assert report["passed"] + len(report["failed"]) == report["cases"]
    assert {"id", "category", "input", "expected", "got"} <= report["failed"][0].keys()
    smallest = report["smallest"][category]
    assert len(smallest["input"]) <= smallest["original_length"]
    assert smallest["category"] == category
    # the terminal table: the category, its count and its first failing case, then the shrunk input
    row = next(line for line in out.splitlines() if line.startswith(category + " "))
    assert str(report["categories"][category]) in row and report["failed"][0]["id"] in row
    assert "Smallest failing input" in out and json.dumps(smallest["input"], ensure_ascii=False)[1:-1] in out
    if bug in ("crash", "timeout", "protocol"):
        assert report["target_starts"] > 1  # started again after each such case
    if bug == "raises":
        assert report["target_starts"] == 1  # an {"error"} answer needs no restart


def test_a_target_that_never_answers_is_a_usage_error(capsys, tmp_path):
    code = main(["conformance", "run", "--target", "exit 3", *SMALL])
    err = capsys.readouterr().err
    assert code == 2 and "answered no case" in err and "exited with status 3" in err


def test_bad_arguments_are_usage_errors(capsys):
    for argv in (["--timeout", "0"], ["--timeout", "nan"], ["--generated", "-1"], []):
        with pytest.raises(SystemExit) as info:
            main(["conformance", "run", *(["--target", "true"] if argv else []), *argv])
        assert info.value.code == 2
    capsys.readouterr()


def test_a_target_that_does_not_read_cannot_block_the_run():
    """A request larger than a pipe's buffer to a target that never reads: a timeout, not a hang."""
    target = conformance.Target("sleep 30", timeout=0.5, startup=0.5)
    try:
        reply = target.ask({"text": "x" * (4 << 20)})
    finally:
        target.close()
    assert reply.category == "timeout"


def test_a_target_that_writes_two_lines_is_restarted_in_step():
    target = conformance.Target(shlex.quote(sys.executable) + " -c \"import sys\n"
                                "for line in sys.stdin: print('chatter'); print('{\\\"calls\\\": [], \\\"text\\\": \\\"\\\"}', flush=True)\"")
    try:
        first, second = target.ask({"text": "a"}), target.ask({"text": "b"})
    finally:
        target.close()
    assert first.category == second.category == "protocol" and target.starts == 2


def test_categories():
    call = {"name": "f", "arguments": {"n": 1}}
    assert categorize({"calls": [call], "text": ""}, {"calls": [call], "text": " \n"}) is None
    assert categorize({"calls": [call], "text": ""}, {"calls": [], "text": ""}) == "calls"
    assert categorize({"calls": [call], "text": ""}, {"calls": [{"name": "f", "arguments": {"n": 1.0}}], "text": ""}) == "arguments"
    assert categorize({"calls": [call], "text": "a b"}, {"calls": [call], "text": "ab"}) == "text"
    rejected = {"calls": [], "text": "<|tool_call>call:f{n:1,}<tool_call|>"}
    assert categorize(rejected, {"calls": [call], "text": ""}) == "accepts-invalid"
    assert list(CATEGORIES) == ["calls", "arguments", "text", "accepts-invalid", "crash", "timeout", "protocol"]


def test_answer_lines():
    assert read_answer('{"calls": [{"name": "f", "arguments": {}, "id": "x"}], "text": null, "extra": 1}') == {
        "calls": [{"name": "f", "arguments": {}}], "text": ""}
    assert read_answer('{"error": "KeyError"}') == {"error": "KeyError"}
    for line in ("OK", "[]", '{"text": ""}', '{"calls": [{"name": "f", "arguments": "{}"}], "text": ""}',
                 '{"calls": [], "text": 3}', '{"calls": [], "text": "", "x": NaN}'):
        with pytest.raises(ProtocolError):
            read_answer(line)
    assert same({"a": [1, -0.0]}, {"a": [1, -0.0]}) and not same(1, 1.0) and not same(1, True) and not same(0.0, -0.0)


def test_corpus_files_agree_with_their_manifest():
    assert check_manifest() == []


def test_corpus_requests_are_the_case_inputs_and_the_parser_gives_the_answers():
    for case in target_cases():
        spec = case.source
        kind, name = case.id.split("/")
        if kind == "streams":
            assert case.request["text"] == spec["text"] and case.request.get("options", {}) == spec["options"]
        else:
            text = (conformance_corpus() / kind / f"{name}.gemma").read_text(encoding="utf-8")
            wrapped = "<|tool_call>call:check{value:" + text + "}<tool_call|>"
            assert case.request["text"] == (wrapped if spec["start"] == "value_document" else text), case.id
        assert same(conformance.expected_answer(case.request), case.answer), case.id


def conformance_corpus():
    from gemma4_lark.conformance import CORPUS
    return CORPUS


def test_export_copies_the_files_and_the_manifest(tmp_path):
    counts = export(tmp_path)
    assert check_manifest(tmp_path) == []
    assert counts["valid"] >= 80 and counts["sent to targets"] == len(target_cases())


def _page_blocks(kind):
    import re
    page = (REPO / "docs" / "conformance.md").read_text(encoding="utf-8")
    return re.findall(rf"```{kind}\n(.*?)```", page, re.S)


def test_the_pages_target_passes_and_its_report_example_has_the_reports_keys(capsys, tmp_path):
    [block] = _page_blocks("python")
    target = tmp_path / "my_target.py"
    target.write_text(block)
    code, out, report = _run(capsys, tmp_path, shlex.join([sys.executable, str(target)]))
    assert code == 0, out
    example = json.loads(_page_blocks("json")[0])
    assert example.keys() == report.keys()
    assert example["failed"][0].keys() == {"id", "category", "input", "expected", "got"}
    assert example["smallest"]["accepts-invalid"].keys() == {"id", "original_length", "category", "input", "expected", "got"}
    # the example's failure is what a target that accepts the trailing comma gets
    failure = example["failed"][0]
    case = next(c for c in target_cases() if c.id == failure["id"])
    assert case.request["text"] == failure["input"] and same(case.answer, failure["expected"])
    assert categorize(failure["expected"], failure["got"]) == failure["category"]
