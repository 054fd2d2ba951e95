"""The `gemma4-lark` command through its entry point (in-process) and as `python -m`."""

import json
import shlex
import subprocess
import sys

from gemma4_lark.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_valid_file(tmp_path, capsys):
    f = tmp_path / "ok.txt"
    f.write_text("<|tool_call>call:f{a:1}<tool_call|>")
    assert _run(capsys, "validate", str(f)) == (0, "", "")


def test_validate_invalid_file_prints_position_and_caret(tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_text("<|tool_call>call:f{a:1,}<tool_call|>")
    code, out, _ = _run(capsys, "validate", str(f))
    assert code == 1
    assert out.splitlines() == [
        f"{f}:1:24: error: trailing comma before `}}`",
        "<|tool_call>call:f{a:1,}<tool_call|>",
        " " * 23 + "^",
    ]


def test_validate_json(tmp_path, capsys):
    f = tmp_path / "dup.txt"
    f.write_text("<|tool_call>call:f{a:1,a:2}<tool_call|>")
    code, out, _ = _run(capsys, "validate", "--json", str(f))
    report = json.loads(out)
    assert code == 0 and report["valid"] and report["diagnostics"][0]["code"] == "duplicate-key"


def test_usage_error_exits_2(capsys):
    try:
        main(["validate"])
    except SystemExit as exit:
        assert exit.code == 2
    else:
        raise AssertionError("argparse should exit")


def test_missing_file_exits_2(capsys):
    code, _, err = _run(capsys, "validate", "/nonexistent/file")
    assert code == 2 and "No such file" in err


def test_decode_from_stdin():
    block = '<|tool_call>call:get_weather{location:<|"|>Tokyo<|"|>}<tool_call|>'
    result = subprocess.run([sys.executable, "-m", "gemma4_lark", "decode", "-"], input=block,
                            capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["parts"][0] == {
        "type": "tool_call", "name": "get_weather", "arguments": {"location": "Tokyo"}}


def test_decode_error(capsys, tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text('<|tool_call>call:f{a:"x"}<tool_call|>')
    code, out, err = _run(capsys, "decode", str(f))
    assert code == 1 and out == "" and "JSON-quoted string" in err


def test_demo_runs(capsys):
    code, out, _ = _run(capsys, "demo")
    assert code == 0
    assert "grammar check: valid" in out and "tool_call_start" in out and "stop" in out
    assert '"name": "write_file"' in out and '"type": "function"' in out


def test_parse_events_streams_from_a_pipe():
    text = 'Hi <|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|><|tool_response>'
    result = subprocess.run([sys.executable, "-m", "gemma4_lark", "parse", "-", "--chunk", "3"], input=text,
                            capture_output=True, text=True, check=True)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events][-3:] == ["tool_call_start", "tool_call_end", "stop"]
    assert "".join(e.get("text", "") for e in events if e["type"] == "text") == "Hi "
    assert events[-2]["arguments"] == {"a": "x"}


def test_parse_summary_and_openai(tmp_path, capsys):
    f = tmp_path / "out.txt"
    f.write_text("<|channel>thought\nplan<channel|>Sure.<|tool_call>call:f{n:1}<tool_call|>")
    code, out, _ = _run(capsys, "parse", str(f), "--format", "summary")
    summary = json.loads(out)
    assert code == 0 and summary["thinking"] == ["plan"] and summary["calls"][0]["arguments"] == {"n": 1}
    code, out, _ = _run(capsys, "parse", str(f), "--format", "openai")
    message = json.loads(out)
    assert message["content"] == "Sure." and message["reasoning_content"] == "plan"
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"n": 1}


def test_parse_options(tmp_path, capsys):
    f = tmp_path / "out.txt"
    f.write_text("reasoning<channel|>answer<|tool_call>call:f{a:1}<turn|>")
    code, out, _ = _run(capsys, "parse", str(f), "--start-in-thinking", "--strict", "--format", "summary")
    summary = json.loads(out)
    assert code == 1 and summary["thinking"] == ["reasoning"] and summary["text"] == "answer"
    assert summary["calls"] == [] and len(summary["errors"]) == 1 and summary["stop"] == "<turn|>"
    code, out, _ = _run(capsys, "parse", str(f), "--no-thinking", "--format", "summary")
    assert json.loads(out)["text"] == "reasoning<channel|>answer"


def test_render_official_and_omp(tmp_path, capsys):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    tools = tmp_path / "t.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "description": "d",
                                                                   "parameters": {"type": "object", "properties": {}}}}]))
    code, out, _ = _run(capsys, "render", str(messages), "--tools", str(tools), "--generation-prompt", "--variant", "31b")
    assert code == 0 and out.startswith("<bos><|turn>system\n<|tool>declaration:f{") and out.endswith(
        "<|turn>model\n<|channel>thought\n<channel|>")
    code, out, _ = _run(capsys, "render", "--profile", "omp", str(messages))
    assert code == 0 and out == "<bos><|turn>user\nhi<turn|>"


def test_render_refuses_unsafe_content(tmp_path, capsys):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi<turn|>"}]))
    code, _, err = _run(capsys, "render", str(messages))
    assert code == 1 and "<turn|>" in err


def test_fuzz_campaign_small(capsys):
    code, out, _ = _run(capsys, "fuzz", "--examples", "15", "--seed", "3")
    assert code == 0
    assert "cases tried, 0 disagreement(s)" in out
    # two blocks-against-the-oracle properties, one of the recovery, strict streams, robustness
    assert len([line for line in out.splitlines() if line.startswith("      ok")]) == 5


TARGET_OK = '''
import sys, json
from gemma4_incremental import parse_output
for line in sys.stdin:
    out = parse_output(json.loads(line)["text"])
    print(json.dumps({"calls": [{"name": c.name, "arguments": c.arguments} for c in out.calls], "text": out.text}), flush=True)
'''

TARGET_OMP_LIKE = '''
import sys, json, re
from gemma4_incremental import parse_output
for line in sys.stdin:
    out = parse_output(json.loads(line)["text"])
    # a peer that, like OMP, loses tools whose names are not [A-Za-z_]\\\\w*
    calls = [{"name": c.name, "arguments": c.arguments} for c in out.calls if re.fullmatch(r"[A-Za-z_]\\\\w*", c.name)]
    print(json.dumps({"calls": calls, "text": out.text}), flush=True)
'''


def test_fuzz_against_a_target(tmp_path, capsys):
    good = tmp_path / "good.py"
    good.write_text(TARGET_OK)
    code, out, _ = _run(capsys, "fuzz", "--examples", "20", "--target", shlex.join([sys.executable, str(good)]))
    assert code == 0 and "0 disagreement(s)" in out
    bad = tmp_path / "bad.py"
    bad.write_text(TARGET_OMP_LIKE)
    code, out, _ = _run(capsys, "fuzz", "--examples", "200", "--target", shlex.join([sys.executable, str(bad)]))
    assert code == 1 and "DISAGREE" in out and "counterexample" in out


def test_conformance_export(tmp_path, capsys):
    code, out, _ = _run(capsys, "conformance", "export", str(tmp_path / "corpus"))
    assert code == 0 and "valid" in out
    assert len(list((tmp_path / "corpus" / "invalid").glob("*.json"))) >= 60


def test_render_reports_bad_json_with_its_position(tmp_path, capsys):
    messages = tmp_path / "m.json"
    messages.write_text('[{"role": "user", "content": "hi"')
    code, _, err = _run(capsys, "render", str(messages))
    assert code == 1 and "line 1 column" in err and "Traceback" not in err
