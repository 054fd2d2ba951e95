"""A user's script over the public API, type-checked with `mypy --strict` by tests/packaging/test_typing.py.

`assert_type` pins what the public annotations promise: an annotation loosened to `list`, `dict`
or nothing (`Any`) fails the check. The script also runs, so what it asserts is true.
"""

from __future__ import annotations

from typing import Any, Iterator

from typing_extensions import assert_type

import gemma4_lark as g
from gemma4_incremental import (
    Event, ParsedOutput, StreamParser, Text, ThinkingDelta, ThinkingEnd, ToolCallEnd, ToolCallError, ToolCallStart, collect,
    parse_output, parse_stream,
)
from gemma4_lark.messages import OfficialPrompt, read_official, read_omp
from gemma4_lark.render import omp
from gemma4_lark.render.official import render_chat

BLOCK = '<|tool_call>call:get_weather{location:<|"|>Tokyo, JP<|"|>,days:3}<tool_call|>'

call = g.parse_call(BLOCK)
assert_type(call, g.ToolCall)
assert_type(call.name, str)
assert_type(call.arguments, dict[str, Any])
assert call.arguments == {"location": "Tokyo, JP", "days": 3}

output = g.parse_output_document("Checking." + BLOCK)
assert_type(output, g.OutputDocument)
assert_type(output.calls, list[g.ToolCall])
assert [c.name for c in output.calls] == ["get_weather"]

assert_type(g.parse_value("[1,2]"), Any)

diagnostics = g.validate("<|tool_call>call:f{a:1,}<tool_call|>")
assert_type(diagnostics, list[g.Diagnostic])
first = diagnostics[0]
line: int = first.line
assert line == 1 and first.severity == "error" and first.format("out.txt").startswith("out.txt:1:")

try:
    g.parse_call("<|tool_call>call:f{a:1,}<tool_call|>")
except g.GemmaSyntaxError as err:
    assert_type(err.line, int)
    assert_type(err.column, int)
    assert_type(err.pos, int)
    assert_type(err.expected, list[str])
    assert err.column == 24
else:
    raise AssertionError("a trailing comma parsed")

parser = StreamParser(parse_thinking=True, strict=False)
events: list[Event] = []
for chunk in ("Sure.", BLOCK[:20], BLOCK[20:]):
    fed = parser.feed(chunk)
    assert_type(fed, list[Event])
    events.extend(fed)
assert_type(parser.flush(), list[Event])
names: list[str] = []
for event in events:
    assert_type(event.span, tuple[int, int])
    if isinstance(event, ToolCallStart):
        names.append(event.name)
    elif isinstance(event, ToolCallEnd):
        assert_type(event.arguments, dict[str, Any])
        assert_type(event.to_openai(), dict[str, Any])
    elif isinstance(event, ToolCallError):
        assert_type(event.error, str)
        assert_type(event.partial, dict[str, Any] | None)
    elif isinstance(event, (Text, ThinkingDelta)):
        assert_type(event.text, str)
    assert_type(event.to_dict(), dict[str, Any])
assert names == ["get_weather"]

parsed = parse_output("Sure." + BLOCK)
assert_type(parsed, ParsedOutput)
assert_type(parsed.calls, list[ToolCallEnd])
assert_type(parsed.errors, list[ToolCallError])
assert_type(parsed.thinking, list[str])
assert_type(parse_stream(["a", "b"]), Iterator[Event])
assert_type(collect(events), ParsedOutput)
assert [c.name for c in parsed.calls] == ["get_weather"]

messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Tokyo?"}]
tools: list[dict[str, Any]] = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}]
prompt = render_chat(messages, tools, add_generation_prompt=True)
assert_type(prompt, str)
back = read_official(prompt)
assert_type(back, OfficialPrompt)
assert render_chat(**back.render_kwargs()) == prompt

rendered = omp.render_tool_call("get_weather", {"location": "Tokyo, JP"})
assert_type(rendered, str)
assert g.parse_call(rendered).arguments == {"location": "Tokyo, JP"}
transcript = omp.render_transcript([{"role": "user", "content": "Weather in Tokyo?"}])
assert_type(transcript, str)
omp_messages = read_omp(transcript)
assert_type(omp_messages, list[dict[str, Any]])
assert omp_messages[0]["content"] == "Weather in Tokyo?"

# Serving behind the OpenAI API (docs/serving.md).
from gemma4_incremental.openai import OpenAIStream, to_openai_message

message = to_openai_message(parsed)
assert_type(message, dict[str, Any])
assert message["tool_calls"][0]["function"]["name"] == "get_weather"
stream = OpenAIStream(StreamParser(), model="gemma-4")
chunks = stream.feed("Sure." + BLOCK)
assert_type(chunks, list[dict[str, Any]])
assert_type(stream.flush(), list[dict[str, Any]])
assert_type(stream.completion_id, str)


class Tokenizer:  # markers by token id (docs/streaming.md#token-ids): Hugging Face's two methods
    ids = {"<|tool_call>": 1, "<tool_call|>": 2, '<|"|>': 3}

    def convert_tokens_to_ids(self, token: str) -> int:
        return self.ids.get(token, 0)

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        text_of = {i: t for t, i in self.ids.items()}
        return "".join(text_of[i] if i in text_of else chr(i - 100) if i >= 100 else "" for i in ids)


by_id = StreamParser.for_tokenizer(Tokenizer(), tools=tools)
assert_type(by_id, StreamParser)
assert_type(by_id.feed("", token_ids=[1]), list[Event])
assert_type(OpenAIStream(StreamParser.for_tokenizer(Tokenizer())).feed("hi", token_ids=[204, 205]), list[dict[str, Any]])

# Decoding against the declared tools (docs/schema.md).
from gemma4_lark.diagnostics import Diagnostic
from gemma4_lark.tools import Tool, read_tools

declared = read_tools(tools)
assert_type(declared, tuple[Tool, ...])
assert_type(declared[0].name, str)
typed = parse_output('<|tool_call>call:get_weather{location:02134}<tool_call|>', tools=tools, tool_choice="required")
assert typed.calls[0].arguments == {"location": "02134"}
assert_type(typed.diagnostics, list[Diagnostic])
assert_type(typed.calls[0].diagnostics, list[Diagnostic])
refused = parse_output('<|tool_call>call:nope{}<tool_call|>', tools=tools)
assert_type(refused.errors[0].code, str)
assert refused.errors[0].code == "unknown-tool"
checked = StreamParser(tools=tools, tool_choice={"type": "function", "function": {"name": "get_weather"}})
assert_type(checked.diagnostics, list[Diagnostic])
assert_type(StreamParser.for_prompt(prompt, tools=tools), StreamParser)
assert_type(g.validate(BLOCK, tools=tools), list[g.Diagnostic])

# Constrained decoding (docs/constrained-decoding.md).
from gemma4_lark import constrain

assert_type(constrain.grammar("llguidance"), str)
assert_type(constrain.grammar("gbnf", scope="output", tools=tools, tool_choice="auto", thinking=False), str)
tag = constrain.structural_tag(tools, tool_choice="required")
assert_type(tag, dict[str, Any])
assert tag["type"] == "structural_tag"

# The same names from the packages' tops (docs/architecture.md, "Names"), typed as at their homes.
from gemma4_incremental import OpenAIStream as TopOpenAIStream, to_openai_message as top_to_openai_message

assert_type(g.render_chat([{"role": "user", "content": "Hi"}], add_generation_prompt=True), str)
assert_type(g.read_official(prompt), OfficialPrompt)
assert_type(g.read_omp(transcript), list[dict[str, Any]])
assert_type(g.omp.render_tool_call("f", {"a": 1}), str)
assert_type(top_to_openai_message(refused), dict[str, Any])
assert_type(TopOpenAIStream(StreamParser(), model="gemma-4").flush(), list[dict[str, Any]])
assert_type(g.constrain.grammar("lark"), str)
try:
    g.parse_call("<|tool_call>call:f{a:1,}<tool_call|>")
except g.Gemma4Error as error:
    assert_type(error, g.Gemma4Error)
    assert isinstance(error, g.GemmaSyntaxError)
