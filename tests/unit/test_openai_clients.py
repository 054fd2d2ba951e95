"""The streams the serving layer sends, read by the clients that read them: the OpenAI SDK's own
`ChatCompletionStreamState(input_tools=[pydantic_function_tool(...)])` (what
`client.chat.completions.stream(..., tools=...)` runs: it validates every call's arguments with
the tool's pydantic model, and raises on arguments that do not parse), and a client that
`json.loads` every arguments string (LangChain, most agent SDKs).

For the outputs that used to trap them (a call that fails after its header, a block the lenient
decoder reads otherwise than its streamed prefix, a repeated key, a lossy recovery), at every
chunking: by default (whole calls) nothing a client parses raises, every call of the message
arrives, runnable, and nothing else does, and `finish_reason` is the same streamed and not."""

import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.integrations.base import ToolCallDeltas
from gemma4_incremental.openai import OpenAIStream, to_openai_message

from stream_helpers import counter_ids, split_every

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")
from openai import pydantic_function_tool  # noqa: E402
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402

D = '<|"|>'


class Weather(pydantic.BaseModel):
    city: str
    days: int | None = None


class Python(pydantic.BaseModel):
    code: str
    data_refs: list[str]
    return_vars: list[str]


class Write(pydantic.BaseModel):
    path: str
    text: str


class Setter(pydantic.BaseModel):
    broken: str | None = None


INPUT_TOOLS = [pydantic_function_tool(Weather, name="get_weather"), pydantic_function_tool(Python, name="execute_python"),
               pydantic_function_tool(Write, name="write"), pydantic_function_tool(Setter, name="set")]


def call(name, body):
    return f"<|tool_call>call:{name}{{{body}}}<tool_call|>"


# The families, each a piece of model output.
GOOD = call("get_weather", f"city:{D}Paris{D},days:3")
REPEATED = call("get_weather", f"city:{D}Paris{D},city:{D}Rome{D}")
REPEATED_NESTED = call("execute_python", f"code:{D}x{D},data_refs:[{D}a{D}],code:{D}y{D},return_vars:[],data_refs:[]")
# vllm#48678: `<|"|>` inside the code, for Python's triple quotes: the lenient decoder reads it as
# a quote, so the streamed prefix (the string closed at the first delimiter) is not the call's
LENIENT = (f"<|tool_call>call:execute_python{{code:{D}result = duckdb.sql({D}{D}{D} SELECT ... {D}{D}{D}).df(){D},"
           f"data_refs:[{D}df_1{D}],return_vars:[{D}result{D}]}}<tool_call|>")
CUT_AT_TURN = f"<|tool_call>call:write{{path:{D}/tmp/a{D},text:{D}half of it<turn|>"
BROKEN = call("set", "broken")                       # lossy: `broken` has no value
COMMA_WORD = call("get_weather", "city:Tokyo, JP,days:3")   # the words are kept: "Tokyo, JP"
SYNTAX = "<|tool_call>calldone{x:1}<tool_call|>"
CUT_AT_END = f"<|tool_call>call:write{{path:{D}/tmp/a{D},text:{D}half of it"
FAMILIES = [GOOD, REPEATED, REPEATED_NESTED, LENIENT, CUT_AT_TURN, BROKEN, COMMA_WORD, SYNTAX]


def sdk_read(chunks):
    """(calls as the SDK parsed them: name and the pydantic model's dump, content, finish_reason);
    raises whatever the SDK raises."""
    state = ChatCompletionStreamState(input_tools=INPUT_TOOLS)
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    completion = state.get_final_completion()
    choice = completion.choices[0]
    calls = [(c.function.name, c.function.parsed_arguments.model_dump()) for c in choice.message.tool_calls or ()]
    # a client that json.loads every arguments string
    loaded = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or ()]
    return calls, loaded, choice.message.content, choice.finish_reason


def message_calls(text):
    message = to_openai_message(parse_output(text, id_factory=counter_ids()))
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls", ())]
    return calls, message["content"], "tool_calls" if calls else "stop"


def with_defaults(name, arguments):
    """The call as its pydantic model dumps it (the optional fields filled in)."""
    model = {"get_weather": Weather, "execute_python": Python, "write": Write, "set": Setter}[name]
    return model.model_validate(arguments).model_dump()


def openai_stream_chunks(pieces, **options):
    stream = OpenAIStream(StreamParser(id_factory=counter_ids()), completion_id="chatcmpl-1", created=1, **options)
    chunks = [c for piece in pieces for c in stream.feed(piece)]
    return chunks + stream.flush()


def adapter_chunks(pieces, **options):
    """What an adapter's server sends: one chunk per server call, from `ToolCallDeltas`."""
    deltas = ToolCallDeltas(StreamParser(id_factory=counter_ids()), **options)
    out = [deltas.feed(piece) for piece in pieces] + [deltas.finish()]
    chunks = [{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gemma-4",
               "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    sent_call = False
    for delta in out:
        body = {}
        if delta.content:
            body["content"] = delta.content
        if delta.tool_calls:
            body["tool_calls"] = delta.tool_calls
            sent_call = True
        if body:
            chunks.append({**chunks[0], "choices": [{"index": 0, "delta": body, "finish_reason": None}]})
    # a server's finish_reason: "tool_calls" when it sent any tool-call delta (vLLM's rule)
    chunks.append({**chunks[0], "choices": [{"index": 0, "delta": {}, "finish_reason":
                                             "tool_calls" if sent_call else "stop"}]})
    return chunks


def assert_clients_read_the_message(text, chunks):
    want_calls, want_content, want_finish = message_calls(text)
    calls, loaded, content, finish = sdk_read(chunks)
    assert loaded == want_calls
    assert calls == [(name, with_defaults(name, arguments)) for name, arguments in want_calls]
    assert (content or None) == want_content
    assert finish == want_finish


@pytest.mark.parametrize("family", FAMILIES + [CUT_AT_END])
@pytest.mark.parametrize("make", [openai_stream_chunks, adapter_chunks])
def test_by_default_no_client_raises_loses_a_call_or_gets_one_the_message_lacks(family, make):
    text = f"Checking. {family} then {GOOD}"
    for size in (1, 3, 7, len(text)):
        assert_clients_read_the_message(text, make(split_every(text, size)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(FAMILIES), min_size=1, max_size=6), st.sampled_from([CUT_AT_END, ""]),
       st.randoms(use_true_random=False), st.sampled_from([openai_stream_chunks, adapter_chunks]))
def test_any_mix_of_the_families_reaches_every_client_whole(parts, tail, rng, make):
    text = " and ".join(parts) + tail
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 12))))
    pieces = [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)])]
    assert_clients_read_the_message(text, make(pieces))


@pytest.mark.parametrize("family", [REPEATED, REPEATED_NESTED, GOOD])
def test_streamed_arguments_keep_a_repeated_key_call_whole_for_every_client(family):
    """A repeated key is no reason to void a streamed call: the JSON states the key again and
    reads, last value wins, as the decoded call (pydantic and json.loads read it so)."""
    text = "Sure. " + family
    for size in (1, 2, 5, len(text)):
        chunks = openai_stream_chunks(split_every(text, size), stream_arguments=True)
        assert not [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "error" in d]
        assert_clients_read_the_message(text, chunks)
        assert_clients_read_the_message(text, adapter_chunks(split_every(text, size), stream_arguments=True))


def test_the_cases_of_the_issue():
    """`call:get_weather{location:Tokyo, JP,days:3}` keeps "Tokyo, JP"; `call:set{broken}` is not
    `set({})` but an error whose text stays content; a repeated key keeps the last value, with a
    `duplicate-key` diagnostic, in parse_output and StreamParser alike."""
    [found] = parse_output("<|tool_call>call:get_weather{location:Tokyo, JP,days:3}<tool_call|>").calls
    assert found.arguments == {"location": "Tokyo, JP", "days": 3}
    parsed = parse_output(BROKEN)
    assert not parsed.calls and parsed.errors[0].code == "lossy" and parsed.errors[0].partial == {}
    assert to_openai_message(parsed)["content"] == BROKEN
    [lossy] = parse_output(BROKEN, lossy_recovery=True).calls
    assert lossy.arguments == {} and lossy.recovered
    for events in (parse_output(REPEATED).events, StreamParser().feed(REPEATED)):
        [end] = [e for e in events if e.type == "tool_call_end"]
        assert end.arguments == {"city": "Rome"} and not end.recovered
        assert [d.code for d in end.diagnostics] == ["duplicate-key"]


def test_a_lossy_recovery_is_an_error_at_every_size():
    """A key without its value, or words after the object, in blocks doubled in size and count:
    never a call by default; with lossy_recovery=True each is one."""
    for n in (1, 2, 4, 8, 16):
        members = ",".join(f"k{i}:{i}" for i in range(n))
        blocks = [call("f", members + ",dropped"), call("f", members + ",gone:"),
                  f"<|tool_call>call:f{{{members}}} more words<tool_call|>"]
        text = " ".join(blocks * n)
        parsed = parse_output(text)
        assert not parsed.calls and {e.code for e in parsed.errors} == {"lossy"}
        assert to_openai_message(parsed)["content"] == text
        assert len(parse_output(text, lossy_recovery=True).calls) == 3 * n
        # closers after the object drop nothing: still a call
        assert len(parse_output(f"<|tool_call>call:f{{{members}}}}}]<tool_call|>").calls) == 1


@settings(max_examples=150, deadline=None)
@given(st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9]{0,6}", fullmatch=True), min_size=2, max_size=6),
       st.integers(0, 3))
def test_a_word_with_commas_is_kept_whole(words, at):
    """An undelimited value with commas: every word the model wrote is in the value (or the
    block is an error that keeps them), never silently dropped."""
    value = ", ".join(words)
    body = f"n:1,v:{value}" if at % 2 else f"v:{value},n:1"
    parsed = parse_output(call("f", body))
    if parsed.calls:
        [found] = parsed.calls
        assert found.arguments == {"n": 1, "v": value} and found.recovered
    else:  # the first word reads as a literal (`true`, `null`): its commas cannot join it
        [error] = parsed.errors
        assert words[0] in ("true", "false", "null", "None", "none") and error.code == "lossy"
        assert value in error.raw


def test_random_chunkings_of_the_issue_streams_agree(rng=random.Random(17)):
    text = "".join(FAMILIES) + CUT_AT_END
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(text)), 15))
        pieces = [text[i:j] for i, j in zip([0] + cuts, cuts + [len(text)])]
        assert_clients_read_the_message(text, openai_stream_chunks(pieces))
