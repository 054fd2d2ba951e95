"""A labelled channel inside a thought (vllm-mlx's "realistic production output"): not strict,
`<|channel>LABEL\\n` ends the thought, its label line is stray markup, and what follows is the
answer (docs/leniency.md#a-channel-inside-a-thought; issue 30, section 2). Strict: as ever."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StrayMarkup, ThinkingEnd, collect, parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens

from stream_helpers import assert_tiles, counter_ids, merged, run, split_every

OPEN = tokens.CHANNEL_OPEN
REALISTIC = ("<|channel>thought\nThe user says hi. Plan: greet politely.\n"
             "<|channel>response\nHello! How can I help you today?")


def _read(text, sizes=(1, 2, 5, 1 << 20), **options):
    """The merged events of `text`, the same at every chunking and in parse_output."""
    seen = None
    for size in sizes:
        events = run(split_every(text, size), **options)
        assert_tiles(events, text)
        events = merged(events)
        assert seen is None or events == seen, size
        seen = events
    assert merged(parse_output(text, id_factory=counter_ids(), **options).events) == seen
    return seen


def test_the_realistic_output_has_its_answer():
    events = _read(REALISTIC)
    parsed = collect(events)
    assert parsed.thinking == ["The user says hi. Plan: greet politely.\n"]
    assert parsed.text == "Hello! How can I help you today?"
    at = REALISTIC.index("<|channel>response")
    assert ThinkingEnd((at, at + len(OPEN))) in events
    assert StrayMarkup("response\n", (at + len(OPEN), at + len(OPEN) + len("response\n"))) in events
    message = to_openai_message(parsed)
    assert message["content"] == "Hello! How can I help you today?"
    assert message["reasoning_content"] == "The user says hi. Plan: greet politely.\n"


def test_strict_keeps_it_in_the_thought():
    parsed = collect(_read(REALISTIC, strict=True))
    assert parsed.text == "" and parsed.thinking == ["The user says hi. Plan: greet politely.\nresponse\n"
                                                     "Hello! How can I help you today?"]


@pytest.mark.parametrize("after", [
    "not a label\nrest",          # a space: not a name
    "response",                   # no newline before the end
    "",                           # the opener last
    "<channel|>rest",             # a marker, no label
    "x" * 80 + "\nrest",          # longer than a label
])
def test_an_opener_without_a_label_line_is_stray_as_before(after):
    text = "<|channel>thought\nidea" + OPEN + after
    events = _read(text)
    assert StrayMarkup(OPEN, (len("<|channel>thought\nidea"), len("<|channel>thought\nidea") + len(OPEN))) in events
    assert _read(text, strict=True) == events


def test_after_the_label_the_answer_is_read_as_after_a_closer():
    # a call after the label line, and a bare call (the stream's start of an answer)
    for rest in ["<|tool_call>call:f{a:1}<tool_call|>", "call:f{a:1}"]:
        parsed = collect(_read("<|channel>thought\nplan\n<|channel>final\n" + rest))
        assert [(c.name, c.arguments) for c in parsed.calls] == [("f", {"a": 1})]
        assert parsed.thinking == ["plan\n"]


def test_inside_an_unlabelled_thought_too():
    parsed = collect(_read("<|channel>budget text<|channel>answer\nThe answer"))
    assert parsed.thinking == ["budget text"] and parsed.text == "The answer"


def test_a_repeated_thought_opener_is_still_stray():
    parsed = collect(_read("<|channel>thought\na<|channel>thought\nb<channel|>c"))
    assert parsed.thinking == ["ab"] and parsed.text == "c"


def test_without_thoughts_it_is_text():
    assert collect(_read(REALISTIC, parse_thinking=False)).text == REALISTIC


_PIECES = ["<|channel>thought\n", "<|channel>", "response\n", "final", "\n", "plan ", "<channel|>", "Hi.",
           "<|tool_call>call:f{a:1}<tool_call|>", " x:y\n", "<turn|>"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=10), st.integers(1, 6), st.booleans())
def test_outputs_of_channel_pieces(parts, size, strict):
    text = "".join(parts)
    whole = merged(run([text], strict=strict))
    events = run(split_every(text, size), strict=strict)
    assert_tiles(events, text)
    assert merged(events) == whole
    if strict:  # strict: a channel opener in a thought is never anything but stray markup
        assert not any(type(e) is StrayMarkup and e.markup.endswith("\n") and not e.markup.startswith("<")
                       for e in whole)
