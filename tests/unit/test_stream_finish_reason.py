"""A call block the stream ends, with every bracket closed, when the caller knows the model stopped
(finish reason "stop", or the EOS token's id in token-id mode): a recovered call, `missing-closer`
(docs/leniency.md#a-stop-the-server-stripped). "length" or an unknown reason: cut off, as ever
(issue 30, section 2)."""

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, collect, parse_output
from gemma4_incremental.output import merge_deltas
from gemma4_incremental.openai import OpenAIStream
from gemma4_lark import tokens

from stream_helpers import assert_tiles, counter_ids, split_every
from fake_tokenizer import FakeTokenizer

D = tokens.STRING_DELIMITER
COMPLETE = f'<|tool_call>call:search{{query:{D}say "hello" and bye{D},n:[1,{{a:2}}]}}'
CUT = [
    f"<|tool_call>call:search{{query:{D}say hello",   # inside a string
    "<|tool_call>call:search{query:1,n:[1,2",         # a list open
    "<|tool_call>call:search{",                        # the object open
    "<|tool_call>call:sea",                            # the head cut
]


def _stream(text, size, finish_reason=None, **options):
    parser = StreamParser(id_factory=counter_ids(), **options)
    events = []
    for chunk in split_every(text, size):
        events += parser.feed(chunk)
    events += parser.flush(finish_reason=finish_reason)
    assert_tiles(events, text)
    return collect(events)


def _calls(parsed):
    return [(c.name, c.arguments, [d.code for d in c.diagnostics]) for c in parsed.calls]


@pytest.mark.parametrize("size", [1, 4, 1 << 20])
def test_a_stop_makes_a_complete_block_a_call(size):
    parsed = _stream("Searching. " + COMPLETE, size, "stop")
    assert _calls(parsed) == [("search", {"query": 'say "hello" and bye', "n": [1, {"a": 2}]}, ["missing-closer"])]
    assert parsed.calls[0].recovered and parsed.errors == [] and parsed.text == "Searching. "
    assert parse_output("Searching. " + COMPLETE, finish_reason="stop", id_factory=counter_ids()).calls == parsed.calls


@pytest.mark.parametrize("reason", [None, "length", "content_filter", "tool_calls", ""])
def test_anything_but_a_stop_stays_cut_off(reason):
    parsed = _stream(COMPLETE, 3, reason)
    assert parsed.calls == [] and [e.code for e in parsed.errors] == ["unclosed"]
    assert parse_output(COMPLETE, finish_reason=reason).errors[0].code == "unclosed"
    for text in CUT:
        assert _stream(text, 3, reason).events == _stream(text, 3).events


@pytest.mark.parametrize("text", CUT)
def test_a_stop_does_not_complete_cut_arguments(text):
    parsed = _stream(text, 2, "stop")
    assert parsed.calls == [] and len(parsed.errors) == 1
    (error,), (unknown,) = parsed.errors, _stream(text, 2).errors
    assert (error.code, error.raw, error.partial, error.span) == (unknown.code, unknown.raw, unknown.partial, unknown.span)


def test_strict_mode_recovers_nothing():
    parsed = _stream(COMPLETE, 5, "stop", strict=True)
    assert parsed.calls == [] and [e.code for e in parsed.errors] == ["unclosed"]


def test_a_stop_changes_nothing_else():
    # a closed block, text, a thought cut off, a bare call: as without a finish reason
    for text in ["Hi.", COMPLETE + "<tool_call|> after", "<|channel>thought\nhmm", "call:f{x:1}",
                 "call:f{x:[1", "<|tool_call>call:f{x:1}<tool_call|><|tool_c"]:
        assert _stream(text, 3, "stop").events == _stream(text, 3).events


def test_the_finish_reason_is_checked():
    with pytest.raises(TypeError):
        StreamParser().flush(finish_reason=1)
    with pytest.raises(TypeError):
        parse_output("x", finish_reason=b"stop")
    with pytest.raises(TypeError):
        OpenAIStream(StreamParser()).flush(finish_reason=["stop"])


def test_a_str_enum_finish_reason_is_its_value():
    # found by review: a server's enum of finish reasons (a str subclass) was refused, while the
    # chunks themselves may be str subclasses (issue 30, section 6)
    import enum

    class Reason(str, enum.Enum):
        STOP = "stop"
        LENGTH = "length"

    stopped = parse_output(COMPLETE, finish_reason=Reason.STOP)
    assert [c.name for c in stopped.calls] == [c.name for c in parse_output(COMPLETE, finish_reason="stop").calls] != []
    assert parse_output(COMPLETE, finish_reason=Reason.LENGTH).calls == []
    parser = StreamParser()
    assert [type(e).__name__ for e in parser.feed(COMPLETE) + parser.flush(Reason.STOP)].count("ToolCallEnd") == 1
    stream = OpenAIStream(StreamParser(id_factory=counter_ids()))
    chunks = stream.feed(COMPLETE) + stream.flush(finish_reason=Reason.STOP)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_the_openai_stream_passes_it_on():
    def final(reason):
        stream = OpenAIStream(StreamParser(id_factory=counter_ids()))
        chunks = stream.feed(COMPLETE) + stream.flush(finish_reason=reason)
        return chunks[-1]["choices"][0]["finish_reason"], [c for ch in chunks for c in
                                                          ch["choices"][0]["delta"].get("tool_calls", [])]
    reason, calls = final("stop")
    assert reason == "tool_calls" and calls and calls[0]["function"]["name"] == "search"
    reason, calls = final("length")
    assert reason == "stop" and not calls


def test_an_eos_id_in_token_id_mode_is_a_stop():
    # the server strips `<eos>` from the text; its id is still in the ids: a stop marker
    tokenizer = FakeTokenizer()
    ids = tokenizer.encode(COMPLETE) + [tokenizer.vocab[tokens.EOS]]
    parser = StreamParser.for_tokenizer(tokenizer, id_factory=counter_ids())
    events = parser.feed(tokenizer.decode(ids, skip_special_tokens=True), token_ids=ids) + parser.flush()
    parsed = collect(events)
    assert _calls(parsed) == [("search", {"query": 'say "hello" and bye', "n": [1, {"a": 2}]}, ["missing-closer"])]
    assert parsed.stop == tokens.EOS


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([COMPLETE, "text ", "\n", "<|tool_call>call:g{y:2}<tool_call|>"] + CUT),
                min_size=1, max_size=4), st.integers(1, 9), st.sampled_from([None, "stop", "length"]))
def test_every_chunking_reads_the_same(parts, size, reason):
    text = "".join(parts)
    whole = merge_deltas(_stream(text, 1 << 20, reason).events)
    assert merge_deltas(_stream(text, size, reason).events) == whole
    if reason != "stop":
        assert whole == merge_deltas(_stream(text, 1 << 20).events)
