"""The `gemma4-lark` command under abuse: every subcommand, driven as a separate process through
bad inputs (missing, a directory, not UTF-8, empty, deep nesting, wrong JSON types, huge numbers),
closed standard input and output, a reader that goes away, and out-of-range numeric options. Each
run must end with exit 0, 1 or 2, no traceback, and a message that names the problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gemma4_lark.cli import build_parser, main
from conftest import REPO

GEMMA = [sys.executable, "-m", "gemma4_lark"]
CALL = '<|tool_call>call:f{a:<|"|>x<|"|>}<tool_call|>'
MESSAGES = json.dumps([{"role": "user", "content": "hi"}])


def run(*argv, input=None, stdin=subprocess.DEVNULL, cwd=None, prelude=None, timeout=300):
    """The command as a process; `prelude` is Python run before main (to hide a module)."""
    command = GEMMA if prelude is None else [
        sys.executable, "-c", prelude + "\nimport sys\nfrom gemma4_lark.cli import main\nsys.exit(main())"]
    return subprocess.run(command + [str(a) for a in argv], input=input, stdin=None if input is not None else stdin,
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


def run_shell(redirect: str, *argv, timeout=300):
    """The command with a shell redirection applied to it, such as `<&-` (close stdin)."""
    script = '"$@" ' + redirect
    return subprocess.run(["sh", "-c", script, "sh", *GEMMA, *[str(a) for a in argv]],
                          capture_output=True, text=True, timeout=timeout)


def assert_clean(result, *needles, codes=(0, 1, 2)):
    """No traceback, an exit code in `codes`, and (when given) a message containing one of `needles`."""
    output = result.stderr + result.stdout
    assert "Traceback" not in output, output[-3000:]
    assert "internal error" not in result.stderr, result.stderr
    assert result.returncode in codes, (result.returncode, output[-2000:])
    if needles:
        assert any(n.lower() in output.lower() for n in needles), (needles, output[-2000:])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    paths = {}

    def put(name, data):
        path = d / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        paths[name] = path

    put("ok.txt", CALL)
    put("empty", b"")
    put("binary", b"a" * 70_000 + b"\xff\xfe\x00rest")
    put("deep_call.txt", "<|tool_call>call:f{a:" + "[" * 100_000 + "]" * 100_000 + "}<tool_call|>")
    put("huge_int.txt", "<|tool_call>call:f{a:" + "9" * 5000 + "}<tool_call|>")
    put("messages.json", MESSAGES)
    put("deep.json", "[" * 100_000 + "]" * 100_000)
    put("object.json", json.dumps({"role": "user", "content": "hi"}))
    put("number.json", "3")
    put("numbers.json", "[1, 2]")
    put("bad.json", '[{"role": "user"')
    put("wrong_fields.json", json.dumps([{"role": 5, "content": ["x", 3]}]))
    put("tools_object.json", json.dumps({"type": "function"}))
    put("records.jsonl", "\n".join([json.dumps({"output": CALL}), json.dumps({"output": 3}), "[1,", json.dumps({}),
                                    "[" * 100_000, json.dumps({"text": "<|tool_call>call:f{a:1,}<tool_call|>"})]) + "\n")
    paths["dir"] = d
    paths["missing"] = d / "no-such-file"
    return paths


FILE_COMMANDS = {
    "validate": ["validate"],
    "validate-jsonl": ["validate", "--jsonl"],
    "decode": ["decode"],
    "parse-events": ["parse"],
    "parse-summary": ["parse", "--format", "summary"],
    "parse-openai": ["parse", "--format", "openai"],
    "render": ["render"],
    "render-omp": ["render", "--profile", "omp"],
}
# What each bad file must produce, by the kind of input the command reads: (exit codes allowed,
# words one of which the message must contain). Gemma text: any text is a model output, so JSON
# brackets are just text; JSONL: each line is a record; JSON: the file is one document.
_READ_ERRORS = {"missing": ((2,), ["No such file"]), "dir": ((2,), ["Is a directory"])}
EXPECTED = {
    "text": {**_READ_ERRORS, "binary": ((1,), ["not UTF-8: byte 0xff at offset 70000"]), "empty": ((0,), []),
             "deep_call.txt": ((1,), ["nesting deeper than", "1 tool call block(s) failed"]), "huge_int.txt": ((0, 1), []),
             "deep.json": ((0,), [])},
    "jsonl": {**_READ_ERRORS, "binary": ((1,), ["not UTF-8: byte 0xff at offset 70000"]), "empty": ((0,), []),
              "deep_call.txt": ((1,), ["not JSON"]), "huge_int.txt": ((1,), ["not JSON"]),
              "deep.json": ((1,), ["nests 100000 levels"])},
    "json": {**_READ_ERRORS, "binary": ((1,), ["not UTF-8: byte 0xff at offset 70000"]), "empty": ((1,), ["not JSON"]),
             "deep_call.txt": ((1,), ["not JSON"]), "huge_int.txt": ((1,), ["not JSON"]),
             "deep.json": ((1,), ["nests 100000 levels deep (line 1 column 100000)"])},
}
INPUT_KIND = {"validate": "text", "decode": "text", "parse-events": "text", "parse-summary": "text",
              "parse-openai": "text", "validate-jsonl": "jsonl", "render": "json", "render-omp": "json"}


class _Result:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run_in_process(capsys, *argv):
    """The command through main() in this process: what it prints and returns (an exception
    escaping main fails the test, as a traceback would)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return _Result(code, out, err)


@pytest.mark.parametrize("bad", sorted(EXPECTED["text"]))
@pytest.mark.parametrize("command", sorted(FILE_COMMANDS))
def test_bad_input_files(files, command, bad, capsys):
    # in-process (a process each would take minutes); the file descriptor cases below use processes
    codes, needles = EXPECTED[INPUT_KIND[command]][bad]
    result = run_in_process(capsys, *FILE_COMMANDS[command], files[bad])
    assert_clean(result, *needles, codes=codes)
    if result.returncode:
        assert str(files[bad].name) in result.stderr + result.stdout


@pytest.mark.parametrize("name, needle", [
    ("object.json", "must be a JSON array of objects, not an object"),
    ("number.json", "must be a JSON array of objects, not a JSON int"),
    ("numbers.json", "item 0 must be an object"),
    ("bad.json", "bad.json: the messages file is not JSON"),
    ("deep.json", "deep.json: the messages file nests 100000 levels deep (line 1 column 100000)"),
    ("wrong_fields.json", "gemma4-lark render:"),
])
def test_render_wrong_json_names_the_file_and_problem(files, name, needle, capsys):
    for profile in ("official", "omp"):
        result = run_in_process(capsys, "render", "--profile", profile, files[name])
        assert_clean(result, needle, codes=(1,))


@pytest.mark.parametrize("name, needle", [
    ("tools_object.json", "tools_object.json: the tools must be a JSON array of objects, not an object"),
    ("bad.json", "bad.json: the tools file is not JSON"),
    ("deep.json", "deep.json: the tools file nests 100000 levels deep"),
])
def test_render_bad_tools_file_is_named(files, name, needle, capsys):
    assert_clean(run_in_process(capsys, "render", files["messages.json"], "--tools", files[name]), needle, codes=(1,))


def test_render_deep_tool_schema_does_not_crash(files, tmp_path, capsys):
    # nested 600 schemas (1200 JSON levels), written as text: json.dumps itself cannot go that deep
    schema = '{"type": "object", "properties": {"a": ' * 600 + '{"type": "object", "properties": {}}' + "}}" * 600
    tools = tmp_path / "tools.json"
    tools.write_text('[{"type": "function", "function": {"name": "f", "description": "d", "parameters": ' + schema + "}}]")
    for profile in ("official", "omp"):
        assert_clean(run_in_process(capsys, "render", "--profile", profile, files["messages.json"], "--tools", tools))


STDIN_COMMANDS = [["validate", "-"], ["validate", "--jsonl", "-"], ["decode", "-"], ["parse", "-"], ["render", "-"],
                  ["render", "messages.json", "--tools", "-"]]


@pytest.mark.parametrize("argv", STDIN_COMMANDS, ids=" ".join)
def test_closed_stdin(files, argv):
    argv = [str(files["messages.json"]) if a == "messages.json" else a for a in argv]
    assert_clean(run_shell("<&-", *argv), "standard input is closed", codes=(2,))


@pytest.mark.parametrize("argv", STDIN_COMMANDS, ids=" ".join)
def test_empty_stdin(files, argv):
    argv = [str(files["messages.json"]) if a == "messages.json" else a for a in argv]
    assert_clean(run(*argv, stdin=subprocess.DEVNULL))


def _every_command(files, tmp):
    return [
        ["validate", files["ok.txt"]], ["validate", "--jsonl", files["records.jsonl"]], ["decode", files["ok.txt"]],
        ["parse", files["ok.txt"]], ["render", files["messages.json"]], ["demo"],
        ["conformance", "export", tmp / "corpus"], ["docs", "--out", tmp / "spec"],
        ["fuzz", "--examples", "1"],
    ]


def test_closed_stdout_is_a_failure_for_every_command(files, tmp_path):
    for argv in _every_command(files, tmp_path):
        result = run_shell(">&-", *argv)
        assert_clean(result, "standard output is closed", codes=(2,))


def test_full_disk_is_a_failure(files):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    for argv in (["validate", files["records.jsonl"], "--jsonl"], ["parse", files["ok.txt"]], ["demo"]):
        result = run_shell(">/dev/full", *argv)
        assert_clean(result, "cannot write to standard output: No space left on device", codes=(2,))


@pytest.mark.parametrize("argv", [["parse", "-"], ["parse", "-", "--format", "summary"], ["validate", "-"],
                                  ["decode", "-", "--indent", "1"]], ids=" ".join)
def test_reader_that_goes_away_ends_quietly(argv, tmp_path):
    # `gemma4-lark parse big | head -c 100`: more output than a pipe holds; the reader leaves early
    item = '<|"|>' + "x" * 200 + '<|"|>'
    text = "<|tool_call>call:f{a:1,}<tool_call|> " * 2_000 if argv[0] != "decode" else \
        "<|tool_call>call:f{a:[" + ",".join([item] * 3000) + "]}<tool_call|>"
    source = tmp_path / "input.txt"
    source.write_text(text)
    with open(source, "rb") as stdin:
        process = subprocess.Popen(GEMMA + argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(process.stdout.read(100)) == 100
    process.stdout.close()
    err = process.stderr.read().decode()
    assert process.wait(timeout=300) == 0 and err == "", err


@pytest.mark.parametrize("argv", [["validate", "-", "--jsonl"], ["parse", "-", "--format", "summary"],
                                  ["parse", "-", "--format", "openai"]], ids=" ".join)
def test_a_reader_gone_before_any_output_stops_the_command_early(argv):
    """`gemma4-lark validate - < huge | consumer` whose consumer leaves: a command that prints
    nothing while its input is valid still notices, and stops reading, long before the input ends."""
    record = json.dumps({"output": "<|tool_call>call:f{a:1}<tool_call|> " * 20}) + "\n"
    piece = (record if "--jsonl" in argv else "Text <|tool_call>call:f{a:1}<tool_call|> " * 2_000).encode()
    process = subprocess.Popen(GEMMA + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # the reader is gone before the command writes anything
    sent, limit = 0, 256 << 20
    try:
        while sent < limit:
            process.stdin.write(piece)
            sent += len(piece)
        process.stdin.close()
    except BrokenPipeError:  # the command stopped reading: what this test wants
        pass
    assert process.wait(timeout=300) == 0 and process.stderr.read() == b""
    assert sent < limit, "the command read all of its input"


@pytest.mark.parametrize("argv", [["decode", "bad.txt"], ["validate", "missing.txt"], ["validate", "missing.txt", "ok.txt"]],
                         ids=" ".join)
def test_a_reader_gone_never_hides_an_error_said_on_stderr(files, argv, tmp_path):
    """The gone-reader check runs between inputs whose problems are already said: a command whose
    stdout's reader left still reports, on stderr, what is wrong with its input."""
    (tmp_path / "bad.txt").write_text("<|tool_call>call:f{a:}<tool_call|>")
    (tmp_path / "ok.txt").write_text("fine")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run(GEMMA + argv, cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(write)
    assert b"missing.txt" in done.stderr or b"bad.txt" in done.stderr, done
    if len(argv) == 2:  # (with several files, the summary's write finds the reader gone: exit 0, as `| head`)
        assert done.returncode in (1, 2), done


@pytest.mark.parametrize("argv, needle", [
    (["parse", "ok.txt", "--chunk", "-1"], "--chunk: must be at least 1"),
    (["parse", "ok.txt", "--chunk", "0"], "--chunk: must be at least 1"),
    (["parse", "ok.txt", "--chunk", "x"], "--chunk: expected an integer"),
    (["parse", "ok.txt", "--max-depth", "0"], "--max-depth: must be at least 1"),
    (["validate", "ok.txt", "--max-depth", "-3"], "--max-depth: must be at least 1"),
    (["decode", "ok.txt", "--max-depth", "0"], "--max-depth: must be at least 1"),
    (["decode", "ok.txt", "--indent", "-1"], "--indent: must be at least 0"),
    (["fuzz", "--examples", "0"], "--examples: must be at least 1"),
    (["fuzz", "--examples", "-5"], "--examples: must be at least 1"),
    (["validate"], "required"),
    (["conformance", "import", "x"], "invalid choice"),
    ([], "required"),
])
def test_out_of_range_options_are_usage_errors(files, argv, needle, capsys):
    argv = [str(files["ok.txt"]) if a == "ok.txt" else a for a in argv]
    with pytest.raises(SystemExit) as exit:
        main(argv)
    out, err = capsys.readouterr()
    result = _Result(exit.value.code, out, err)
    assert_clean(result, needle, codes=(2,))
    assert result.stdout == ""


def test_utf8_error_offset_is_in_the_file_not_the_read_buffer(tmp_path, capsys):
    # 65535 bytes, then a two-byte character split by the 64 KiB read, then a bad byte
    data = b"a" * 65_535 + "\u00e9".encode() + b"\xff"
    path = tmp_path / "split.txt"
    path.write_bytes(data)
    for argv in (["parse", path], ["validate", path], ["decode", path]):
        assert_clean(run_in_process(capsys, *argv), "byte 0xff at offset 65537 of the input", codes=(1,))


def test_docs_check_outside_the_repository(tmp_path):
    result = run("docs", "--check", cwd=tmp_path)
    assert_clean(result, "no directory 'docs/spec' to check", codes=(2,))
    assert "stale" not in result.stderr


def test_fuzz_without_hypothesis_names_the_extra():
    result = run("fuzz", "--examples", "1", prelude="import sys; sys.modules['hypothesis'] = None")
    assert_clean(result, "needs hypothesis", codes=(2,))
    assert "pip install" in result.stderr


def test_docs_without_railroad_names_what_to_install(tmp_path):
    result = run("docs", "--out", tmp_path / "spec", prelude="import sys; sys.modules['railroad'] = None")
    assert_clean(result, "needs railroad-diagrams", codes=(2,))
    assert "pip install" in result.stderr


def test_conformance_export_onto_a_file(files, capsys):
    assert_clean(run_in_process(capsys, "conformance", "export", files["ok.txt"]), "ok.txt", codes=(2,))


def test_fuzz_target_that_dies():
    result = run("fuzz", "--examples", "3", "--target", "exit 3")
    assert_clean(result, "the --target command 'exit 3' answered no request: crash: the target exited with status 3",
                 codes=(2,))
    assert "DISAGREE" in result.stdout


def test_version():
    from importlib import metadata

    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"gemma4-lark {metadata.version('gemma4-lark')}"


def test_every_option_has_help():
    import argparse

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])
            elif not isinstance(action, (argparse._HelpAction,)):
                yield path, action

    missing = [(" ".join(path), action.dest) for path, action in walk(build_parser(), ["gemma4-lark"])
               if not action.help or action.help == argparse.SUPPRESS]
    assert missing == []


def test_guide_documents_every_command_and_option():
    import argparse

    guide = (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Command line"):]
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                assert f"`{name}" in section, name
                for option in sub._actions:
                    for flag in option.option_strings:
                        assert flag in section or flag in ("-h", "--help"), (name, flag)
