"""One `--tools` file is read one way by every command: `validate`, `grammar` and `render` refuse
the same files with the same message (naming the file and, where there is one, the position) and
exit 1, the code the guide gives a JSON file that is not the right shape; none of them writes
anything from a file it refuses."""

import json

import pytest

from gemma4_lark.cli import main

CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
GOOD_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}

# name -> (file content, what the message says, where it says the problem is or None)
BAD_FILES = {
    "not-json": ("[1", "the tools file is not JSON", "at line 1 column 3"),
    "deep": ("[" * 50_000 + "]" * 50_000, "the tools file nests 50000 levels deep", "(line 1 column 50000)"),
    "not-utf8": (b"[\xff]", "not UTF-8: byte 0xff at offset 1", None),
    "an-object": ('{"tools": []}', "the tools must be a JSON array of objects, not an object", None),
    "an-item-not-an-object": ('[{"name": "ok"},\n 3]', "item 1 must be an object, not 3", "(the item at line 2 column 2)"),
    "no-name": ('[{"name": "ok"},\n {"type": "function", "function": {"parameters": {}}}]',
                "tools[1].function: has no 'name'", "(the tool at line 2 column 2)"),
    "name-not-a-string": ('[{"name": 7}]', "tools[0].name: must be a string, not an integer", "(the tool at line 1 column 2)"),
    "parameters-not-an-object": ('[{"name": "f", "parameters": [1]}]', "tools[0].parameters: must be an object",
                                 "(the tool at line 1 column 2)"),
    "not-a-function": ('[{"type": "retrieval"}]', "only function tools are supported", "(the tool at line 1 column 2)"),
    "declared-twice": ('[{"name": "f"},\n  {"name": "f"}]', "'f' is declared twice", "(the tool at line 2 column 3)"),
    "invalid-schema": ('[\n  {"name": "ok"},\n  {"type": "function", "function": {"name": "get_weather", '
                       '"parameters": {"type": "OBJEKT"}}}\n]', "is not a valid JSON schema", "(the tool at line 3 column 3)"),
    "unwritable-name": ('[{"name": "a b"}]', "the name 'a b' is not one the format can write",
                        "(the tool at line 1 column 2)"),
}

COMMANDS = {
    "validate": ["validate", "{output}", "--tools", "{tools}"],
    "validate --jsonl": ["validate", "--jsonl", "{records}", "--tools", "{tools}"],
    "grammar": ["grammar", "--format", "gbnf", "--tools", "{tools}"],
    "render": ["render", "{messages}", "--tools", "{tools}"],
    "render omp": ["render", "--profile", "omp", "{messages}", "--tools", "{tools}"],
    "render --unsafe allow": ["render", "--unsafe", "allow", "{messages}", "--tools", "{tools}"],
}


@pytest.fixture
def inputs(tmp_path):
    paths = {"output": tmp_path / "out.txt", "records": tmp_path / "evals.jsonl", "messages": tmp_path / "messages.json"}
    paths["output"].write_text(CALL)
    paths["records"].write_text(json.dumps({"output": CALL}) + "\n")
    paths["messages"].write_text(json.dumps([{"role": "user", "content": "Weather in Paris?"}]))
    return paths


def _run(capsys, argv, **paths):
    code = main([a.format(**{k: str(v) for k, v in paths.items()}) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("bad", BAD_FILES)
def test_every_command_refuses_a_bad_tools_file_the_same_way(bad, inputs, tmp_path, capsys):
    content, says, position = BAD_FILES[bad]
    tools = tmp_path / "tools.json"
    tools.write_bytes(content if isinstance(content, bytes) else content.encode())
    messages = {}
    for command, argv in COMMANDS.items():
        code, out, err = _run(capsys, argv, tools=tools, **inputs)
        assert (code, out) == (1, ""), (command, code, out, err)
        prefix = "gemma4-lark validate: " if command.startswith("validate") else f"gemma4-lark {argv[0]}: "
        assert err.startswith(prefix) and err.count("\n") == 1, (command, err)
        messages[command] = err[len(prefix):]
    message = messages["validate"]
    assert set(messages.values()) == {message}, messages
    assert message.startswith(f"{tools}: ") and says in message, message
    if position is not None:
        assert position in message, message


def test_a_good_tools_file_is_used_by_every_command(inputs, tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([GOOD_TOOL]))
    for command, argv in COMMANDS.items():
        code, out, err = _run(capsys, argv, tools=tools, **inputs)
        assert code == 0 and err == "", (command, err)
        if argv[0] != "validate":
            assert "get_weather" in out, command


def test_the_tool_is_found_by_its_position_among_many(inputs, tmp_path, capsys):
    """The schema compiler names a tool by its name; the message points at that tool in the file."""
    tools = [dict(GOOD_TOOL, function=dict(GOOD_TOOL["function"], name=f"t{i}")) for i in range(200)]
    tools[150]["function"]["parameters"] = {"type": "OBJEKT"}
    path = tmp_path / "tools.json"
    path.write_text("[\n" + ",\n".join(json.dumps(t) for t in tools) + "\n]\n")
    code, _, err = _run(capsys, COMMANDS["grammar"], tools=path, **inputs)
    assert code == 1 and "tools[t150].parameters" in err and "(the tool at line 152 column 1)" in err, err
