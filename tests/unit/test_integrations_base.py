"""The adapters' framework-free logic (gemma4_incremental.integrations.base), without vLLM or SGLang."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.integrations.base import (
    MarkerIds, ThoughtGate, ToolCallDeltas, extract_calls, merge_chunks, split_reasoning, stream_parser_options,
)
from gemma4_incremental.openai import to_openai_message
from gemma4_incremental.token_ids import TokenMarkers
from gemma4_lark import tokens
from gemma4_lark.tools import ShapeError

from stream_helpers import counter_ids
from conftest import REPO

OUTPUTS = [
    '<|channel>thought\nPlan.<channel|>On it.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
    '  \n<|channel>thought\nx<channel|>y',
    '<|channel>thoughtshort<channel|>ok',
    "<|channel>thought\nLet's go.<|tool_call>call:f{}<tool_call|>",
    '<|channel>thought\nunfinished',
    'No thought. <|tool_call>call:a{x:1}<tool_call|>',
    '<|chan is not a thought',
    '',
    '<|channel>thought\n<channel|>empty thought',
    '<|channel>thought\nstopped<turn|>',
]


def pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)]


def through_gate(text, size, start_in_thinking=False):
    """(reasoning or None, content, forwarded text) of `text` fed to a ThoughtGate in `size` pieces."""
    gate = ThoughtGate(start_in_thinking=start_in_thinking)
    reasoning, content, forwarded = None, "", None
    parts = pieces(text, size)
    for i, part in enumerate(parts):
        r, c, forward = gate.feed(part)
        if r is not None:
            reasoning = (reasoning or "") + r
        content += c
        if forward is not None:
            assert gate.ended
            forwarded = forward + "".join(parts[i + 1:])
            break
    else:
        r, c = gate.finish()
        if r is not None:
            reasoning = (reasoning or "") + r
        content += c
    return reasoning, content, forwarded


@pytest.mark.parametrize("text", OUTPUTS)
@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_the_gate_takes_the_opening_thought_and_forwards_the_rest_raw(text, size):
    reasoning, content, forwarded = through_gate(text, size)
    first_thought = next(iter(parse_output(text).thinking), None)
    opens = text.lstrip(" \t\r\n").startswith(tokens.THOUGHT_OPEN[:-1])
    assert reasoning == (first_thought if opens else None)
    rest = parse_output(forwarded or "")
    if opens:  # what follows the thought: to the tool parser, raw (marker included when it ended it)
        assert content == text[: len(text) - len(text.lstrip(" \t\r\n"))]
        assert to_openai_message(parse_output(text))["content"] == (
            (content + (to_openai_message(rest)["content"] or "")) or None)
    else:
        assert content + (forwarded or "") == text


def test_the_gate_starts_inside_a_prefilled_thought():
    assert through_gate("Sure, 42<channel|>Hello", 3, start_in_thinking=True) == ("Sure, 42", "", "Hello")
    assert through_gate("cut", 1, start_in_thinking=True) == ("cut", "", None)
    gate = ThoughtGate()
    gate.feed("x")
    with pytest.raises(RuntimeError):
        gate.feed("y")


def test_the_gate_keeps_only_what_the_parser_holds_back():
    gate = ThoughtGate()
    gate.feed(tokens.THOUGHT_OPEN)
    for _ in range(2000):
        gate.feed("a thought goes on ")
        assert len(gate._held) < 32


@pytest.mark.parametrize("text", OUTPUTS + ["a<|channel>thought\nlater<channel|>b"])
def test_split_reasoning_removes_every_thought_and_keeps_the_rest_raw(text):
    reasoning, rest = split_reasoning(text)
    parsed = parse_output(text)
    assert reasoning == ("\n".join(parsed.thinking) if parsed.thinking else None)
    assert to_openai_message(parse_output(rest or "", parse_thinking=False))["content"] == (
        to_openai_message(parsed)["content"])


def test_split_reasoning_after_a_prefilled_thought():
    assert split_reasoning("Sure, 42<channel|>Hello", start_in_thinking=True) == ("Sure, 42", "Hello")


def test_merged_deltas_accumulate_to_the_message_for_every_chunking():
    text = OUTPUTS[0] + '<|tool_call>calldone{}<tool_call|><|tool_call>call:g{q:[1,2.5,<|"|>x<|"|>]}<tool_call|>'
    want = to_openai_message(parse_output(text, id_factory=counter_ids()))
    for size in (1, 3, 7, len(text)):
        deltas = ToolCallDeltas(StreamParser(id_factory=counter_ids()))
        merged = [deltas.feed(p) for p in pieces(text, size)] + [deltas.finish()]
        assert "".join(d.content or "" for d in merged) == want["content"]
        assert "".join(d.reasoning or "" for d in merged) == want["reasoning_content"]
        calls = {}
        for d in merged:
            indexes = [c["index"] for c in d.tool_calls]
            assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)  # one entry per call
            for c in d.tool_calls:
                entry = calls.setdefault(c["index"], {"id": c.get("id"), "name": c["function"].get("name"), "arguments": ""})
                entry["arguments"] += c["function"]["arguments"]
        assert [(c["id"], c["name"], c["arguments"]) for c in calls.values()] == [
            (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in want["tool_calls"]]
        assert not deltas.finish()


def test_a_call_cut_off_is_voided_at_finish_and_never_completes():
    deltas = ToolCallDeltas(StreamParser(), stream_arguments=True)
    sent = deltas.feed('<|tool_call>call:write{path:<|"|>/tmp/a<|"|>,text:<|"|>half')
    end = deltas.finish()
    arguments = "".join(c["function"]["arguments"] for d in (sent, end) for c in d.tool_calls)
    assert arguments.startswith('{"path": "/tmp/a"')
    with pytest.raises(ValueError):
        json.loads(arguments)
    assert [c for c in end.tool_calls if "error" in c]
    assert end.content.startswith("<|tool_call>call:write")
    whole = ToolCallDeltas(StreamParser())  # the default: whole calls
    assert not whole.feed('<|tool_call>call:write{path:<|"|>/tmp/a').tool_calls
    assert not whole.finish().tool_calls


def test_merge_keeps_an_empty_thought_and_drops_finish_reason():
    chunks = [{"choices": [{"delta": {"reasoning": ""}, "finish_reason": None}]},
              {"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]}]
    delta = merge_chunks(chunks, "reasoning")
    assert (delta.reasoning, delta.content, bool(delta)) == ("", "x", True)
    assert not merge_chunks([{"choices": [{"delta": {}}]}], "reasoning")


def test_extract_calls_is_the_message():
    content, calls = extract_calls(OUTPUTS[0])
    message = to_openai_message(parse_output(OUTPUTS[0]))
    assert content == message["content"]
    assert [c["function"] for c in calls] == [c["function"] for c in message["tool_calls"]]


class Model:
    """A pydantic-like request field."""

    def __init__(self, **data):
        self.data = data

    def model_dump(self, exclude_none=False):
        return {k: v for k, v in self.data.items() if not (exclude_none and v is None)}


def test_request_options_read_both_tool_shapes_and_reject_a_bad_request():
    tools = [Model(type="function", function={"name": "f", "parameters": {"type": "object"}, "strict": None}),
             {"name": "g"}]
    options = stream_parser_options(tools, Model(type="function", function={"name": "g"}))
    assert set(options) == {"tools", "tool_choice"}
    assert [tool.function for tool in options["tools"].tools] == [
        {"name": "f", "parameters": {"type": "object"}, "strict": None}, {"name": "g"}]
    assert options["tool_choice"] == {"type": "function", "function": {"name": "g"}}
    assert stream_parser_options(None, "auto") == {}
    with pytest.raises(ShapeError, match="tool_choice"):
        stream_parser_options(tools, Model(type="function", function={"name": "nope"}))
    with pytest.raises(ShapeError, match="tools"):
        stream_parser_options([{"name": "f"}, {"name": "f"}], None)


VOCAB = {m: i for i, m in enumerate(tokens.CONTROL_TOKENS, start=1)}
T = 999  # any other token


def test_marker_ids_answer_on_token_ids():
    ids = MarkerIds.from_vocab(VOCAB)
    turn, channel, close, call = (VOCAB[m] for m in (tokens.TURN_OPEN, tokens.CHANNEL_OPEN, tokens.CHANNEL_CLOSE,
                                                     tokens.TOOL_CALL_OPEN))
    prompt = [turn, T]
    assert ids.thought_over(prompt, expect_thought=False) and not ids.thought_over(prompt, expect_thought=True)
    assert not ids.in_thought(prompt) and ids.in_thought(prompt + [channel, T])
    # a thought closed in an earlier turn says nothing about this one
    assert not ids.in_thought([channel, T, turn, T]) and ids.thought_over([channel, T, turn, T], False)
    assert ids.thought_over(prompt + [channel, T, close], True)
    assert ids.thought_over(prompt + [channel, T, call], True)
    assert ids.ends_thought([T, close, T]) and not ids.ends_thought([close, channel, T])
    assert ids.content_ids([channel, T, close, T, T]) == [T, T]
    assert ids.content_ids([channel, T, call, T]) == [call, T]
    assert ids.content_ids([T, T]) == [T, T]
    assert ids.thought_tokens([channel, T, T, close, T]) == 2
    assert ids.thought_tokens([T, close, T], start_inside=True) == 1
    assert ids.thought_tokens([channel, T, call, T, T]) == 1
    assert ids.stripped("call:f{}", [call, T]) == tokens.TOOL_CALL_OPEN
    assert ids.stripped("<|tool_call>call", [call, T]) is None
    with pytest.raises(ValueError, match="not a Gemma 4 tokenizer"):
        MarkerIds.from_vocab({"<s>": 1})


def test_marker_ids_are_read_from_the_stream_parsers_map():
    # one map of a tokenizer's control tokens to their ids: the reasoning checks read it too
    class Tokenizer:
        def convert_tokens_to_ids(self, token):
            return VOCAB.get(token, 0)

        def decode(self, ids, skip_special_tokens=False):
            return "".join({i: m for m, i in VOCAB.items()}.get(i, "?") for i in ids)

    markers = TokenMarkers.from_tokenizer(Tokenizer())
    assert markers.by_id == TokenMarkers.from_vocab(VOCAB).by_id
    assert MarkerIds.of(markers) == MarkerIds.from_vocab(VOCAB)
    assert markers.id_of(tokens.CHANNEL_OPEN) == MarkerIds.of(markers).channel_open == VOCAB[tokens.CHANNEL_OPEN]
    assert TokenMarkers.from_vocab({}).id_of(tokens.CHANNEL_OPEN) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["<|channel>thought\n", "<channel|>", "<|tool_call>", "call:f{a:1}", "<tool_call|>",
                                 "text ", " ", "<|", "thought", "\n", '<|"|>']), max_size=12),
       st.integers(1, 6))
def test_gate_then_tool_stream_give_the_message_for_any_output(parts, size):
    """What a server does with the pair: the gate's reasoning and content, then the forwarded rest
    through ToolCallDeltas, is the message of the whole output (one leading thought at most)."""
    text = "".join(parts)
    parsed = parse_output(text)
    if len(parsed.thinking) > 1:
        return  # a later thought is the tool parser's first: its separator is not known (docs)
    reasoning, content, forwarded = through_gate(text, size)
    deltas = ToolCallDeltas(StreamParser())
    merged = [deltas.feed(p) for p in pieces(forwarded or "", size)] + [deltas.finish()]
    want = to_openai_message(parsed)
    got_content = content + "".join(d.content or "" for d in merged)
    assert (got_content or None) == want["content"]
    thoughts = [r for r in [reasoning] + [d.reasoning for d in merged] if r is not None]
    assert ("".join(thoughts) if thoughts else None) == want.get("reasoning_content")


def test_adapters_sit_above_the_streaming_layer_and_ship_in_the_wheel():
    """Nothing but the adapters imports them (so the rest never needs vLLM or SGLang), and the
    package ships them with SGLang's plugin entry point."""
    import ast

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    for folder in (REPO / "gemma4_lark", REPO / "incremental"):
        for path in folder.rglob("*.py"):
            if "integrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                assert not [n for n in names if "integrations" in n], path
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "gemma4_incremental.integrations" in project["tool"]["setuptools"]["packages"]
    assert project["project"]["entry-points"]["sglang.srt.plugins"] == {
        "gemma4-lark": "gemma4_incremental.integrations.sglang:register"}
