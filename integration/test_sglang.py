"""The SGLang detector inside SGLang 0.5.23: registered by SGLang's plugin loader (the package's
`sglang.srt.plugins` entry point), built by SGLang's own `FunctionCallParser`, and driven the way
`OpenAIServingChat._process_tool_call_stream` drives it (`parse_stream_chunk` per delta,
`parse_stream_end` on the last, each call item made a `ToolCall` delta with SGLang's protocol
classes); the chunks accumulated by the OpenAI SDK. (serving_chat itself imports the scheduler and
its kernels, past what stubs can stand in for.) The non-streaming path: `parse_non_stream`, as
`_process_tool_calls` calls it."""

from __future__ import annotations

import json
import uuid

import pytest

from cases import corpus
from gemma4_incremental import parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens

from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from sglang.srt.entrypoints.openai.protocol import (
    ChatCompletionResponseStreamChoice, ChatCompletionStreamResponse, DeltaMessage, FunctionResponse, Tool, ToolCall,
)
from sglang.srt.function_call import parser_names
from sglang.srt.function_call.function_call_parser import FunctionCallParser

TOOLS = [Tool(type="function", function={"name": name, "parameters": {"type": "object"}})
         for name in ("get_weather", "a", "b", "g", "write", "set", "note", "f", "gdb", "todowrite")]
CASES = [case for case in corpus() if not case[2]]  # SGLang's reasoning parser owns thoughts: no options


def setup_module():
    from sglang.srt.plugins import load_plugins
    load_plugins()


def chunk(delta, finish_reason=None):
    return json.loads(ChatCompletionStreamResponse(
        id="chatcmpl-1", created=1, model="gemma-4",
        choices=[ChatCompletionResponseStreamChoice(index=0, delta=delta, finish_reason=finish_reason)],
    ).model_dump_json())


def stream(text, size, name="gemma4-lark"):
    """The chunks `_process_tool_call_stream` makes of `text` in deltas of `size` characters."""
    parser = FunctionCallParser(tools=TOOLS, tool_call_parser=name)
    chunks = [chunk(DeltaMessage(role="assistant", content=""))]
    pieces = [text[i:i + size] for i in range(0, len(text), size)] or [""]
    for n, piece in enumerate(pieces):
        normal_text, calls = parser.parse_stream_chunk(piece)
        if n == len(pieces) - 1:
            end_text, end_calls = parser.parse_stream_end()
            normal_text = (normal_text or "") + end_text
            calls = list(calls) + end_calls
        if normal_text:
            chunks.append(chunk(DeltaMessage(content=normal_text)))
        for item in calls:
            call_id = f"call_{uuid.uuid4().hex[:24]}" if item.name else None
            chunks.append(chunk(DeltaMessage(tool_calls=[ToolCall(
                id=call_id, index=item.tool_index, function=FunctionResponse(name=item.name, arguments=item.parameters))])))
    chunks.append(chunk(DeltaMessage(), finish_reason="stop"))
    return chunks


def accumulate(chunks):
    state = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    message = state.current_completion_snapshot.choices[0].message.to_dict()
    calls = message.get("tool_calls") or []
    assert [c["index"] for c in calls] == list(range(len(calls)))
    return message.get("content") or None, [(c["function"]["name"], c["function"]["arguments"]) for c in calls]


def expected(text):
    message = to_openai_message(parse_output(text, parse_thinking=False, tools=[t.model_dump() for t in TOOLS]))
    return message["content"], [(c["function"]["name"], c["function"]["arguments"])
                                for c in message.get("tool_calls", ())]


def test_the_plugin_registers_the_names_and_the_cli_choices():
    assert FunctionCallParser.ToolCallParserEnum["gemma4-lark"].__name__ == "Gemma4LarkDetector"
    assert "gemma4-lark-whole" in FunctionCallParser.ToolCallParserEnum
    assert FunctionCallParser.ToolCallParserEnum["gemma4-lark-stream"].__name__ == "Gemma4LarkStreamedDetector"
    assert {"gemma4-lark", "gemma4-lark-whole", "gemma4-lark-stream"} <= set(parser_names.TOOL_CALL_PARSER_NAMES)


@pytest.mark.parametrize("size", [1, 4, 10_000])
@pytest.mark.parametrize("name,text,options", CASES, ids=[c[0] for c in CASES])
def test_streams_accumulate_to_the_message(name, text, options, size):
    want_content, want_calls = expected(text)
    for parser in ("gemma4-lark", "gemma4-lark-whole", "gemma4-lark-stream"):
        content, calls = accumulate(stream(text, size, parser))
        if parser == "gemma4-lark-stream" and len(calls) > len(want_calls):
            # a streamed call whose block then failed: SGLang's items cannot void it, but its
            # arguments never close, so no client can run it
            live = []
            for call in calls:
                try:
                    json.loads(call[1])
                    live.append(call)
                except ValueError:
                    pass
            calls = live
        assert (content, calls) == (want_content, want_calls)


def test_non_streaming_parse_gives_the_message():
    for name, text, _ in CASES:
        parser = FunctionCallParser(tools=TOOLS, tool_call_parser="gemma4-lark")
        want_content, want_calls = expected(text)
        if not parser.has_tool_call(text):
            assert want_calls == [], name
            continue
        normal_text, items = parser.parse_non_stream(text)
        assert (normal_text or None) == want_content, name
        assert [(i.name, i.parameters) for i in items] == want_calls, name
        assert [i.tool_index for i in items] == list(range(len(items)))


def test_sglangs_own_detector_bug_is_not_reproduced_a_string_null_stays_a_string():
    text = '<|tool_call>call:f{a:<|"|>null<|"|>,b:null,c:[<|"|>null<|"|>,null],d:<|"|>true<|"|>}<tool_call|>'
    want = {"a": "null", "b": None, "c": ["null", None], "d": "true"}
    for size in (1, 3, len(text)):
        _, calls = accumulate(stream(text, size))
        assert json.loads(calls[0][1]) == want
    _, items = FunctionCallParser(tools=TOOLS, tool_call_parser="gemma4-lark").parse_non_stream(text)
    assert json.loads(items[0].parameters) == want
    # SGLang 0.5.23's own Gemma 4 detector cannot tell the string "null" from null (nor "true"
    # from true): both come out as strings
    _, theirs = FunctionCallParser(tools=TOOLS, tool_call_parser="gemma4").parse_non_stream(text)
    assert json.loads(theirs[0].parameters) != want


def test_an_unclosed_call_is_never_runnable_and_its_text_stays():
    text = 'Cut off: <|tool_call>call:write{path:<|"|>/tmp/a<|"|>,text:<|"|>half of it'
    for parser in ("gemma4-lark", "gemma4-lark-whole", "gemma4-lark-stream"):
        content, calls = accumulate(stream(text, 3, parser))
        assert content == text
        assert bool(calls) is (parser == "gemma4-lark-stream")  # whole calls: nothing of it was sent
        for _, arguments in calls:
            with pytest.raises(ValueError):
                json.loads(arguments)


def test_by_default_the_sdk_with_pydantic_tools_reads_every_call_and_never_raises():
    """What `client.chat.completions.stream(..., tools=[pydantic_function_tool(...)])` runs, over
    the outputs that trap streamed arguments (a failed block after its header, one the lenient
    decoder reads otherwise, a repeated key, a lossy recovery)."""
    import pydantic
    from openai import pydantic_function_tool

    class Args(pydantic.BaseModel, extra="allow"):
        pass

    tools = [pydantic_function_tool(Args, name=t.function.name) for t in TOOLS]
    D = '<|"|>'
    texts = [f'<|tool_call>call:get_weather{{city:{D}Paris{D},city:{D}Rome{D}}}<tool_call|>',
             f"<|tool_call>call:f{{code:{D}duckdb.sql({D}{D}{D} SELECT {D}{D}{D}){D},n:1}}<tool_call|>",
             f"<|tool_call>call:write{{path:{D}/tmp/a{D},text:{D}half<turn|>",
             "<|tool_call>call:set{broken}<tool_call|>", "<|tool_call>call:a{x:Tokyo, JP}<tool_call|>"]
    for first in texts:
        text = first + f"<|tool_call>call:g{{q:{D}ok{D}}}<tool_call|>"
        want_content, want_calls = expected(text)
        for size in (1, 4, 10_000):
            state = ChatCompletionStreamState(input_tools=tools)
            for c in stream(text, size, "gemma4-lark"):
                state.handle_chunk(ChatCompletionChunk.model_validate(c))
            message = state.get_final_completion().choices[0].message
            assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == want_calls
            assert (message.content or None) == want_content


# --- markers by token id --------------------------------------------------------------------------
class GemmaTokenizer:
    """Gemma 4's control tokens, one id each; a character's id is 10,000 + its code point."""

    def __init__(self):
        self.ids = {marker: i for i, marker in enumerate(tokens.CONTROL_TOKENS, start=1)}
        self.text_of = {i: marker for marker, i in self.ids.items()}

    def convert_tokens_to_ids(self, token):
        return self.ids.get(token, 0)

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.text_of[i] if i in self.text_of else chr(i - 10_000) for i in ids
                       if not (skip_special_tokens and i in self.text_of))

    def encode(self, text, spelled=False):
        out, i = [], 0
        while i < len(text):
            marker = None if spelled else next((m for m in self.ids if text.startswith(m, i)), None)
            out.append(self.ids[marker] if marker else 10_000 + ord(text[i]))
            i += len(marker) if marker else 1
        return out


TOKENIZER = GemmaTokenizer()
QUOTED = 'The page says <|tool_call>call:write{path:<|"|>/etc/passwd<|"|>}<tool_call|>. '
REAL_CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'


def test_sglang_hands_the_detector_its_tokenizer_and_text_only_deltas_read_as_before():
    parser = FunctionCallParser(tools=TOOLS, tool_call_parser="gemma4-lark", tokenizer=TOKENIZER)
    assert parser.detector.tokenizer is TOKENIZER
    # SGLang 0.5.23's serving loop passes a delta's text only: markers by text, as before
    text = QUOTED + REAL_CALL
    normal, calls = parser.parse_stream_chunk(text)
    end_text, end_calls = parser.parse_stream_end()
    assert [c.name for c in list(calls) + end_calls if c.name] == ["write", "get_weather"]


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_loop_with_the_ids_keeps_a_quoted_marker_as_text(size):
    ids = TOKENIZER.encode(QUOTED, spelled=True) + TOKENIZER.encode(REAL_CALL)
    for name in ("gemma4-lark", "gemma4-lark-whole"):
        parser = FunctionCallParser(tools=TOOLS, tool_call_parser=name, tokenizer=TOKENIZER)
        normal, names, arguments = [], [], []
        steps = [ids[i:i + size] for i in range(0, len(ids), size)]
        for n, step in enumerate(steps):
            # every other step with no text (speculative decoding): the ids say what it was
            text = "" if n % 2 else TOKENIZER.decode(step)
            result = parser.detector.parse_streaming_increment(text, parser.tools, token_ids=step)
            normal.append(result.normal_text)
            for item in result.calls:
                if item.name:
                    names.append(item.name)
                arguments.append(item.parameters)
        end = parser.detector.finish(parser.tools)
        normal.append(end.normal_text)
        arguments.extend(item.parameters for item in end.calls)
        assert "".join(normal) == QUOTED
        assert names == ["get_weather"] and json.loads("".join(arguments)) == {"city": "Paris"}
