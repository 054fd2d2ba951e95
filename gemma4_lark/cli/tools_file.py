"""The `--tools` file of every command (validate, render, grammar), read one way: one bad file is
one error, with the same message and exit code whichever command was given it."""

from __future__ import annotations

import re

from .inputs import CommandError, display_name, item_position, json_list_of_objects, load_json, read_text


# A field named in a ShapeError about the tools: `tools[2]...` or, from the schema compiler, `tools[NAME]...`
_TOOL_FIELD = re.compile(r"tools\[([^\]]*)\]")


def _tool_index(tools: list, where: str) -> int | None:
    found = _TOOL_FIELD.match(where)
    if found is None:
        return None
    key = found.group(1)
    if key.isdigit() and int(key) < len(tools):
        return int(key)
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if function.get("name") == key:
            return i
    return None


def read_tools_file(path: str) -> list:
    """The `--tools` file of every command, read one way so that one bad file is one error, the
    same everywhere: JSON (with the position of a syntax error), an array of tool objects, each a
    tool `parse_output(tools=)` takes (a name, a valid JSON schema; with the tool's position in the
    file). Exit 1 for a bad file, as for any input that is not the right shape; 2 when the schema
    validator, a dependency, is missing."""
    from ..grammar import terminal_pattern
    from ..schema.registry import compile_tools
    from ..tools import read_tools

    name = display_name(path)
    text = read_text(path)
    tools = json_list_of_objects(load_json(text, name, "the tools file"), text, name, "the tools")
    try:
        compile_tools(tools)
    except ImportError as err:
        raise CommandError(f"--tools: {err}") from None
    except (ValueError, TypeError) as err:
        index = _tool_index(tools, getattr(err, "where", ""))
        raise CommandError(f"{name}: {err}{_tool_position(text, index)}", code=1) from None
    # A name the grammar cannot write could never be called: `grammar` cannot export it and
    # `render` would write a declaration that reads as other structure.
    writable = terminal_pattern("NAME")
    for index, tool in enumerate(read_tools(tools)):
        if not writable.fullmatch(tool.name):
            raise CommandError(f"{name}: tools[{index}]: the name {tool.name!r} is not one the format can write"
                               f" (the grammar's NAME: {writable.pattern}){_tool_position(text, index)}", code=1)
    return tools


def _tool_position(text: str, index: int | None) -> str:
    return "" if index is None else item_position(text, index, "the tool")
