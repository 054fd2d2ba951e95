"""Attacks on OpenAIStream: a string argument past `max_block_chars` keeps memory bounded, the
streaming invariants hold for hostile outputs under every chunking, and a `reasoning_field` that
names one of a delta's own keys is refused. Each test failed before its fix."""

import json
import tracemalloc

import pytest

from gemma4_incremental import StreamParser
from gemma4_incremental.openai import OpenAIStream


def _stream_peak(text: str, size: int, **parser_options) -> tuple[int, list]:
    stream = OpenAIStream(StreamParser(**parser_options), stream_arguments=True)
    fragments = []
    tracemalloc.start()
    try:
        for i in range(0, len(text), size):  # chunks dropped as a server would send them
            for chunk in stream.feed(text[i:i + size]):
                for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                    fragments.append(delta)
        for chunk in stream.flush():
            for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                fragments.append(delta)
        return tracemalloc.get_traced_memory()[1], fragments
    finally:
        tracemalloc.stop()


def test_a_string_argument_past_max_block_chars_keeps_memory_bounded_and_stops_streaming():
    # The parser keeps at most max_block_chars of a block; the fast path for string content held
    # everything it skipped the parser with (and streamed it), so memory grew with the block.
    make = lambda n: '<|tool_call>call:write{text:<|"|>' + "x" * n + '<|"|>}<tool_call|>'  # noqa: E731
    _stream_peak(make(10), 4, max_block_chars=1000)  # tables built on first use
    small, large = make(50_000), make(200_000)
    peak_small, fragments_small = _stream_peak(small, 4, max_block_chars=1000)
    peak_large, fragments_large = _stream_peak(large, 4, max_block_chars=1000)
    assert (peak_large - peak_small) / (len(large) - len(small)) < 0.5
    for fragments in (fragments_small, fragments_large):
        sent = "".join(d["function"]["arguments"] for d in fragments)
        assert len(sent) <= 1000 and "error" in fragments[-1]  # void: the block failed
        try:
            json.loads(sent)
        except ValueError:
            pass
        else:
            raise AssertionError("complete JSON for a failed call")


# --- the streaming invariants over hostile outputs, with and without declared tools -----------------
import random  # noqa: E402

from hypothesis import HealthCheck, example, given, settings, strategies as st  # noqa: E402

from gemma4_incremental import parse_output  # noqa: E402
from gemma4_incremental.openai import to_openai_message  # noqa: E402
from gemma4_lark import strategies, tokens  # noqa: E402
from fuzz import strategies as hostile  # noqa: E402

from stream_helpers import counter_ids  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
    "location": {"type": "string"}, "days": {"type": "integer"}}}}},
    {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"},
                                                                  "b": {"type": "array", "items": {"type": "integer"}}}}}]
OPTIONS = [{}, {"tools": TOOLS}, {"tools": TOOLS, "tool_choice": "required"}, {"tools": TOOLS, "tool_choice": "none"},
           {"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "f"}}},
           {"start_in_thinking": True}, {"max_block_chars": 40}, {"max_block_chars": 60, "tools": TOOLS}, {"max_depth": 3}]
_NAMED_CALLS = st.tuples(st.sampled_from(["get_weather", "f", "undeclared"]), st.dictionaries(
    st.sampled_from(["location", "days", "a", "b", "zz"]), strategies.values(), max_size=4)).map(lambda c: strategies.canonical_call(*c))
_ODD_BLOCKS = st.sampled_from([
    '<|tool_call>call:get_weather{location:Paris,days:3}<tool_call|>', '<|tool_call>call:f{b:[1,2,x],a:1}<tool_call|>',
    '<|tool_call>call:f{a:Tokyo<|"|>}<tool_call|>', '<|tool_call>call:f{a:1.}<tool_call|>',
    '<|tool_call>call:f{a:<|"|>cut', '<|tool_call>call:f{a:1,a:2}<tool_call|>', "<turn|>", '<|"|>', "<channel|>"])
OUTPUTS = st.lists(st.one_of(_NAMED_CALLS, _ODD_BLOCKS, hostile.splice(), strategies.canonical_streams()),
                   min_size=1, max_size=5).map("".join)


def _chunkings(text, rnd):
    yield [text[i:i + 1] for i in range(len(text))]
    yield [text[i:i + 4] for i in range(0, len(text), 4)]
    cuts = sorted({rnd.randrange(len(text) + 1) for _ in range(rnd.randrange(1, 12))})
    yield [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]
    marks = sorted(set(tokens.CONTROL_TOKENS), key=len, reverse=True)  # token-like: markers whole
    pieces, i = [], 0
    while i < len(text):
        mark = next((m for m in marks if text.startswith(m, i)), None)
        step = len(mark) if mark else rnd.randrange(1, 5)
        pieces.append(text[i:i + step])
        i += step
    yield pieces


def _is_json(text):
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _check_invariants(text, pieces, stream_arguments, options):
    stream = OpenAIStream(StreamParser(id_factory=counter_ids(), **options), stream_arguments=stream_arguments)
    calls, finish, content = {}, None, ""
    for piece in pieces + [None]:
        for chunk in stream.feed(piece) if piece is not None else stream.flush():
            choice = chunk["choices"][0]
            assert finish is None
            finish = choice["finish_reason"]
            content += choice["delta"].get("content") or ""
            for delta in choice["delta"].get("tool_calls", ()):
                if delta["index"] not in calls:
                    assert delta["index"] == len(calls) and delta["function"]["name"]  # no gap; a header first
                    calls[delta["index"]] = {"sent": "", "void": False, "history": []}
                call = calls[delta["index"]]
                assert not call["void"]  # nothing after the delta that voids it
                call["sent"] += delta["function"]["arguments"]
                call["void"] = "error" in delta
        for call in calls.values():
            call["history"].append(call["sent"])
    parsed = parse_output(text, id_factory=counter_ids(), **options)
    want = to_openai_message(parsed)
    repeated = [any(d.code == "duplicate-key" for d in c.diagnostics) for c in parsed.calls]
    live = [c for c in calls.values() if not c["void"]]
    # (a repeated key is streamed as written: the JSON states it twice and reads, last value
    # wins, as the decoded call; otherwise the text is the decoded call's exactly)
    assert [json.dumps(json.loads(c["sent"]), ensure_ascii=False) for c in live] == [
        c["function"]["arguments"] for c in want.get("tool_calls", ())]
    for call, wanted, twice in zip(live, want.get("tool_calls", ()), repeated):
        final = call["sent"]
        assert final == wanted["function"]["arguments"] or stream_arguments and twice
        assert all(final.startswith(sent) and (sent == final or not _is_json(sent)) for sent in call["history"])
    assert not any(_is_json(sent) for c in calls.values() if c["void"] for sent in c["history"])
    assert finish == ("tool_calls" if live else "stop")
    assert content == (want["content"] or "")


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@example('Hi<|tool_call>call:f{a:1,a:2}<tool_call|><|tool_call>call:g{x:<|"|>cut', {}, True, random.Random(0))
@example('<|tool_call>call:f{a:Tokyo<|"|>}<tool_call|><|tool_call>call:f{a:1.}<tool_call|>', {"tools": TOOLS}, True,
         random.Random(1))
@example('<|tool_call>call:f{a:<|"|>' + "x" * 100 + '<|"|>}<tool_call|>', {"max_block_chars": 60}, True, random.Random(2))
@given(st.one_of(OUTPUTS, OUTPUTS.flatmap(lambda t: hostile.attacked(t, 3)), hostile.hostile_streams()),
       st.sampled_from(OPTIONS), st.booleans(), st.randoms(use_true_random=False))
def test_streaming_invariants_hold_for_hostile_outputs_under_every_chunking(text, options, stream_arguments, rnd):
    """Each call's fragments concatenate to its final JSON and are a prefix of it at every step,
    never complete JSON early or for a call that failed; indexes without gaps; finish_reason
    "tool_calls" only when a call went out complete; content as in the whole-output message."""
    if len(text) > 20_000:
        return
    for pieces in _chunkings(text, rnd):
        _check_invariants(text, pieces, stream_arguments, options)


@pytest.mark.parametrize("field, error", [
    ("role", ValueError), ("content", ValueError), ("tool_calls", ValueError), ("tool_call_errors", ValueError),
    ("", ValueError), (None, TypeError), (3, TypeError)])
def test_a_reasoning_field_that_is_a_deltas_own_key_is_refused(field, error):
    # Thoughts were written under it: `role: "<thought>"`, `tool_calls: "<thought>"` (which breaks
    # every client), or merged into `content`.
    with pytest.raises(error, match="reasoning_field"):
        OpenAIStream(StreamParser(), reasoning_field=field)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "thinking"])
def test_reasoning_fields_of_their_own_carry_the_thought(field):
    stream = OpenAIStream(StreamParser(), reasoning_field=field)
    deltas = [c["choices"][0]["delta"] for c in stream.feed("<|channel>thought\nhm<channel|>ok") + stream.flush()]
    assert "".join(d.get(field, "") for d in deltas) == "hm" and deltas[0]["role"] == "assistant"
