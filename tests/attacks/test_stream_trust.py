"""Issue 9, streaming and lenient decoding under attack: linear cost, bounded memory, and nothing lost
or invented. Complexity guards compare sizes within one run (never an absolute time)."""

import json
import re
import subprocess
import sys
import tracemalloc

import pytest
from hypothesis import example, given, settings, strategies as st

import gemma4_lark
import gemma4_lark.blocks
import gemma4_lark.fastpath
from gemma4_incremental import (
    StreamParser, Text, ThinkingDelta, ToolCallEnd, ToolCallError, ToolCallStart, collect, parse_output,
    to_openai_message,
)
from gemma4_lark.diagnostics import Diagnostic
from gemma4_lark.recovery import decode_call, decode_calls

from stream_helpers import assert_tiles, merged, run, split_every
from timing import Guard, guard_tests

D = '<|"|>'
CALL = "<|tool_call>call:get_weather{city:" + D + "Paris" + D + "}<tool_call|>"


def block(body):
    return "<|tool_call>call:f{" + body + "}<tool_call|>"


def fill(unit, size):
    return unit * max(1, size // len(unit))


# --- 1. linear time on the lenient path ------------------------------------------------------------
# Every shape makes one recovery (one diagnostic) per few characters.
RECOVERY_SHAPES = {
    "delimiter-runs": lambda n: block("a:" + fill(D, n)),
    "json-strings": lambda n: block("a:[" + fill('"x",', n) + "1]"),
    "trailing-commas": lambda n: block("a:[" + fill("1,,", n) + "1]"),
    "missing-commas": lambda n: block("a:[" + fill(D + "x" + D + " ", n) + "1]"),
    "interior-delimiters": lambda n: block("a:" + D + fill("x" + D + "y", n) + D),
    "stray-delimiters": lambda n: block("a:[" + fill("b" + D + ",", n) + "1]"),
    "missing-values": lambda n: block(fill("k,", n) + "z:1"),
    "lines": lambda n: block("a:[" + fill("1,\n,", n) + "1]"),
}


_RECOVERY_GUARDS = [Guard(f"lenient {name}", parse_output, shape, 2_000, 200_000)
                    for name, shape in sorted(RECOVERY_SHAPES.items())]
test_lenient_stream_is_linear_in_the_number_of_recoveries, test_each_recovery_guard_can_fail = guard_tests(
    _RECOVERY_GUARDS, twins=_RECOVERY_GUARDS[:1])


def test_diagnostics_are_bounded_per_call_and_cover_the_rest():
    text = RECOVERY_SHAPES["trailing-commas"](60_000)
    [call] = parse_output(text).calls
    codes = [d.code for d in call.diagnostics]
    assert len(codes) <= 1002 and codes.count("more-diagnostics") == 1
    [more] = [d for d in call.diagnostics if d.code == "more-diagnostics"]
    assert more.end > more.pos and call.raw[more.end - 1] == ","


def test_diagnostic_positions_are_line_and_column_of_their_offset():
    text = "<|tool_call>call:f{a:[1,\n,2,\n\n,3]}<tool_call|>"
    [call] = parse_output(text).calls
    for d in call.diagnostics:
        before = call.raw[:d.pos]
        assert (d.line, d.column) == (before.count("\n") + 1, d.pos - (before.rfind("\n") + 1) + 1)


# --- 2. bounded memory ------------------------------------------------------------------------------
def _peak(chunks, **options):
    """tracemalloc peak of streaming `chunks` (a lazy iterable: the caller holds none of them)."""
    parser = StreamParser(**options)
    tracemalloc.start()
    try:
        for chunk in chunks:
            parser.feed(chunk)
        parser.flush()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_block_in_one_character_chunks_costs_a_few_times_its_size():
    n = 200_000
    text = "<|tool_call>call:f{a:" + D + "字" * n + D + "}<tool_call|>"
    peak = _peak(text[i] for i in range(len(text)))
    # the block is 2 bytes a character (UCS-2); target: <= 8x the block plus a constant
    assert peak <= 8 * 2 * len(text) + 256 * 1024, peak / (2 * len(text))


def test_a_thought_is_not_kept():
    def chunks():  # ~3 MB of thought, each chunk made when fed
        yield "<|channel>thought\n"
        for i in range(60):
            yield f"step {i}: " + "thinking about it " * 3000
        yield "<channel|>"

    assert _peak(chunks()) < 1024 * 1024


def test_a_thought_is_its_deltas():
    text = "<|channel>thought\n" + "abc" * 1000 + "<channel|>done"
    out = collect(run(split_every(text, 7)))
    assert out.thinking == ["abc" * 1000] and out.text == "done"


# --- 3. bounds on bare blocks; chunking-invariance with any limit ----------------------------------
def test_an_oversized_bare_block_is_prose_and_loses_nothing():
    # a bare block is a guess; one that outgrows the limit gives all its text back
    text = "call:f{a:" + D + "x" * 5000 + D + "} and after"
    for size in (1, 64, len(text)):
        events = run(split_every(text, size), max_block_chars=1000)
        assert not [e for e in events if isinstance(e, (ToolCallEnd, ToolCallError))]
        assert collect(events).text == text
        assert_tiles(events, text)
    story = "call:me{ said nobody, once upon a time, in a story"
    assert parse_output(story, max_block_chars=20).text == story


def _text_is_whole(events):
    for e in events:
        if isinstance(e, (Text, ThinkingDelta)):
            assert len(e.text) == e.span[1] - e.span[0], e


_soup = st.sampled_from([
    "call:", "call:f{", "f", "{", "}", "a:", D, "x", " ", "\n", ",", "<|tool_call>", "<tool_call|>", "<turn|>",
    "<|channel>thought\n", "<channel|>", "call:get_weather{city:", "(", "k=1", "<", "<|tool_c",
])


@settings(max_examples=300)
@given(st.lists(_soup, max_size=14), st.integers(1, 300), st.lists(st.integers(0, 200), max_size=8))
@example(["call:f{", "<|channel>thought\n"], 1, [])  # a bare block turning to text before a thought
def test_events_do_not_depend_on_chunking_whatever_the_block_limit(pieces, limit, cuts):
    text = "".join(pieces)
    points = sorted({c % (len(text) + 1) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    whole = run([text], max_block_chars=limit)
    for parts in (chunks, list(text)):
        chunked = run(parts, max_block_chars=limit)
        assert_tiles(chunked, text)
        _text_is_whole(chunked)
        assert merged(chunked) == merged(whole)


# --- 4. nothing lost, nothing invented --------------------------------------------------------------
@pytest.mark.parametrize("size", [1, 5, 1000])
def test_a_real_opener_always_opens_a_block(size):
    text = "<channel|>call: I quote with " + D + "Paris\n" + CALL
    events = run(split_every(text, size), start_in_thinking=True)
    out = collect(events)
    assert [(c.name, c.arguments) for c in out.calls] == [("get_weather", {"city": "Paris"})]
    assert out.text == "call: I quote with " + D + "Paris\n"
    assert_tiles(events, text)


def test_a_real_opener_inside_a_string_of_a_bare_call_ends_the_guess():
    text = "call:f{a:" + D + "Paris\n" + CALL
    out = parse_output(text)
    assert [c.name for c in out.calls] == ["get_weather"]
    [error] = out.errors
    assert error.raw == "call:f{a:" + D + "Paris\n" and error.partial == {"a": "Paris"}


def test_a_bare_call_needs_its_head_before_any_marker():
    for text in ["call: me maybe <b>{a:1}", "call:" + "x" * 300 + "{a:1}", "call:two words{a:1}"]:
        out = parse_output(text)
        assert out.calls == [] and out.errors == [] and out.text == text


def test_integers_up_to_the_bound_decode_exactly():
    digits = "7" * 4300
    decoded = decode_call(block("n:" + digits + ",m:-" + digits))
    assert decoded.call.arguments == {"n": int(digits), "m": -int(digits)}


def test_an_integer_too_long_to_decode_is_refused_with_its_span():
    text = block("n:" + "7" * 4_301)
    decoded = decode_call(text)
    assert decoded.call is None
    [d] = [d for d in decoded.diagnostics if d.code == "number-too-long"]
    assert d.severity == "error" and (d.pos, d.end) == (text.index("7"), text.index("7") + 4_301)


@pytest.mark.parametrize("strict", [False, True])
def test_the_stream_survives_any_failure_of_a_decoder(monkeypatch, strict):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(gemma4_lark.blocks, "parse_call", broken)  # (where blocks are decided,
    monkeypatch.setattr(gemma4_lark.fastpath, "parse_call", broken)  # after the fast path)
    text = "Before " + CALL + " after"
    parser = StreamParser(strict=strict)
    events = parser.feed(text)
    events += parser.flush()
    assert [type(e).__name__ for e in events] == ["Text", "ToolCallStart", "ToolCallError", "Text"]
    assert "RuntimeError" in events[2].error and events[2].raw == CALL
    assert_tiles(events, text)


def test_a_huge_integer_in_the_stream_loses_nothing():
    text = "Before <|tool_call>call:f{n:" + "7" * 5000 + "}<tool_call|> after"
    parser = StreamParser()
    events = parser.feed(text) + parser.flush()
    assert_tiles(events, text)
    assert "".join(e.text for e in events if isinstance(e, Text)) == "Before  after"
    assert len([e for e in events if isinstance(e, (ToolCallEnd, ToolCallError))]) == 1


@pytest.mark.parametrize("body, arguments, codes", [
    ("filters:{city:Tokyo" + D + "},query:" + D + "x" + D, {"filters": {"city": "Tokyo"}, "query": "x"},
     ["stray-delimiter"]),
    ("query:[" + D + "a" + D + ",b" + D + "]", {"query": ["a", "b"]}, ["stray-delimiter"]),
    ("first:" + D + "one,second:" + D + "two" + D, {"first": "one", "second": "two"}, ["unterminated-string"]),
    ("a:1,a:2,", {"a": 2}, ["duplicate-key", "trailing-comma"]),
    ("a:,b:1", {"b": 1}, ["missing-value"]),
])
def test_lenient_recoveries_neither_drop_nor_invent_members(body, arguments, codes):
    decoded = decode_call(block(body))
    assert decoded.call.arguments == arguments and [d.code for d in decoded.diagnostics] == codes
    # In a stream, an odd number of delimiters leaves `<tool_call|>` inside a string: the block is
    # then unclosed, an error, with everything it holds decoded
    out = parse_output(block(body))
    assert [c.arguments for c in out.calls] + [e.partial for e in out.errors] == [arguments]


def test_a_second_call_in_one_block_is_a_call_of_its_own():
    text = "<|tool_call>call:a{x:1}call:b{y:2}<tool_call|>"
    for size in (1, 3, len(text)):
        events = run(split_every(text, size))
        ends = [e for e in events if isinstance(e, ToolCallEnd)]
        assert [(e.name, e.arguments, e.index) for e in ends] == [("a", {"x": 1}, 0), ("b", {"y": 2}, 1)]
        assert all(e.recovered for e in ends) and "".join(e.raw for e in ends) == text
        assert_tiles(events, text)
    assert [d.code for d in decode_call(text).diagnostics] == ["second-call"]


# Every character of a recovered call is in a decoded value or in a diagnostic's span.
_member_parts = st.sampled_from([
    "a", "key", "Tokyo", "12", "-3.5", "true", "x y", ":", ",", "=", "{", "}", "[", "]", D, '"q"', "'s'",
    " ", "\n", "call:g{", "()", "<escape>",
])
_SYNTAX = re.compile(r'<\|"\|>|<\|tool_call>|<tool_call\|>|call\s*:\s*|[{}\[\](),:=\s"\']')


def _decoded_words(value):
    stack, words = [value], []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            words += [str(k) for k in item]
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        else:
            words.append(json.dumps(item) if not isinstance(item, str) else item)
    return " ".join(words)


@settings(max_examples=400)
@given(st.lists(_member_parts, max_size=16))
def test_every_character_of_a_recovered_block_is_decoded_or_covered(parts):
    text = "<|tool_call>call:f{" + "".join(parts) + "}<tool_call|>"
    for start, stop, decoded in decode_calls(text):
        if decoded.call is None:
            continue
        part = text[start:stop]
        covered = [False] * len(part)
        for d in decoded.diagnostics:
            for i in range(d.pos, min(d.end, len(part))):
                covered[i] = True
        name_at = part.find(decoded.call.name, part.find("call"))
        for i in range(name_at, name_at + len(decoded.call.name)):
            covered[i] = True
        uncovered = "".join(c if not covered[i] else " " for i, c in enumerate(part))
        words = _decoded_words(decoded.call.arguments)
        for word in _SYNTAX.sub(" ", uncovered).split():
            assert word in words or _is_decoded_number(word, decoded.call.arguments), (part, word, decoded)


def _is_decoded_number(word, arguments):
    """`word` is a number that the arguments hold (written another way: `1e5` is 100000.0)."""
    try:
        number = float(word)
    except ValueError:
        return False
    stack = [arguments]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and item == number:
            return True
    return False


def test_functiongemma_escape_is_reported_in_both_modes():
    text = "<|tool_call>call:f{city:<escape>Paris<escape>}<tool_call|>"
    for strict in (False, True):
        [call] = parse_output(text, strict=strict).calls
        assert call.arguments == {"city": "<escape>Paris<escape>"} and not call.recovered
        [warning] = call.diagnostics
        assert (warning.code, warning.severity) == ("functiongemma-escape", "warning")
        assert (warning.pos, warning.end) == (text.index("<escape>"), text.index("}"))
    # inside a real string it is just text
    assert parse_output("<|tool_call>call:f{city:" + D + "<escape>" + D + "}<tool_call|>").calls[0].diagnostics == []


# --- the OpenAI shapes never pass a recovered or failed block off as a call -------------------------
def test_diagnostic_end_defaults_to_its_position_and_is_serialized():
    d = Diagnostic("warning", "x", "m", 1, 1, 5)
    assert d.end == 5 and d.to_dict()["end"] == 5
    assert Diagnostic("warning", "x", "m", 1, 1, 5, 9).to_dict()["end"] == 9


def test_to_openai_marks_recovered_calls():
    [call] = parse_output(block("a:1,")).calls
    entry = call.to_openai()
    assert entry["recovered"] is True and [d["code"] for d in entry["diagnostics"]] == ["syntax", "trailing-comma"]
    [clean] = parse_output(CALL).calls
    assert set(clean.to_openai()) == {"id", "type", "function"}


def test_openai_message_keeps_failed_blocks_in_the_content():
    text = "Before <|tool_call>calldone{a:1}<tool_call|> after"
    message = to_openai_message(parse_output(text))
    assert message["content"] == text and "tool_calls" not in message
    [error] = message["tool_call_errors"]
    assert error["raw"] == "<|tool_call>calldone{a:1}<tool_call|>" and "call:" in error["error"]


def test_parse_command_openai_format_shows_failed_blocks(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("Before <|tool_call>calldone{a:1}<tool_call|> after" + CALL, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "gemma4_lark", "parse", "--format", "openai", str(path)],
                          capture_output=True, text=True)
    message = json.loads(done.stdout)
    assert message["content"] == "Before <|tool_call>calldone{a:1}<tool_call|> after"
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]
    assert len(message["tool_call_errors"]) == 1 and done.returncode == 1


@settings(max_examples=300)
@given(st.lists(_soup, max_size=14), st.booleans())
@example(["<|tool_call>", "call:f{", "}", "<turn|>"], False)
@example(["<|tool_call>", "call:f{", "a:", D, "x", "}"], False)
def test_a_plain_call_is_always_closed_and_nothing_at_the_end_is_a_call_unless_bare(pieces, strict):
    text = "".join(pieces)
    events = run([text], strict=strict)
    for e in events:
        if isinstance(e, ToolCallEnd) and not e.recovered:
            assert e.raw.endswith("<tool_call|>"), e
    last = events[-1] if events else None
    if isinstance(last, ToolCallEnd) and last.span[1] == len(text):
        # a call that reaches the end of the stream was closed, or is a complete bare call
        assert last.raw.endswith("<tool_call|>") or not last.raw.startswith("<|tool_call>"), last


# --- every call of a block shares the block's fate (H1) ---------------------------------------------
CUT_AFTER_TWO = "<|tool_call>call:run{cmd:" + D + "ls" + D + "}call:rm{path:" + D + "/tmp/build"


@pytest.mark.parametrize("size", [1, 5, len(CUT_AFTER_TWO)])
def test_strict_mode_makes_an_unclosed_block_of_several_calls_one_error(size):
    events = run(split_every(CUT_AFTER_TWO, size), strict=True)
    assert not [e for e in events if isinstance(e, ToolCallEnd)]
    errors = [e for e in events if isinstance(e, ToolCallError)]
    assert len(errors) == 1 and errors[0].raw == CUT_AFTER_TWO
    assert_tiles(events, CUT_AFTER_TWO)


@pytest.mark.parametrize("strict", [False, True])
def test_no_call_of_a_block_cut_by_the_end_of_the_stream_is_a_success(strict):
    result = parse_output(CUT_AFTER_TWO, strict=strict)
    assert result.calls == []
    assert "".join(e.raw for e in result.errors) == CUT_AFTER_TWO


def test_every_call_of_a_block_ended_by_a_stop_marker_follows_the_recovered_policy():
    complete = "<|tool_call>call:a{x:1}call:b{y:2}<turn|>"
    assert [(c.name, c.recovered) for c in parse_output(complete).calls] == [("a", True), ("b", True)]
    result = parse_output(complete, strict=True)
    assert result.calls == [] and len(result.errors) == 1


def test_the_fuzz_property_sees_every_call_of_a_cut_block():
    from fuzz.corpus import STREAM_DEFAULTS
    from fuzz.properties import check_stream_nothing_invented

    class FirstCallPassesAsSuccess(StreamParser):
        """The bug H1 fixed: the first call of a cut block came out as a success."""
        def flush(self):
            events = super().flush()
            return [ToolCallEnd(e.id, e.index, e.name, e.partial, e.raw, e.diagnostics, True, e.span)
                    if isinstance(e, ToolCallError) and e.index == 0 else e for e in events]

    case = (CUT_AFTER_TWO, [CUT_AFTER_TWO], dict(STREAM_DEFAULTS))
    check_stream_nothing_invented(case)
    with pytest.raises(AssertionError, match="cut by the end"):
        check_stream_nothing_invented(case, FirstCallPassesAsSuccess)


# --- a bare block ends where its object closes (M2) -------------------------------------------------
def test_a_bare_call_ends_at_its_closing_brace_and_the_rest_is_read_again():
    text = "call:note{text:hi}\n<|channel>thought\nsecret<channel|>Sure! 42"
    for size in (1, 3, len(text)):
        events = run(split_every(text, size))
        out = collect(events)
        assert [(c.name, c.arguments, c.raw) for c in out.calls] == [("note", {"text": "hi"}, "call:note{text:hi}")]
        assert out.thinking == ["secret"] and out.text == "\nSure! 42"
        assert_tiles(events, text)
    message = to_openai_message(parse_output(text))
    assert message["content"] == "\nSure! 42" and message["reasoning_content"] == "secret"


def test_braces_inside_strings_do_not_end_a_bare_call_and_bare_calls_may_follow():
    text = "call:a{x:" + D + "}{" + D + "}call:b{y:{z:1}} done"
    out = parse_output(text)
    assert [(c.name, c.arguments) for c in out.calls] == [("a", {"x": "}{"}), ("b", {"y": {"z": 1}})]
    assert out.text == " done"


@pytest.mark.parametrize("text", [
    "call:f{a b c}call:rm{x:1}",
    "call:f{wow, such json}call:rm{x:1}",
    "<|channel>thought\nhm<channel|>call:f{I think so}call:rm{x:1}",
    "call:a{x:1}call:f{a b c}call:rm{x:1}",
])
@pytest.mark.parametrize("tools", [None, [{"type": "function", "function": {"name": n, "parameters": {}}}
                                          for n in ("a", "f", "rm")]])
def test_a_failed_bare_guess_is_prose_and_no_bare_call_follows_it(text, tools):
    # found by review: a guess that was prose went back to LINE_START, so a `call:NAME{` right
    # after it (mid-line, no closer) became a call; after prose, as after any prose, it is text
    prose_at = text.index("call:f")
    for size in (1, 2, 7, len(text)):
        events = run(split_every(text, size), tools=tools)
        out = collect(events)
        assert [c.name for c in out.calls] == (["a"] if text.startswith("call:a") else []), (size, out.calls)
        assert out.errors == [] and out.text.endswith(text[prose_at:])
        assert_tiles(events, text)


def test_a_bare_block_opens_only_on_the_grammar_form():
    long = "call:me(maybe) " + "x" * (4 * 2**20 + 10)
    out = parse_output(long)
    assert out.calls == [] and out.errors == [] and out.text == long
    for text in ["call:todo(todos=[1])", "call:f(a){b:1}"]:
        out = parse_output(text)
        assert out.calls == [] and out.errors == [] and out.text == text
    # inside a real block, the Python-style shell is still recovered
    [call] = parse_output("<|tool_call>call:todo(todos=[1])<tool_call|>").calls
    assert (call.name, call.arguments, call.recovered) == ("todo", {"todos": [1]}, True)



# --- the stream decides on an error's code, not its wording (L4) ------------------------------------
def test_too_deep_is_a_code_of_the_syntax_error():
    deep = "<|tool_call>call:f{a:[[[1]]]}<tool_call|>"
    with pytest.raises(gemma4_lark.GemmaSyntaxError) as info:
        gemma4_lark.parse_call(deep, max_depth=2)
    assert info.value.code == "too-deep"
    with pytest.raises(gemma4_lark.GemmaSyntaxError) as info:
        gemma4_lark.parse_call("<|tool_call>call:f{a:1,}<tool_call|>")
    assert info.value.code == "syntax"
    assert parse_output(deep, max_depth=2).calls == []


def test_the_stream_recovers_a_syntax_error_whatever_its_wording(monkeypatch):
    def rejects(raw, **options):
        raise gemma4_lark.GemmaSyntaxError("nesting deeper than anything, in words only", source=raw, pos=0)

    monkeypatch.setattr(gemma4_lark.blocks, "parse_call", rejects)  # (where blocks are decided,
    monkeypatch.setattr(gemma4_lark.fastpath, "parse_call", lambda *a, **k: None)  # the fast path leaving it)
    parser = StreamParser()  # (the stream's decoders: parse_output's express path never reaches them)
    [call] = [e for e in parser.feed("<|tool_call>call:f{a:1}<tool_call|>") + parser.flush() if e.type == "tool_call_end"]
    assert call.recovered and call.arguments == {"a": 1}


BARE_SHAPES = {
    "bare-calls": lambda n: fill("call:a{x:1}", n),                         # each ends at its brace, re-arms
    "bare-nested-braces": lambda n: "call:a{x:" + fill("{", n // 2) + fill("}", n // 2) + "} tail",
    "bare-prose-lt": lambda n: "call:a{x:" + fill("a<b ", n),              # `<` that are no markers
}


_BARE_GUARDS = [Guard(f"{name}, {label}", run, lambda n, shape=shape, chunks=chunks: chunks(shape(n)), 2_000, 200_000)
                for name, shape in sorted(BARE_SHAPES.items())
                for label, chunks in (("whole", lambda t: [t]), ("chunks of 7", lambda t: split_every(t, 7)))]
test_bare_blocks_cost_linear_time, test_each_bare_block_guard_can_fail = guard_tests(_BARE_GUARDS, twins=_BARE_GUARDS[:1])
