"""A bare call of a declared tool after prose (OVMS v2, ai-dynamo, vLLM, tensai):
`I need the user to choose.\\ncall:question{...}<tool_call|>`. Recovered only when the tool is
declared, the call starts a line and a real `<tool_call|>` ends it; else text, every byte of it.
Strict and token-id mode never guess (docs/leniency.md#bare-calls-after-prose; issue 30, section 2)."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, collect, parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens

from stream_helpers import assert_tiles, counter_ids, merged, run, split_every
from fake_tokenizer import FakeTokenizer

D = tokens.STRING_DELIMITER
CLOSE = tokens.TOOL_CALL_CLOSE


def _tool(name):
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"question": {"type": "string"}, "options": {"type": "array"}}}}}


TOOLS = [_tool("question"), _tool("get_time")]
CALL = f"call:question{{question:{D}Which color?{D},options:[{D}red{D},{D}blue{D}]}}"
ARGS = {"question": "Which color?", "options": ["red", "blue"]}
OVMS = "I need the user to choose.\n" + CALL + CLOSE


def _read(text, sizes=(1, 2, 3, 7, 1 << 20), **options):
    """(calls as (name, arguments), error codes, content): the same at every chunking and in
    parse_output; the spans tile the input."""
    seen = None
    for size in sizes:
        events = run(split_every(text, size), **options)
        assert_tiles(events, text)
        parsed = collect(events)
        got = ([(c.name, c.arguments) for c in parsed.calls], [e.code for e in parsed.errors], parsed.text)
        assert seen is None or got == seen, size
        seen = got
    whole = parse_output(text, id_factory=counter_ids(), **options)
    assert ([(c.name, c.arguments) for c in whole.calls], [e.code for e in whole.errors], whole.text) == seen
    return seen


def test_the_observed_shape_is_a_call():
    calls, errors, text = _read(OVMS, tools=TOOLS)
    assert calls == [("question", ARGS)] and errors == [] and text == "I need the user to choose.\n"
    (call,) = parse_output(OVMS, tools=TOOLS).calls
    assert call.recovered and "missing-opener" in [d.code for d in call.diagnostics]
    assert to_openai_message(parse_output(OVMS, tools=TOOLS))["content"] == "I need the user to choose.\n"


@pytest.mark.parametrize("text, options", [
    (OVMS, {}),                                                                   # no tools
    (OVMS.replace("call:question", "call:ask"), {"tools": TOOLS}),               # not declared
    ("I need the user to " + CALL + CLOSE, {"tools": TOOLS}),                    # mid-sentence
    ("I need the user to choose.\n" + CALL, {"tools": TOOLS}),                   # no closer
    ("I need the user to choose.\n" + CALL + " then" + CLOSE, {"tools": TOOLS}),  # words before it
    ("I need the user to choose.\n" + CALL + "<turn|>", {"tools": TOOLS}),       # a stop instead
    ("I need the user to choose.\n" + CALL + "<|tool_c", {"tools": TOOLS}),      # a cut closer
    (OVMS, {"tools": TOOLS, "strict": True}),
])
def test_the_guards_keep_it_text(text, options):
    calls, errors, content = _read(text, **options)
    assert calls == [] and errors == []
    # every character is still there (a stray closer, a stop marker are markup)
    kept = text.replace(CLOSE, "").replace("<turn|>", "")
    assert content == kept


def test_a_stop_after_it_is_no_closer_even_with_a_finish_reason():
    parser = StreamParser(tools=TOOLS)
    events = parser.feed("Choose.\n" + CALL) + parser.flush(finish_reason="stop")
    assert collect(events).calls == [] and collect(events).text == "Choose.\n" + CALL


def test_several_lines_and_calls():
    text = (f"First.\n{CALL}{CLOSE}\nThen some prose with call:question{{x:1}}{CLOSE} in it.\n"
            f"  call:get_time{{}}{CLOSE}\nDone.")
    calls, errors, content = _read(text, tools=TOOLS)
    assert calls == [("question", ARGS), ("get_time", {})] and errors == []
    assert content == "First.\n\nThen some prose with call:question{x:1} in it.\n  \nDone."


def test_a_real_opener_inside_its_string_ends_the_guess():
    text = f"Prose.\ncall:question{{question:{D}a <|tool_call>call:get_time{{}}{CLOSE}"
    calls, errors, content = _read(text, tools=TOOLS)
    assert calls == [("get_time", {})] and errors == []
    assert content == f"Prose.\ncall:question{{question:{D}a "


def test_start_of_output_bare_calls_are_as_before():
    # at the start, a bare call ends at its `}` and needs no closer (docs/leniency.md#recoveries)
    assert _read(CALL + "\nok", tools=TOOLS)[0] == [("question", ARGS)]
    assert _read(CALL + "\nok")[0] == [("question", ARGS)]


def test_a_bare_block_past_the_limit_is_text():
    text = f"Prose.\ncall:question{{question:{D}{'x' * 300}{D}}}{CLOSE}"
    calls, errors, content = _read(text, tools=TOOLS, max_block_chars=100)
    assert calls == [] and errors == [] and content == text.replace(CLOSE, "")


def test_token_id_mode_never_guesses():
    tokenizer = FakeTokenizer()
    ids = tokenizer.encode(OVMS)
    parser = StreamParser.for_tokenizer(tokenizer, tools=TOOLS, id_factory=counter_ids())
    events = parser.feed(tokenizer.decode(ids), token_ids=ids) + parser.flush()
    assert_tiles(events, OVMS)
    assert collect(events).calls == []


_PIECES = ["Prose", ".", "\n", " ", "call:question{", "call:get_time{", "call:other{", "}", "question:",
           D, "x", ",", "[", "]", CLOSE, "<turn|>", "<|tool_call>", "<|channel>thought\n", "<channel|>"]


@settings(max_examples=250, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14), st.integers(1, 6))
def test_every_chunking_reads_the_same_and_loses_nothing(parts, size):
    text = "".join(parts)
    whole = merged(run([text], tools=TOOLS))
    events = run(split_every(text, size), tools=TOOLS)
    assert_tiles(events, text)
    assert merged(events) == whole
    # without tools, no bare call after prose: only where the stream guessed one before
    plain = collect(run([text]))
    for call in collect(whole).calls:
        assert call.name in ("question", "get_time")
    assert len(collect(whole).calls) >= len([c for c in plain.calls if c.name in ("question", "get_time")])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES + ["some words ", "more words"]), max_size=14), st.integers(1, 5))
def test_feeds_inlined_path_reads_prose_as_the_scan_does(parts, size):
    # `feed` takes a prose chunk with no `<` and no newline whole (docs/architecture.md's inlined
    # path); the scan reads every chunk: the same events
    text = "".join(parts)
    results = []
    for scan_only in (False, True):
        parser = StreamParser(tools=TOOLS, id_factory=counter_ids())
        feed = parser._machine.scan_chunk if scan_only else parser.feed
        events = [event for chunk in split_every(text, size) for event in feed(chunk)]
        results.append(events + parser.flush())
    assert results[0] == results[1]
