"""gemma4_incremental.StreamParser: behaviour, one test per rule of docs/streaming.md."""

import pytest
from hypothesis import given, strategies as st

from gemma4_incremental import (
    StreamParser, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError, collect, parse_output,
)

from stream_helpers import assert_tiles, counter_ids, merged, run, split_every

D = '<|"|>'
CALL = "<|tool_call>call:get_weather{location:" + D + "Tokyo, JP" + D + ",days:3}<tool_call|>"


def types(events):
    return [e.type for e in events]


def test_text_is_emitted_as_soon_as_known():
    p = StreamParser()
    assert [e.text for e in p.feed("Hello wor")] == ["Hello wor"]
    assert [e.text for e in p.feed("ld")] == ["ld"]


def test_only_a_possible_marker_is_held_back():
    p = StreamParser()
    assert [e.text for e in p.feed("a < b <|tool_c")] == ["a < b "]
    # "<|tool_cx" can no longer become a marker: released at once
    assert [(e.text, e.span) for e in p.feed("x")] == [("<|tool_cx", (6, 15))]
    assert p.flush() == []


def test_held_back_suffix_is_released_at_the_end():
    p = StreamParser()
    p.feed("a <|tool_c")
    assert [e.text for e in p.flush()] == ["<|tool_c"]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_chunk_boundaries_anywhere(size):
    text = "Before " + CALL + " after"
    whole = merged(run([text]))
    assert merged(run(split_every(text, size))) == whole
    out = parse_output(text)
    assert out.text == "Before  after"
    assert [(c.name, c.arguments) for c in out.calls] == [("get_weather", {"location": "Tokyo, JP", "days": 3})]


def test_closer_comma_and_brace_inside_string_do_not_close():
    text = "<|tool_call>call:f{a:" + D + "x}, <tool_call|> y" + D + ",b:1}<tool_call|>tail"
    for size in (1, 3, len(text)):
        out = parse_output("".join(split_every(text, size)))
        assert out.calls[0].arguments == {"a": "x}, <tool_call|> y", "b": 1} and out.text == "tail"


def test_tool_call_start_comes_before_the_arguments():
    p = StreamParser(id_factory=counter_ids())
    events = p.feed("<|tool_call>call:get_weather{")
    assert types(events) == ["tool_call_start"]
    assert (events[0].name, events[0].index, events[0].id) == ("get_weather", 0, "call_0")
    events = p.feed("location:" + D + "Paris" + D + "}<tool_call|>")
    assert types(events) == ["tool_call_end"] and events[0].id == "call_0"


def test_thinking_with_and_without_newline_and_empty():
    out = parse_output("<|channel>thought\nplan<channel|>A<|channel>thoughtnone<channel|>B<|channel>thought\n<channel|>C")
    assert out.thinking == ["plan", "none", ""] and out.text == "ABC"


def test_the_thought_is_its_deltas_and_the_parser_keeps_none_of_it():
    events = run(split_every("<|channel>thought\nstep one, step two<channel|>", 4))
    [end] = [e for e in events if isinstance(e, ThinkingEnd)]
    assert not hasattr(end, "text") and end.to_dict() == {"type": "thinking_end", "span": [36, 46]}
    assert collect(events).thinking == ["step one, step two"]


def test_start_in_thinking():
    text = "Sure, the answer is 42<channel|>Hello world"
    out = parse_output(text, start_in_thinking=True)
    assert out.thinking == ["Sure, the answer is 42"] and out.text == "Hello world"
    events = run([text], start_in_thinking=True)
    assert isinstance(events[0], ThinkingStart) and events[0].span == (0, 0)
    assert_tiles(events, text)


def test_parse_thinking_off_keeps_markup_in_text():
    text = "<|channel>thought\nx<channel|>y"
    out = parse_output(text, parse_thinking=False)
    assert out.text == text and out.thinking == []


def test_call_inside_unclosed_thinking_ends_the_thinking():
    text = "<|channel>thought\nLet's go." + CALL + "<|tool_response>"
    out = parse_output(text)
    assert out.thinking == ["Let's go."]
    assert [c.name for c in out.calls] == ["get_weather"] and out.stop == "<|tool_response>"


def test_opener_without_its_label_is_no_thought_when_strict():
    # (not strict, an unlabelled channel is a thought: tests/attacks/test_stray_markup.py); strict, it is
    # stray markup, and what follows it text
    out = parse_output("<|channel>thought\nx<channel|>a <|channel> b", strict=True)
    assert out.text == "a  b" and out.thinking == ["x"]
    assert [e.markup for e in out.events if e.type == "stray_markup"] == ["<|channel>"]


def test_parallel_calls_count_and_distinct_ids():
    text = CALL + CALL.replace("get_weather", "ping") + CALL
    out = parse_output(text)
    assert [c.index for c in out.calls] == [0, 1, 2]
    assert len({c.id for c in out.calls}) == 3
    assert all(c.id.startswith("call_") and len(c.id) == 29 for c in out.calls)


def test_injected_id_factory_makes_output_reproducible():
    assert run([CALL + CALL]) == run([CALL + CALL])


@pytest.mark.parametrize("marker", ["<turn|>", "<eos>"])
def test_call_closed_by_a_stop_marker_is_recovered(marker):
    out = parse_output("<|tool_call>call:gdb{args:" + D + "-batch -ex run" + D + "}" + marker)
    [call] = out.calls
    assert call.arguments == {"args": "-batch -ex run"} and call.recovered
    assert [d.code for d in call.diagnostics] == ["missing-closer"]
    assert out.stop == marker


@pytest.mark.parametrize("strict", [False, True])
def test_a_block_unclosed_at_the_end_of_the_stream_is_an_error_even_when_complete(strict):
    out = parse_output("<|tool_call>call:bash{command:" + D + "pytest" + D + "}", strict=strict)
    [error] = out.errors
    assert out.calls == [] and error.name == "bash" and error.partial == {"command": "pytest"}
    assert "not closed" in error.error


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_a_stream_cut_inside_a_string_is_never_a_call(strict, size):
    text = "Before <|tool_call>call:run{command:" + D + "rm -rf /tmp/build"
    events = run(split_every(text, size), strict=strict)
    out = collect(events)
    [error] = out.errors
    assert out.calls == [] and out.text == "Before " and error.raw == text[len("Before "):]
    assert error.name == "run" and error.partial == {"command": "rm -rf /tmp/build"}
    assert "unterminated-string-at-end" in [d.code for d in error.diagnostics]
    assert_tiles(events, text)


@pytest.mark.parametrize("marker", ["<turn|>", "<eos>", "<|tool_response>", "<|tool_call>"])
def test_a_block_cut_inside_its_arguments_by_a_marker_is_an_error(marker):
    out = parse_output("<|tool_call>call:run{command:" + D + "rm -rf /tmp/build" + D + "," + marker)
    error = out.errors[0]
    assert error.partial == {"command": "rm -rf /tmp/build"} and "missing-bracket" in [d.code for d in error.diagnostics]
    assert out.calls == []
    # inside a string a marker is string text: the block runs on to the end of the stream
    out = parse_output("<|tool_call>call:run{command:" + D + "rm -rf /tmp" + marker)
    assert out.calls == [] and out.errors[0].partial["command"].startswith("rm -rf /tmp")


def test_undecodable_block_becomes_an_error_with_its_raw_text():
    out = parse_output("a<|tool_call>get_weather{x:1}<tool_call|>b")
    [error] = out.errors
    assert out.calls == [] and error.raw == "<|tool_call>get_weather{x:1}<tool_call|>" and "missing `call:`" in error.error
    assert out.text == "ab"


def test_strict_mode_turns_unclosed_blocks_into_errors():
    out = parse_output("<|tool_call>call:f{a:1}<turn|>", strict=True)
    assert out.calls == [] and len(out.errors) == 1 and out.stop == "<turn|>"


def test_invalid_block_is_recovered_with_diagnostics_or_refused_when_strict():
    text = "<|tool_call>call:f{a:1,}<tool_call|>ok"
    out = parse_output(text)
    [call] = out.calls
    assert call.arguments == {"a": 1} and call.recovered and out.text == "ok"
    assert [(d.code, d.severity) for d in call.diagnostics] == [("syntax", "error"), ("trailing-comma", "warning")]
    assert "trailing comma" in call.diagnostics[0].message
    out = parse_output(text, strict=True)
    assert out.calls == [] and out.errors[0].raw == "<|tool_call>call:f{a:1,}<tool_call|>"
    assert "trailing comma" in out.errors[0].error


def test_bare_call_at_the_start_or_after_a_thought_is_recovered():
    out = parse_output("call:bash{command:" + D + "ls" + D + "}")
    assert [(c.name, c.arguments, c.recovered) for c in out.calls] == [("bash", {"command": "ls"}, True)]
    out = parse_output("<|channel>thought\nplan\n<channel|>call:bash{command:" + D + "ls" + D + "}")
    assert out.thinking == ["plan\n"] and out.calls[0].name == "bash" and out.text == ""
    for size in (1, 2, 3):
        assert merged(run(split_every("  call:f{a:1}", size))) == merged(run(["  call:f{a:1}"]))


def test_call_in_prose_is_never_a_call():
    for text in ["Then I call: the office.", "You can call:bash{x:1} yourself.", "call: me maybe", "callback"]:
        out = parse_output(text)
        assert out.calls == [] and out.errors == [] and out.text == text
    assert parse_output("call:f{a:1}", strict=True).text == "call:f{a:1}"


def test_stop_markers_are_reported_not_leaked():
    for marker in ("<|tool_response>", "<turn|>", "<eos>"):
        out = parse_output("The answer is 4." + marker)
        assert out.text == "The answer is 4." and out.stop == marker


def test_oversized_block_then_carries_on():
    text = "<|tool_call>call:f{a:" + D + "x" * 500 + D + "}<tool_call|>after" + CALL
    events = run(split_every(text, 7), max_block_chars=100)
    errors = [e for e in events if isinstance(e, ToolCallError)]
    assert len(errors) == 1 and "exceeds 100" in errors[0].error and len(errors[0].raw) == 100
    assert [e.name for e in events if isinstance(e, ToolCallEnd)] == ["get_weather"]
    assert "".join(e.text for e in events if e.type == "text") == "after"
    assert_tiles(events, text)


def test_too_deep_nesting_is_an_error_not_a_crash():
    text = "<|tool_call>call:f{a:" + "[" * 2000 + "]" * 2000 + "}<tool_call|>x"
    out = parse_output(text, max_depth=100)
    assert out.calls == [] and "nesting deeper than 100" in out.errors[0].error and out.text == "x"


def test_feed_after_flush_raises():
    p = StreamParser()
    p.flush()
    with pytest.raises(RuntimeError):
        p.feed("x")


def test_to_openai():
    [call] = parse_output(CALL).calls
    assert call.to_openai() == {"id": call.id, "type": "function", "function": {
        "name": "get_weather", "arguments": '{"location": "Tokyo, JP", "days": 3}'}}


def test_to_dict_is_json_ready():
    import json

    for event in run([CALL + "<|tool_call>call:f{,}<tool_call|>"]):
        json.dumps(event.to_dict())


# --- every chunking gives the same events ------------------------------------------------------
_pieces = st.sampled_from([
    "plain text ", "a < b > c ", "{not a block}", "\n", CALL, "<|tool_call>call:ping{}<tool_call|>",
    "<|channel>thought\nhmm<channel|>", "<|channel>thought<channel|>", "<tool_call|>", "<channel|>",
    "<|tool_call>call:f{a:" + D + "x<tool_call|>y" + D + "}<tool_call|>", "<|tool_call>call:bad{a:1,}<tool_call|>",
    "<|tool_response>", "<turn|>", "<eos>", "<|", "<|tool_c", D, "<|tool_call>call:open{a:1}",
])


@given(st.lists(_pieces, max_size=12), st.lists(st.integers(min_value=0, max_value=400), max_size=20),
       st.booleans(), st.booleans())
def test_random_splits_give_the_same_merged_events(pieces, cuts, thinking, start_in_thinking):
    text = "".join(pieces)
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    options = {"parse_thinking": thinking, "start_in_thinking": start_in_thinking}
    whole = run([text], **options)
    chunked = run(chunks, **options)
    assert_tiles(whole, text)
    assert_tiles(chunked, text)
    assert merged(chunked) == merged(whole)


def test_collect_reads_a_subclass_of_an_event_type_as_its_base():
    from dataclasses import dataclass

    from gemma4_incremental import collect
    from gemma4_lark.events import Stop, Text

    @dataclass(frozen=True, slots=True)
    class Tagged(Text):
        tag: str = ""

    out = collect([Text("a", (0, 1)), Tagged("b", (1, 2), tag="x"), Stop("<turn|>", (2, 9)), Stop("<eos>", (9, 14))])
    assert out.text == "ab" and out.stop == "<turn|>"
