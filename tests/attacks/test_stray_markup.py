"""Stray markup (docs/leniency.md#stray-markup): markup that means nothing where it stands leaves
the text and the thought, as a `stray_markup` event whose span covers it, in lenient and strict
mode alike; the whole-output grammar refuses it.

Every case runs at every chunking: whole, 1 character, 4 characters, and random splits."""

import random

import pytest
from hypothesis import given, strategies as st

import gemma4_lark
from gemma4_incremental import StrayMarkup, StreamParser, Text, ThinkingDelta, parse_output
from gemma4_incremental.openai import OpenAIStream, to_openai_message
from gemma4_lark.render.official import render_chat
from gemma4_lark.render.omp import render_transcript

from stream_helpers import assert_tiles, counter_ids, merged, run, split_every
from timing import Guard, guard_tests

D = '<|"|>'
CALL = "<|tool_call>call:f{a:1}<tool_call|>"
THOUGHT = "<|channel>thought\nhm<channel|>"

# (id, output, options, content, thoughts, the stray markup in order)
CASES = [
    ("trailing-channel-close", "Hello<channel|>", {}, "Hello", [], ["<channel|>"]),
    ("extra-channel-close", THOUGHT + "<channel|>Answer", {}, "Answer", ["hm"], ["<channel|>"]),
    ("two-extra-channel-closes", THOUGHT + "Hi<channel|>\n<channel|>", {}, "Hi\n", ["hm"],
     ["<channel|>", "<channel|>"]),
    ("llamacpp-trailing-empty-thought", "<|channel>thought\n<channel|>Hello<|channel>thought\n<channel|><channel|>",
     {}, "Hello", ["", ""], ["<channel|>"]),
    ("extra-tool-call-close", CALL + "<tool_call|>done", {}, "done", [], ["<tool_call|>"]),
    ("tool-call-close-after-space", CALL + "\n<tool_call|>\n", {}, "\n\n", [], ["<tool_call|>"]),
    ("doubled-channel-opener", "<|channel><|channel>thought\nhm<channel|>Answer", {}, "Answer", ["hm"],
     ["<|channel>thought\n"]),
    ("re-emitted-opener", "<|channel>thought\nhm<channel|>Answer", {"start_in_thinking": True}, "Answer", ["hm"],
     ["<|channel>thought\n"]),
    ("re-emitted-opener-no-newline", "<|channel>thoughthm<channel|>A", {"start_in_thinking": True}, "A", ["hm"],
     ["<|channel>thought"]),
    ("opener-inside-a-thought", "<|channel>thought\na<|channel>b<channel|>c", {}, "c", ["ab"], ["<|channel>"]),
    ("unlabelled-channel", "<|channel>budget spent<channel|>Answer", {}, "Answer", ["budget spent"], []),
    ("unlabelled-channel-late-label", "<|channel>budget<channel|>thought\nThe answer is 42.", {},
     "The answer is 42.", ["budget"], ["thought\n"]),
    ("dangling-unlabelled-channel", "<|channel> ", {}, "", [" "], []),
    ("unlabelled-then-opener", "<|channel>\n<|channel>thought\nx<channel|>y", {}, "y", ["\nx"],
     ["<|channel>thought\n"]),
    ("stray-close-then-bare-call", "Sure<channel|>call:f{a:1}", {}, "Sure", [], ["<channel|>"]),
    ("label-after-a-labelled-thought-is-text", THOUGHT + "thought\nHi", {}, "thought\nHi", ["hm"], []),
    ("label-needs-its-newline", "<|channel>x<channel|>thoughtful", {}, "thoughtful", ["x"], []),
    ("tool-call-close-without-thinking", "a<channel|>b<tool_call|>c", {"parse_thinking": False},
     "a<channel|>bc", [], ["<tool_call|>"]),
]

# Strict mode: the same markup leaves the text and the thought too (a server would otherwise send
# content that render_chat refuses when the client sends it back); only a labelled channel is a
# thought, so an unlabelled one is stray markup and what it held is text.
STRICT = [
    ("trailing-channel-close", "Hello<channel|>", {}, "Hello", [], ["<channel|>"]),
    ("extra-channel-close", THOUGHT + "<channel|>Answer", {}, "Answer", ["hm"], ["<channel|>"]),
    ("extra-tool-call-close", CALL + "<tool_call|>done", {}, "done", [], ["<tool_call|>"]),
    ("doubled-channel-opener", "<|channel><|channel>thought\nhm<channel|>A", {}, "A", ["hm"], ["<|channel>"]),
    ("re-emitted-opener", "<|channel>thought\nhm<channel|>A", {"start_in_thinking": True}, "A", ["hm"],
     ["<|channel>thought\n"]),
    ("unlabelled-channel", "<|channel>x<channel|>y", {}, "xy", [], ["<|channel>", "<channel|>"]),
]


def _random_splits(text, seed):
    rng = random.Random(seed)
    points = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 6)))) if len(text) > 1 else []
    return [text[a:b] for a, b in zip([0] + points, points + [len(text)])]


def _chunkings(text):
    return [[text], split_every(text, 1), split_every(text, 4)] + [_random_splits(text, seed) for seed in range(8)]


def _streamed_message(chunks, **options):
    """The OpenAI message accumulated from an OpenAIStream's chunks, as the SDK does it."""
    for stream_arguments in (True, False):
        stream = OpenAIStream(StreamParser(id_factory=counter_ids(), **options), stream_arguments=stream_arguments)
        content, reasoning = [], []
        for chunk in [c for piece in chunks for c in stream.feed(piece)] + stream.flush():
            delta = chunk["choices"][0]["delta"]
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
        yield "".join(content), "".join(reasoning)


@pytest.mark.parametrize("name, text, options, content, thoughts, stray", CASES, ids=[c[0] for c in CASES])
def test_stray_markup_leaves_content_and_thinking(name, text, options, content, thoughts, stray):
    whole = run([text], **options)
    for chunks in _chunkings(text):
        events = run(chunks, **options)
        assert_tiles(events, text)
        assert merged(events) == merged(whole), chunks
        assert [e.markup for e in events if isinstance(e, StrayMarkup)] == stray
        for e in events:
            if isinstance(e, StrayMarkup):
                assert text[e.span[0]:e.span[1]] == e.markup
    out = parse_output(text, **options)
    assert out.text == content
    assert out.thinking == thoughts
    message = to_openai_message(out)
    assert (message["content"] or "") == content
    assert message.get("reasoning_content", "") == "\n".join(thoughts)
    for chunks in (split_every(text, 1), [text]):
        for streamed_content, streamed_reasoning in _streamed_message(chunks, **options):
            assert streamed_content == content
            assert streamed_reasoning == "\n".join(thoughts)


@pytest.mark.parametrize("name, text, options, content, thoughts, stray", STRICT, ids=[c[0] for c in STRICT])
def test_strict_mode_takes_the_markup_out_of_text_and_thought_too(name, text, options, content, thoughts, stray):
    for chunks in _chunkings(text):
        events = run(chunks, strict=True, **options)
        assert_tiles(events, text)
        assert [e.markup for e in events if isinstance(e, StrayMarkup)] == stray
    out = parse_output(text, strict=True, **options)
    assert out.text == content and out.thinking == thoughts
    # what the server sends can be sent back: the renderer takes the message as it is
    message = to_openai_message(out)
    for render in (render_chat, render_transcript):
        render([{"role": "user", "content": "hi"}, message])


# What the grammar reads: the output, after the prompt's thought prefill when the stream starts in it.
_WHOLE = sorted({("<|channel>thought\n" if c[2].get("start_in_thinking") else "") + c[1] for c in CASES
                 if c[5] or "unlabelled" in c[0] or c[0] == "label-needs-its-newline"})


@pytest.mark.parametrize("text", _WHOLE)
def test_the_whole_output_grammar_refuses_stray_markup(text):
    # parse_output_document reads the grammar, which has no place for any of it: it stays strict
    with pytest.raises(gemma4_lark.GemmaSyntaxError):
        gemma4_lark.parse_output_document(text)


def test_the_prompts_thought_prefill_and_a_re_emitted_opener():
    prompt = "<bos><|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\n"
    output = "<|channel>thought\nLet me see.<channel|>It is 4."
    for chunks in _chunkings(output):
        parser = StreamParser.for_prompt(prompt)
        events = merged([e for chunk in chunks for e in parser.feed(chunk)] + parser.flush())
        assert [e.type for e in events] == ["thinking_start", "stray_markup", "thinking_delta", "thinking_end", "text"]
        assert events[2].text == "Let me see." and events[-1].text == "It is 4."


def test_a_bare_call_after_a_stray_channel_close_is_recovered():
    out = parse_output("Done thinking.<channel|>call:bash{command:" + D + "ls" + D + "}")
    [call] = out.calls
    assert call.name == "bash" and call.arguments == {"command": "ls"} and call.recovered
    assert out.text == "Done thinking."


def test_the_event_is_json_ready():
    [_, stray, _] = run(["a<channel|>b"])
    assert stray.to_dict() == {"type": "stray_markup", "markup": "<channel|>", "span": [1, 11]}


def test_markup_inside_a_call_block_is_the_blocks():
    text = "<|tool_call>call:f{a:" + D + "x<channel|>y" + D + "}<tool_call|>"
    [call] = parse_output(text).calls
    assert call.arguments == {"a": "x<channel|>y"}


# --- a stray string delimiter hides no closer ------------------------------------------------------
# (id, output, the calls as (name, arguments), content)
DELIMITER_CASES = [
    ("after-an-undelimited-value", "<|tool_call>call:search{query:weather in Tokyo" + D + "}<tool_call|>Done.",
     [("search", {"query": "weather in Tokyo"})], "Done."),
    ("in-a-nested-object", "<|tool_call>call:s{filters:{city:Tokyo" + D + "},query:" + D + "x" + D + "}<tool_call|>",
     [("s", {"filters": {"city": "Tokyo"}, "query": "x"})], ""),
    ("in-a-list", "<|tool_call>call:s{q:[" + D + "a" + D + ",b" + D + "]}<tool_call|>", [("s", {"q": ["a", "b"]})], ""),
    ("after-a-single-quoted-value", "<|tool_call>call:grep{pattern:'abc'" + D + "}<tool_call|>", [("grep", {"pattern": "abc"})], ""),
    ("unterminated-string-then-closer", "<|tool_call>call:bash{command:" + D + "ls}<tool_call|>Done. " + CALL,
     [("bash", {"command": "ls"}), ("f", {"a": 1})], "Done. "),
    ("spaces-before-a-real-string", "<|tool_call>call:s{a: \n " + D + "x" + D + "}<tool_call|>", [("s", {"a": "x"})], ""),
    ("closer-inside-a-closed-string", "<|tool_call>call:s{a:" + D + "x<tool_call|>y" + D + "}<tool_call|>",
     [("s", {"a": "x<tool_call|>y"})], ""),
    ("interior-delimiters", "<|tool_call>call:run{code:" + D + "sql(" + D * 3 + " SELECT " + D * 3 + ")" + D + "}<tool_call|>",
     [("run", {"code": 'sql(""" SELECT """)'})], ""),
]


VALID_DELIMITER_CASES = {"spaces-before-a-real-string", "closer-inside-a-closed-string"}  # in the grammar as they are


@pytest.mark.parametrize("name, text, calls, content", DELIMITER_CASES, ids=[c[0] for c in DELIMITER_CASES])
def test_a_stray_string_delimiter_hides_no_closer(name, text, calls, content):
    whole = run([text])
    for chunks in _chunkings(text):
        events = run(chunks)
        assert_tiles(events, text)
        assert merged(events) == merged(whole), chunks
    out = parse_output(text)
    assert [(c.name, c.arguments) for c in out.calls] == calls and not out.errors
    assert out.text == content


@pytest.mark.parametrize("text", [c[1] for c in DELIMITER_CASES if c[0] not in VALID_DELIMITER_CASES])
def test_the_whole_output_grammar_refuses_stray_delimiters(text):
    with pytest.raises(gemma4_lark.GemmaSyntaxError):
        gemma4_lark.parse_output_document(text)


def test_strict_mode_still_reads_every_delimiter():
    # strict: the delimiter after `Tokyo` opens a string that runs to the end: the block is an error
    text = "<|tool_call>call:search{query:weather in Tokyo" + D + "}<tool_call|>Done."
    out = parse_output(text, strict=True)
    assert not out.calls and [e.raw for e in out.errors] == [text] and out.text == ""


# --- every chunking, random outputs rich in stray markup -----------------------------------------
_pieces = st.sampled_from([
    "text ", "<channel|>", "<tool_call|>", "<|channel>", "<|channel>thought\n", "<|channel>thought", "thought\n",
    "thought", "<|channel>th", "<channel", "<tool_ca", CALL, "<|tool_call>call:g{b:" + D + "<channel|>" + D + "}",
    "call:h{c:2}", "<turn|>", "\n", "<", D, "{", ":", " ", "x", "}", "<|tool_call>call:s{q:a b" + D + "}<tool_call|>",
    "<|tool_call>call:u{c:" + D + "ls}<tool_call|>",
])


@given(st.lists(_pieces, max_size=14), st.lists(st.integers(min_value=0, max_value=300), max_size=20),
       st.booleans(), st.booleans(), st.booleans())
def test_random_splits_give_the_same_merged_events(pieces, cuts, thinking, start_in_thinking, strict):
    text = "".join(pieces)
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    options = {"parse_thinking": thinking, "start_in_thinking": start_in_thinking, "strict": strict}
    whole = run([text], **options)
    for events in (whole, run(chunks, **options), run(list(text), **options)):
        assert_tiles(events, text)
        assert merged(events) == merged(whole)
    # the whole-text path and the stream of OpenAI chunks agree, at any chunking
    message = to_openai_message(parse_output(text, **options))
    for content, reasoning in _streamed_message(chunks, **options):
        assert content == (message["content"] or "")
        assert reasoning == message.get("reasoning_content", "")
    # strict or not: no closer with nothing open is text, no channel opener is thought (a bare
    # block that did not decode is text as written, markup and all)
    for e in whole:
        if isinstance(e, Text) and not e.text.lstrip().startswith("call:"):
            assert "<tool_call|>" not in e.text
            assert not thinking or "<channel|>" not in e.text and "<|channel>" not in e.text
        if isinstance(e, ThinkingDelta):
            assert "<|channel>" not in e.text


# --- cost: linear in the amount of stray markup, whatever the chunking ----------------------------
_SHAPES = {
    "closers in text": lambda n: "a<channel|>" * n,
    "tool-call closers in text": lambda n: "<tool_call|>b" * n,
    "openers in a thought": lambda n: "<|channel>thought\n" + "<|channel>x" * n,
    "partial openers in a thought": lambda n: "<|channel>thought\n" + "<|channel>thoug" * n,
    "unlabelled channels": lambda n: "<|channel>x<channel|>thought\n" * n,
    "stray delimiters": lambda n: "<|tool_call>call:f{a:x" + D * n + "}<tool_call|>",
    "delimiters after spaces": lambda n: "<|tool_call>call:f{a:x" + ("   " + D) * n + "}<tool_call|>",
    "text after an unterminated string": lambda n: "<|tool_call>call:f{a:" + D + "x}<tool_call|>" + "text " * n,
}


# 16n stays under the block limit (4 MiB): the shapes repeat units of at most 28 characters
_STRAY_GUARDS = [Guard(f"{name}, chunks of {size}", run, lambda n, shape=_SHAPES[name], size=size: split_every(shape(n), size),
                       500, 8_000)
                 for name in sorted(_SHAPES) for size in (1, 16)]
test_time_grows_linearly, test_each_stray_markup_guard_can_fail = guard_tests(_STRAY_GUARDS, twins=_STRAY_GUARDS[:2])
