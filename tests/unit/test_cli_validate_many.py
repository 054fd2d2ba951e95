"""`gemma4-lark validate` over several files and over JSONL eval records, with a summary."""

import io
import json
import sys

from gemma4_lark.cli import main

GOOD = "<|tool_call>call:f{a:1}<tool_call|>"
BAD = "x <|tool_call>call:f{a:1,}<tool_call|>"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_several_files_are_each_checked_and_summed_up(tmp_path, capsys):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(GOOD)
    bad.write_text(BAD)
    code, out, _ = _run(capsys, "validate", good, bad, good)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{bad}:1:26: error: trailing comma before `}}`"
    assert lines[-2:] == ["3 file(s), 3 output(s): 2 valid, 1 invalid", "findings by code: syntax 1"]
    code, out, _ = _run(capsys, "validate", good, good)
    assert code == 0 and out == "2 file(s), 2 output(s): 2 valid, 0 invalid\n"


def test_an_unreadable_file_among_several_is_reported_and_the_rest_checked(tmp_path, capsys):
    good = tmp_path / "good.txt"
    good.write_text(GOOD)
    code, out, err = _run(capsys, "validate", tmp_path / "missing.txt", good)
    assert code == 2
    assert f"{tmp_path / 'missing.txt'}: No such file or directory" in err
    assert out.splitlines()[-1] == "2 file(s), 1 output(s): 1 valid, 0 invalid; 1 file(s) could not be read"


def test_jsonl_records_default_field_and_summary(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text("\n".join([
        json.dumps({"id": 1, "output": GOOD}),
        json.dumps({"id": 2, "output": BAD}),
        "",                                   # blank lines are skipped
        json.dumps({"id": 3, "text": GOOD}),  # the second default field
        json.dumps({"id": 4}),
        json.dumps({"id": 5, "output": ["not", "a", "string"]}),
        '{"id": 6, "output": ',
        json.dumps(GOOD),                     # a bare JSON string is its own output
    ]) + "\n")
    code, out, _ = _run(capsys, "validate", "--jsonl", path)
    assert code == 1
    assert out.splitlines() == [
        f'{path}:2 id=2: "output", line 1, column 26: error: trailing comma before `}}`',  # named by its id too
        BAD,
        " " * 25 + "^",
        f'{path}:5 id=4: error: no field "output" or "text" in this record (choose one with --field)',
        f'{path}:6 id=5: error: field "output" is an array, not a string',
        f"{path}:7: error: the record is not JSON: Expecting value at line 1 column 21",
        "1 file(s), 4 output(s): 3 valid, 1 invalid; 3 record(s) with no output to check",
        "findings by code: syntax 1",
    ]


def test_jsonl_json_report_has_one_line_per_record_and_a_summary(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"output": GOOD}) + "\n" + json.dumps({"output": BAD}) + "\n")
    code, out, _ = _run(capsys, "validate", "--jsonl", "--json", path)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [(r["line"], r["field"], r["valid"]) for r in lines[:2]] == [(1, "output", True), (2, "output", False)]
    assert lines[1]["diagnostics"][0]["column"] == 26
    assert lines[2] == {"summary": {"files": 1, "outputs": 2, "valid": 1, "invalid": 1, "no_output": 0, "unreadable": 0,
                                    "codes": {"syntax": 1}}}


def test_jsonl_field_path(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"choices": [{"message": {"content": BAD}}], "output": GOOD}) + "\n")
    code, out, _ = _run(capsys, "validate", "--jsonl", "--field", "choices.0.message.content", path)
    assert code == 1 and '"choices.0.message.content", line 1, column 26' in out
    code, out, _ = _run(capsys, "validate", "--jsonl", "--field", "choices.1.message.content", path)
    assert code == 1 and 'no field "choices.1.message.content"' in out
    code, _, _ = _run(capsys, "validate", "--jsonl", "--field", "output", path)
    assert code == 0


def test_jsonl_utf8_error_gives_the_offset_in_the_file(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    first = (json.dumps({"output": GOOD}) + "\n").encode()
    path.write_bytes(first + b'{"output": "\xff"}\n')
    code, out, _ = _run(capsys, "validate", "--jsonl", path)
    assert code == 1
    assert f"{path}:2: error: not UTF-8: byte 0xff at offset {len(first) + 12} of the input" in out


def test_single_file_json_report_is_unchanged(tmp_path, capsys):
    path = tmp_path / "one.txt"
    path.write_text(GOOD)
    code, out, _ = _run(capsys, "validate", "--json", path)
    assert code == 0 and json.loads(out) == {"file": str(path), "valid": True, "diagnostics": []}


def test_caret_lines_stay_short_on_a_long_line(tmp_path, capsys):
    # one line of 200 000 characters with an error at its end: the excerpt is cut, the caret aligned
    path = tmp_path / "long.txt"
    text = "a" * 200_000 + "<|tool_call>call:f{a:1,}<tool_call|>"
    path.write_text(text)
    code, out, _ = _run(capsys, "validate", path)
    message, excerpt, caret = out.splitlines()
    assert code == 1 and message.endswith(":1:200024: error: trailing comma before `}`")
    assert len(excerpt) < 200 and excerpt.startswith("...")
    assert excerpt[len(caret) - 1] == "}" and caret.strip() == "^"


def test_field_without_jsonl_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "one.txt"
    path.write_text(GOOD)
    code, _, err = _run(capsys, "validate", "--field", "output", path)
    assert code == 2 and "--field picks a field of JSONL records: it needs --jsonl" in err


def test_jsonl_mistyped_field_is_reported_once_and_counted(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text((json.dumps({"output": GOOD}) + "\n") * 1000)
    code, out, _ = _run(capsys, "validate", "--jsonl", "--field", "outptu", path)
    assert code == 1
    assert out.splitlines() == [
        f'{path}:1: error: no field "outptu" in this record',
        f'{path}: 999 more record(s): no field "outptu" in this record',
        "1 file(s), 0 output(s): 0 valid, 0 invalid; 1000 record(s) with no output to check",
    ]


def test_jsonl_tools_check_calls_and_codes_are_tallied(tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object", "properties": {"days": {"type": "integer"}},
                                              "required": ["days"]}}}]))
    path = tmp_path / "evals.jsonl"
    records = ['<|tool_call>call:get_weather{days:3}<tool_call|>', '<|tool_call>call:get_weather{days:3,days:4}<tool_call|>',
               '<|tool_call>call:get_weather{}<tool_call|>', '<|tool_call>call:send{}<tool_call|>',
               '<|tool_call>call:get_weather{days:3,}<tool_call|>']
    path.write_text("".join(json.dumps({"output": r}) + "\n" for r in records))
    code, out, _ = _run(capsys, "validate", "--jsonl", "--json", "--tools", tools, path)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [r["valid"] for r in lines[:5]] == [True, True, False, False, False]
    assert [[d["code"] for d in r["diagnostics"]] for r in lines[:5]] == [
        [], ["duplicate-key"], ["schema"], ["unknown-tool"], ["syntax"]]
    assert lines[5]["summary"]["codes"] == {"duplicate-key": 1, "schema": 1, "syntax": 1, "unknown-tool": 1}
    # without --tools only the grammar is checked
    code, out, _ = _run(capsys, "validate", "--jsonl", path)
    assert code == 1 and out.splitlines()[-1] == "findings by code: duplicate-key 1, syntax 1"


def test_malformed_tools_file_is_one_error_before_any_record(tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text('[{"type": "function", "function": {"parameters": {}}}]')
    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"output": GOOD}) + "\n")
    code, out, err = _run(capsys, "validate", "--jsonl", "--tools", tools, path)
    assert code == 1 and out == "" and "tools.json" in err and "name" in err and "Traceback" not in err


def test_jsonl_memory_does_not_grow_with_records_whose_problems_all_differ(tmp_path, monkeypatch):
    """Each non-UTF-8 line's problem names its own offset: all are said, none is kept."""
    import os
    import sys
    import tracemalloc

    def peak(records: int) -> int:
        path = tmp_path / f"{records}.jsonl"
        path.write_bytes(b'{"output": "\xff"}\n' * records)
        with open(os.devnull, "w") as sink:
            monkeypatch.setattr(sys, "stdout", sink)
            tracemalloc.start()
            try:
                assert main(["validate", "--jsonl", str(path)]) == 1
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    peak(10)  # (imports and first-use caches out of the way)
    assert peak(16_000) < 2 * peak(2_000)


def test_a_lone_surrogate_in_a_record_is_checked_like_any_record(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text('{"output": "\\ud83d x <|tool_call>call:f{a:1,}<tool_call|>"}\n{"output": "fine"}\n')
    code = main(["validate", "--jsonl", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    excerpt, caret = out[1], out[2]
    assert excerpt.startswith("\\ud83d x ") and caret.index("^") == excerpt.index(",}") + 1
    assert out[-2] == "1 file(s), 2 output(s): 1 valid, 1 invalid"
    code = main(["validate", "--jsonl", "--json", str(path)])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r.get("valid") for r in records[:2]] == [False, True] and records[2]["summary"]["outputs"] == 2


def test_jsonl_records_are_named_by_their_id_when_they_have_one(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    records = [{"id": "case-7", "output": BAD}, {"id": True, "output": BAD}, {"output": BAD}, {"id": "x" * 200, "output": BAD}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, out, _ = _run(capsys, "validate", "--jsonl", path)
    named = [line.split(": ")[0] for line in out.splitlines() if "error" in line]
    assert named == [f'{path}:1 id="case-7"', f"{path}:2", f"{path}:3", f'{path}:4 id="{"x" * 76}...']
    code, out, _ = _run(capsys, "validate", "--jsonl", "--json", path)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r.get("id") for r in lines[:4]] == ["case-7", None, None, "x" * 200]


def test_summary_prints_the_counts_only(tmp_path, capsys):
    path = tmp_path / "evals.jsonl"
    path.write_text(json.dumps({"output": GOOD}) + "\n" + json.dumps({"output": BAD}) + "\n{\n")
    code, out, _ = _run(capsys, "validate", "--jsonl", "--summary", path)
    assert code == 1 and out.splitlines() == [
        "1 file(s), 2 output(s): 1 valid, 1 invalid; 1 record(s) with no output to check", "findings by code: syntax 1"]
    code, out, _ = _run(capsys, "validate", "--jsonl", "--summary", "--json", path)
    assert code == 1 and [json.loads(line)["summary"]["invalid"] for line in out.splitlines()] == [1]
    one = tmp_path / "one.txt"
    one.write_text(BAD)
    code, out, _ = _run(capsys, "validate", "--summary", one)
    assert code == 1 and out == "1 file(s), 1 output(s): 0 valid, 1 invalid\nfindings by code: syntax 1\n"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_long_run_shows_its_progress_on_a_terminal_and_clears_it(tmp_path, capsys, monkeypatch):
    path = tmp_path / "evals.jsonl"
    path.write_text((json.dumps({"output": GOOD}) + "\n") * 50 + json.dumps({"output": BAD}) + "\n")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["validate", "--jsonl", str(path)])
    out = capsys.readouterr().out
    assert code == 1 and "\r" not in out  # findings and summary are clean
    status = terminal.getvalue()
    assert status.startswith("\r") and "1 line(s) read; 1 valid" in status and status.endswith("\r")
    assert status.count("\r") >= 3  # shown, cleared before the finding, cleared before the summary
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: nothing
    main(["validate", "--jsonl", str(path)])
    assert sys.stderr.getvalue() == ""
