"""read_tools / read_tool_choice: the two shapes of a tool mean the same, bad shapes name their field."""

import pytest

from gemma4_lark.tools import ShapeError, Tool, ToolChoice, read_tool_choice, read_tools

WEATHER = {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {}}}


def test_wrapped_and_bare_read_the_same():
    wrapped = read_tools([{"type": "function", "function": WEATHER}])
    bare = read_tools([WEATHER])
    assert wrapped == bare
    assert wrapped[0] == Tool("get_weather", WEATHER["parameters"], "Weather.", WEATHER)
    assert read_tools(None) == ()


def test_mixed_shapes_keep_order():
    other = {"name": "f"}
    tools = read_tools([other, {"type": "function", "function": WEATHER}])
    assert [t.name for t in tools] == ["f", "get_weather"]
    assert tools[0].parameters is None and tools[0].description is None


@pytest.mark.parametrize("tools, where", [
    ("nope", "tools"),
    ([1], "tools[0]"),
    ([{"type": "function", "function": []}], "tools[0].function"),
    ([{"type": "function", "function": {"description": "x"}}], "tools[0].function"),
    ([{"name": 3}], "tools[0].name"),
    ([{"name": "f", "parameters": "x"}], "tools[0].parameters"),
    ([{"type": "retrieval"}], "tools[0].type"),
    ([{"description": "x"}], "tools[0]"),
    ([WEATHER, {"type": "function", "function": WEATHER}], "tools[1].function.name"),
])
def test_bad_shapes_name_the_field(tools, where):
    with pytest.raises(ShapeError) as info:
        read_tools(tools)
    assert info.value.where == where


def test_tool_choice():
    tools = read_tools([WEATHER])
    assert read_tool_choice(None) == ToolChoice("auto")
    for mode in ("none", "auto", "required"):
        assert read_tool_choice(mode, tools) == ToolChoice(mode)
    named = ToolChoice("function", "get_weather")
    assert read_tool_choice({"type": "function", "function": {"name": "get_weather"}}, tools) == named
    assert read_tool_choice({"name": "get_weather"}, tools) == named
    with pytest.raises(ShapeError, match="not one of the declared tools"):
        read_tool_choice({"type": "function", "function": {"name": "other"}}, tools)
    with pytest.raises(ShapeError, match="tool_choice"):
        read_tool_choice("always", tools)
    with pytest.raises(ShapeError):
        read_tool_choice(3, tools)
