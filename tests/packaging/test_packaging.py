"""The wheel is what a user installs: build it, install it into a fresh virtual environment, and
use it there (the grammar, the stored parser tables, the type marker, the licence, the extras)."""

import os
import shutil
import subprocess
import sys
import venv
import zipfile

import pytest

from conftest import REPO
from gemma4_lark import accelerators
from gemma4_lark import docs


def test_docs_without_railroad_names_the_missing_module(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "railroad", None)  # import railroad -> ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError) as info:
        docs.main(str(tmp_path / "spec"), check=False)
    assert info.value.name == "railroad"  # what the command line turns into the extra to install


def test_runtime_dependencies_are_lark_and_jsonschema_rs():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0].split("=")[0] for d in project["dependencies"]] == ["lark", "jsonschema-rs"]
    assert "railroad-diagrams>=3.0.1" in project["optional-dependencies"]["docs"]


# vLLM 0.32 and 0.33 pin lark==1.2.2 (requirements/common.txt): what a user's vLLM venv holds.
VLLM_PINS = ["lark==1.2.2"]
_SERVES_A_REQUEST_WITH_TOOLS = """
import lark
from gemma4_lark import grammar
from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.openai import OpenAIStream, to_openai_message
tools = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "s": {"type": "string"}}}}}]
text = 'ok<|tool_call>call:f{a:1,s:02134}<tool_call|>'
message = to_openai_message(parse_output(text, tools=tools))
stream = OpenAIStream(StreamParser(tools=tools))
chunks = [c for ch in text for c in stream.feed(ch)] + stream.flush()
streamed = "".join(d["function"].get("arguments", "") for c in chunks
                   for d in c["choices"][0]["delta"].get("tool_calls", ()))
print(lark.__version__, grammar.stored_tables() is not None, message["tool_calls"][0]["function"]["arguments"], streamed,
      sep="|")
"""


def test_the_documented_install_serves_requests_with_tools_beside_vllms_pins(tmp_path):
    # docs/serving.md's install line for vLLM, run as written, in a venv that already holds what
    # vLLM pins: nothing is upgraded, and a request with tools decodes (no ImportError: no HTTP 500).
    [line] = [line for line in (REPO / "docs" / "serving.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("pip install") and "vLLM's environment" in line]
    command = line.split("#", 1)[0].split()
    assert command[:2] == ["pip", "install"]
    shutil.copytree(REPO, tmp_path / "gemma4-lark", ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".cache", "__pycache__", "build", "dist", "*.egg-info", ".hypothesis", ".pytest_cache"))
    env = tmp_path / "vllm-venv"
    venv.create(env, with_pip=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "-q"]
    subprocess.run(pip + ["install"] + VLLM_PINS, check=True)
    subprocess.run(pip + command[1:], cwd=tmp_path, check=True)
    result = subprocess.run([str(env / "bin" / "python"), "-c", _SERVES_A_REQUEST_WITH_TOOLS], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    version, used_tables, arguments, streamed = result.stdout.rstrip("\n").split("|")
    assert (version, used_tables) == ("1.2.2", "True")
    assert arguments == streamed == '{"a": 1, "s": "02134"}'  # typed by the schema, validated


def test_wheel_installs_and_parses(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(REPO)], check=True)
    [wheel] = dist.glob("gemma4_lark-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for name in ("gemma4_lark/gemma4.lark", "gemma4_lark/tables.json", "gemma4_lark/terminals.json", "gemma4_lark/py.typed",
                 "gemma4_incremental/py.typed"):
        assert name in names, name
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True)
    code = ("import sys, json, gemma4_lark as g; from gemma4_lark import grammar; "
            "print(g.parse_call('<|tool_call>call:f{a:1}<tool_call|>').arguments['a'], 'lark' in sys.modules); "
            "import lark; print(grammar.stored_tables() is not None, "
            "lark.__version__ in json.loads(grammar.tables_path().read_text())['lark'])")
    result = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    value, lark_loaded, used_tables, same_lark = result.stdout.split()
    assert value == "1"
    # the installed terminals.json serves the fast path without Lark (the accelerators on: the
    # subprocess inherits GEMMA4_LARK_ACCELERATORS; off, Lark's parser reads every block)
    assert lark_loaded == str(not accelerators.ENABLED)
    assert used_tables == same_lark  # the stored tables serve whenever the installed Lark wrote them

    # Every subpackage ships, and works without extras: the exports, messages in, OpenAI serving.
    # Decoding against tools works with the plain install: jsonschema-rs is a dependency.
    code = ("from gemma4_lark import constrain, render, schema; import gemma4_incremental.integrations.base; "
            "from gemma4_incremental.openai import OpenAIStream, to_openai_message; "
            "from gemma4_incremental import parse_output; "
            "tools = [{'name': 'f', 'parameters': {'type': 'object', 'properties': {'a': {'type': 'string'}}}}]; "
            "print(constrain.grammar('gbnf', scope='output').startswith('root ::='), "
            "constrain.structural_tag(tools)['type'], "
            "to_openai_message(parse_output('<|tool_call>call:f{a:1}<tool_call|>'))['tool_calls'][0]['type']); "
            "print(parse_output('<|tool_call>call:f{a:1}<tool_call|>', tools=tools).calls[0].arguments)")
    result = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.stdout.split("\n")[:2] == ["True structural_tag function", "{'a': '1'}"], result.stdout + result.stderr
    result = subprocess.run([str(env / "bin" / "gemma4-lark"), "grammar", "--format", "llguidance"],
                            cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.startswith("%llguidance"), result.stdout[:200]

    # The conformance corpus ships as data: exported from the installed package, it matches its manifest.
    result = subprocess.run([str(env / "bin" / "gemma4-lark"), "conformance", "export", str(tmp_path / "corpus")],
                            cwd=tmp_path, capture_output=True, text=True, check=True)
    code = ("import pathlib; from gemma4_lark.conformance import check_manifest; "
            f"print(check_manifest(pathlib.Path({str(tmp_path / 'corpus')!r})))")
    result = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr

    # railroad-diagrams is not a dependency: `docs` says what to install, without a traceback.
    result = subprocess.run([str(env / "bin" / "gemma4-lark"), "docs", "--out", str(tmp_path / "spec")],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and "gemma4-lark[docs]" in result.stderr and "Traceback" not in result.stderr

    # The installed package is typed: mypy --strict reads it through py.typed, as a user's would.
    pytest.importorskip("mypy")
    script = REPO / "tests" / "typing" / "user_script.py"
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy-cache"), str(script)],
        capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, MYPYPATH=""), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_references_to_a_spec_the_repository_does_not_have():
    # `SPEC §n` pointed at a requirements file outside the repository; links go to its own docs.
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    found = []
    for name in tracked.split():
        path = REPO / name
        if path.suffix in (".py", ".md", ".lark", ".toml", ".txt") and path.is_file():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "SPEC §" in line and name != "tests/packaging/test_packaging.py":
                    found.append(f"{name}:{number}")
    assert found == []


def test_readme_reads_as_a_pypi_page():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert lines[3].startswith("make demo") and lines[4].startswith("make test")  # the project's rule
    # the install that works today (not on PyPI yet: docs say so) comes right after the two commands
    head = "\n".join(lines[:16])
    assert "not on PyPI yet" in head and "pip install ./gemma4-lark" in head
    # PyPI shows the README away from the repository: a relative link there leads nowhere.
    import re

    relative = [target for target in re.findall(r"\]\(([^)]+)\)", readme) if not target.startswith("https://")]
    assert relative == []
    assert "OMP (oh-my-pi) is" in readme


def test_project_metadata():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Typing :: Typed" in project["classifiers"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
