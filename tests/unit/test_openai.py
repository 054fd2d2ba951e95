"""gemma4_incremental.openai: the assistant message of an output and the chunks of a stream, checked
by accumulating the chunks with the official OpenAI SDK's own stream state."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_incremental import StreamParser, parse_output
from gemma4_incremental.arguments import MAX_TOKEN_CHARS
from gemma4_incremental.openai import OpenAIStream, to_openai_message
from gemma4_lark import strategies
from gemma4_lark.render.official import render_chat

from stream_helpers import counter_ids
from conftest import numbers_by_value

openai = pytest.importorskip("openai")
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402
from timing import Guard, guard_tests
from conftest import REPO

STREAMS = sorted((REPO / "tests" / "conformance" / "streams").glob("*.json"))
OMP_CASES = REPO.parent / "shared" / "data" / "omp-stream-cases.jsonl"
MODES = [{"stream_arguments": False}, {"stream_arguments": True}]
CALL = '<|tool_call>call:get_weather{location:<|"|>Paris<|"|>,days:3}<tool_call|>'


def stream_chunks(pieces, stream_options=None, **parser_options):
    stream = OpenAIStream(StreamParser(id_factory=counter_ids(), **parser_options), completion_id="chatcmpl-1",
                          created=1, **(stream_options or {}))
    chunks = []
    for piece in pieces:
        chunks.extend(stream.feed(piece))
    chunks.extend(stream.flush())
    return chunks


def accumulate(chunks):
    """The message the OpenAI SDK accumulates from the chunks, each validated as a ChatCompletionChunk;
    the keys the SDK adds on its own (`refusal`, `parsed_arguments`...) left out, and each call's
    stream `index` checked (0, 1, 2...) and removed, as a non-streamed message has none."""
    state = ChatCompletionStreamState()
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    snapshot = state.current_completion_snapshot
    message = snapshot.choices[0].message.to_dict()
    out = {"role": message["role"], "content": message.get("content")}
    out.update((key, message[key]) for key in ("reasoning_content", "tool_calls", "tool_call_errors")
               if message.get(key) is not None)
    if "tool_calls" in out:
        assert [c.pop("index") for c in out["tool_calls"]] == list(range(len(out["tool_calls"])))
        for call in out["tool_calls"]:
            call["function"].pop("parsed_arguments", None)
            if "error" not in call:  # read as every JSON reader does (a repeated key: the last value wins)
                arguments = call["function"]["arguments"]
                call["function"]["arguments"] = json.dumps(json.loads(arguments), ensure_ascii=False)
        # a void entry (stream_arguments: its block failed after its header went out) is never
        # complete JSON, so no client can run it; it is not part of the message
        for call in out["tool_calls"]:
            if "error" in call:
                with pytest.raises(ValueError):
                    json.loads(call["function"]["arguments"])
        out["tool_calls"] = [c for c in out["tool_calls"] if "error" not in c]
        if not out["tool_calls"]:
            del out["tool_calls"]
    return out, snapshot.choices[0].finish_reason


def expected(text, **parser_options):
    return to_openai_message(parse_output(text, id_factory=counter_ids(), **parser_options))


def check(text, pieces, stream_options=None, **parser_options):
    chunks = stream_chunks(pieces, stream_options, **parser_options)
    message, finish = accumulate(chunks)
    want = expected(text, **parser_options)
    assert message == want
    assert finish == ("tool_calls" if "tool_calls" in want else "stop")
    return chunks


def sizes(text, n):
    return [text[i:i + n] for i in range(0, len(text), n)]


def call_fragments(chunks):
    """index -> the list of arguments fragments sent for that call."""
    out = {}
    for chunk in chunks:
        for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
            out.setdefault(delta["index"], []).append(delta["function"]["arguments"])
    return out


# --- the message -------------------------------------------------------------------------------------
def test_message_shape_and_parsed_output_to_openai_is_the_same_function():
    # `ParsedOutput.to_openai()` is the deprecated spelling of `to_openai_message` (the task of
    # issue 31: one name for one thing): the same message, with a DeprecationWarning
    text = "<|channel>thought\nplan<channel|>Sure. " + CALL + "<|tool_response>"
    parsed = parse_output(text)
    message = to_openai_message(parsed)
    with pytest.warns(DeprecationWarning, match="to_openai_message"):
        assert message == parsed.to_openai()
    assert message["content"] == "Sure. " and message["reasoning_content"] == "plan"
    [call] = message["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"location": "Paris", "days": 3}
    assert to_openai_message(parse_output("")) == {"role": "assistant", "content": None}


def test_failed_blocks_stay_in_content_and_are_listed_by_position():
    text = "A <|tool_call>calldone{a:1}<tool_call|> B <|tool_call>nope<tool_call|>"
    message = to_openai_message(parse_output(text))
    assert message["content"] == text and "tool_calls" not in message
    assert [e["index"] for e in message["tool_call_errors"]] == [0, 1]


# --- the chunks --------------------------------------------------------------------------------------
@pytest.mark.parametrize("options", MODES)
def test_chunks_are_complete_chat_completion_chunks(options):
    text = "<|channel>thought\nhm<channel|>Hi " + CALL
    chunks = check(text, sizes(text, 3), options)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    for chunk in chunks:
        assert chunk["id"] == "chatcmpl-1" and chunk["object"] == "chat.completion.chunk" and chunk["created"] == 1
        assert chunk["model"] == "gemma-4"
        [choice] = chunk["choices"]
        assert choice["index"] == 0 and choice["logprobs"] is None
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * (len(chunks) - 1) + ["tool_calls"]
    headers = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "id" in d]
    assert headers == [{"index": 0, "id": "call_0", "type": "function",
                        "function": {"name": "get_weather", "arguments": ""}}]
    later = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "id" not in d]
    assert later and all(set(d) == {"index", "function"} and set(d["function"]) == {"arguments"} for d in later)


def test_reasoning_field_and_empty_output():
    text = "<|channel>thought\na<channel|><|channel>thought\n<channel|>x"
    chunks = stream_chunks([text], {"reasoning_field": "reasoning"})
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning", "") for c in chunks)
    assert reasoning == "a\n" == "\n".join(parse_output(text).thinking)
    [only] = stream_chunks([])
    assert only["choices"][0]["delta"] == {"role": "assistant"} and only["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("options", MODES)
def test_index_has_no_gap_after_a_failed_block(options):
    text = "<|tool_call>calldone{a:1}<tool_call|><|tool_call>call:g{a:1}<tool_call|>"
    chunks = check(text, sizes(text, 1), options)
    assert list(call_fragments(chunks)) == [0]
    text = "<|tool_call>call:f{a:<|\"|>x<|\"|>}<eos>" + "<|tool_call>call:g{a:1}<tool_call|>"
    check(text, sizes(text, 4), options)


def test_whole_mode_sends_nothing_of_a_failed_block_as_a_call():
    for text in ["<|tool_call>call:f{a:<|\"|>cut", "<|tool_call>call:f{a:[1,2}<turn|>",
                 "<|tool_call>call:f{a:1<|tool_call>call:g{}<tool_call|>"]:
        chunks = check(text, sizes(text, 1), {"stream_arguments": False})
        names = [d["function"]["name"] for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ())
                 if "id" in d]
        assert "f" not in names


def test_whole_mode_sends_arguments_in_one_fragment_at_the_end():
    arguments = {"text": "x" * 200, "n": [1, 2.5, None, True]}
    text = strategies.canonical_call("f", arguments)
    chunks = stream_chunks(sizes(text, 1), {"stream_arguments": False})
    assert call_fragments(chunks) == {0: ["", json.dumps(arguments)]}


def test_feed_after_flush_and_bad_input():
    stream = OpenAIStream(StreamParser())
    with pytest.raises(TypeError):
        stream.feed(b"x")
    stream.flush()
    assert stream.flush() == []
    with pytest.raises(RuntimeError):
        stream.feed("x")
    with pytest.raises(TypeError):
        OpenAIStream("not a parser")


# --- every recorded stream, through the SDK, at several chunkings ------------------------------------
@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_conformance_streams_accumulate_to_the_message(path, options):
    case = json.loads(path.read_text(encoding="utf-8"))
    text = case["text"]
    for pieces in ([text], sizes(text, 1), sizes(text, 4)):
        check(text, pieces, options, **case["options"])


def _omp_cases():
    if not OMP_CASES.exists():
        return []
    return [json.loads(line) for line in OMP_CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("options", MODES)
def test_omp_stream_cases_accumulate_to_the_message_and_to_omps_calls(options):
    """Every case at its recorded chunking, 1 and 4 characters; OMP's calls (names, arguments by
    value) for the cases where OMP is right (kind "strict")."""
    cases = _omp_cases()
    if not cases:
        pytest.skip(f"{OMP_CASES} not present")
    strict = 0
    for case in cases:
        text = case["text"]
        parser_options = {"parse_thinking": case.get("parseThinking", True)}
        for pieces in (case["chunks"], sizes(text, 1), sizes(text, 4)):
            check(text, pieces, options, **parser_options)
        if case["kind"] != "strict":  # where OMP and we differ on purpose: docs/omp-compatibility.md
            continue
        strict += 1
        message, _ = accumulate(stream_chunks(case["chunks"], options, **parser_options))
        got = [(c["function"]["name"], numbers_by_value(json.loads(c["function"]["arguments"])))
               for c in message.get("tool_calls", ())]
        omp = [(c["name"], numbers_by_value(c["arguments"])) for c in case["omp"]["calls"]]
        assert got == omp, case["id"]
    assert strict > 200


# --- random outputs, random chunkings ------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(MODES))
def test_random_streams_accumulate_to_the_message(data, options):
    text = data.draw(strategies.canonical_streams() | strategies.canonical_streams().flatmap(strategies.mutated))
    pieces = data.draw(strategies.chunked(text))
    check(text, pieces, options)


# --- for_prompt ----------------------------------------------------------------------------------------
def _agent_messages():
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": {"location": "Paris"}}}]},
        {"role": "tool", "name": "get_weather", "content": "sunny"},
    ]


def test_for_prompt_starts_inside_the_thought_the_template_prefilled():
    prompt = render_chat(_agent_messages(), add_generation_prompt=True, enable_thinking=True)
    output = "Check the result.<channel|>It is sunny."
    events = StreamParser.for_prompt(prompt).feed(output)
    assert "".join(e.text for e in events if e.type == "text") == "It is sunny."
    assert "".join(e.text for e in events if e.type == "thinking_delta") == "Check the result."


def test_for_prompt_without_prefill_starts_in_text():
    for prompt in [render_chat(_agent_messages(), add_generation_prompt=True, enable_thinking=False),
                   render_chat([{"role": "user", "content": "hi"}], add_generation_prompt=True, enable_thinking=True),
                   render_chat([{"role": "user", "content": "hi"}], add_generation_prompt=True, variant="31b")]:
        events = StreamParser.for_prompt(prompt, strict=True).feed("Hello")
        assert [e.type for e in events] == ["text"]


def test_for_prompt_after_a_turn_the_template_closed_after_results():
    """A message with text and calls: the template writes the text after the results and closes the
    turn, then (thinking on) a thought prefill; the model goes on from there."""
    messages = _agent_messages()
    messages[1] = dict(messages[1], content="Let me check.")
    thinking = render_chat(messages, add_generation_prompt=True, enable_thinking=True)
    assert thinking.endswith("Let me check.<turn|>\n<|channel>thought\n")
    events = StreamParser.for_prompt(thinking).feed("Sunny.<channel|>It is sunny.")
    assert "".join(e.text for e in events if e.type == "thinking_delta") == "Sunny."
    assert "".join(e.text for e in events if e.type == "text") == "It is sunny."
    plain = render_chat(messages, add_generation_prompt=True, enable_thinking=False)
    assert plain.endswith("Let me check.<turn|>\n")
    events = StreamParser.for_prompt(plain, strict=True).feed("It is sunny.")
    assert [e.type for e in events] == ["text"]


def test_for_prompt_errors():
    with pytest.raises(ValueError, match="generation prompt"):  # an answered conversation, closed
        StreamParser.for_prompt(render_chat([{"role": "user", "content": "hi"},
                                             {"role": "assistant", "content": "hello"}]))

    with pytest.raises(ValueError, match="generation prompt"):
        StreamParser.for_prompt(render_chat([{"role": "user", "content": "hi"}]))
    with pytest.raises(TypeError):
        StreamParser.for_prompt("<|turn>model\n", start_in_thinking=True)
    with pytest.raises(TypeError):
        StreamParser.for_prompt(None)


# --- stream_arguments: the invariants --------------------------------------------------------------
def sent_after_each_piece(pieces, **parser_options):
    """The arguments of call 0 as the client has them after each piece fed (before flush), then
    after flush."""
    stream = OpenAIStream(StreamParser(id_factory=counter_ids(), **parser_options), stream_arguments=True)
    sent, history = "", []
    for piece in pieces + [None]:
        chunks = stream.feed(piece) if piece is not None else stream.flush()
        for chunk in chunks:
            for delta in chunk["choices"][0]["delta"].get("tool_calls", ()):
                if delta["index"] == 0:
                    sent += delta["function"]["arguments"]
        history.append(sent)
    return history


@settings(max_examples=200, deadline=None)
@given(strategies.calls(), st.data())
def test_streamed_arguments_are_always_a_prefix_of_the_final_json_and_end_equal_to_it(call, data):
    name, arguments = call
    text = strategies.canonical_call(name, arguments)
    pieces = data.draw(strategies.chunked(text))
    history = sent_after_each_piece(pieces)
    final = json.dumps(arguments, ensure_ascii=False)
    assert history[-1] == final and json.loads(final) == arguments
    assert all(final.startswith(sent) for sent in history)
    # the closing brace only ever comes once the block is decoded
    assert all(not sent.endswith("}") or sent == final for sent in history[:-1]) or history[-2] == final


@pytest.mark.parametrize("prefix, sent", [
    ("{", "{"),
    ("{x", "{"),                            # a key may still grow
    ("{x:", '{"x": '),
    ("{x:108.", '{"x": '),                  # `108.` may become 108.02
    ("{x:108.02", '{"x": '),
    ("{x:108.02,", '{"x": 108.02'),         # the comma goes out with the next token
    ("{x:108.02,y", '{"x": 108.02'),
    ("{x:108.02,y:tru", '{"x": 108.02, "y": '),
    ("{x:108.02,y:true}", '{"x": 108.02, "y": true'),  # never the closing brace
    ("{x:<|\"|>ab", '{"x": "ab'),          # an open string's content flows
    ("{x:<|\"|>ab<|\"", '{"x": "ab'),      # ... but not half a delimiter
    ("{x:<|\"|>a\"b\n<|\"|>", '{"x": "a\\"b\\n"'),
    ("{x:[1,-2.5e3,None,b c", '{"x": [1, -2500.0, null'),
    ("{x:[1,-2.5e3,None,b c]", '{"x": [1, -2500.0, null, "b c"]'),
    ("{x:{}", '{"x": {}'),
    ("{a:1,b:2 c:3}", '{"a": 1, "b": '),     # `c` after `2`: nothing from there on
    ("{a:1,}", '{"a": 1'),                    # a trailing comma never goes out
    ("{a:1e999,b:1}", '{"a": '),              # a number beyond a double stops the stream
    ("{a:" + "9" * 5000 + ",b:1}", '{"a": '),  # so does a token longer than MAX_TOKEN_CHARS
])
def test_only_what_the_grammar_accepted_and_no_longer_changes_goes_out(prefix, sent):
    head = "<|tool_call>call:f"
    for pieces in ([head + prefix], [head] + list(prefix), ["x" * 5000 + head + prefix]):
        assert sent_after_each_piece(pieces)[-2] == sent


def test_a_failed_block_never_completes_its_json_and_the_next_call_takes_the_next_index():
    text = "<|tool_call>call:f{a:1}"  # cut off at the end of the stream: an error
    chunks = stream_chunks(sizes(text, 1), {"stream_arguments": True})
    assert "".join(call_fragments(chunks)[0]) == '{"a": 1'
    text = '<|tool_call>call:f{a:<|"|>x<|"|>,b:[1<eos><|tool_call>call:g{}<tool_call|>'
    chunks = check(text, sizes(text, 4), {"stream_arguments": True})
    fragments = call_fragments(chunks)
    assert "".join(fragments[0]) == '{"a": "x", "b": [' and "".join(fragments[1]) == "{}"
    errors = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "error" in d]
    assert [e["index"] for e in errors] == [0]


@pytest.mark.parametrize("text", ["<|tool_call>call:f{a:1,b:2,a:3}<tool_call|>",
                                  '<|tool_call>call:f{<|"|>a<|"|>:1,b:2,<|"|>a<|"|>:3}<tool_call|>'])
def test_a_repeated_key_is_streamed_as_written_and_reads_as_the_decoded_call(text):
    """(The decoded call keeps the last value at the first key's place; the stream states the key
    again, and JSON's last-value-wins reading gives exactly the decoded call: no void entry.)"""
    for size in (1, 3, len(text)):
        chunks = check(text, sizes(text, size), {"stream_arguments": True})
        fragments = call_fragments(chunks)
        assert list(fragments) == [0]
        assert "".join(fragments[0]) == '{"a": 1, "b": 2, "a": 3}'
        assert not [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "error" in d]


def test_a_recovered_call_streams_and_carries_its_marks_at_the_end():
    text = "<|tool_call>call:f{a:1,b:<|\"|>x<|\"|>,}<tool_call|>"
    chunks = check(text, sizes(text, 2), {"stream_arguments": True})
    [last] = [d for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "recovered" in d]
    assert last["function"]["arguments"] == "}" and last["diagnostics"]


def test_long_calls_arrive_in_several_fragments():
    """Every call the grammar accepts (not recovered: a bare block has no head to stream from, and a
    recovered one may be void) with arguments of 64 JSON characters or more comes in pieces."""
    texts = [json.loads(p.read_text(encoding="utf-8"))["text"] for p in STREAMS]
    texts += [case["text"] for case in _omp_cases()]
    texts.append(strategies.canonical_call("write", {"path": "a.txt", "content": "line\n" * 40, "mode": [1, 2.5]}))
    long_calls = 0
    for text in texts:
        clean = {c.id for c in parse_output(text, id_factory=counter_ids()).calls if not c.recovered}
        chunks = stream_chunks(sizes(text, 4), {"stream_arguments": True})
        ids = {d["index"]: d["id"] for c in chunks for d in c["choices"][0]["delta"].get("tool_calls", ()) if "id" in d}
        for index, fragments in call_fragments(chunks).items():
            arguments = "".join(fragments)
            if ids[index] in clean and len(arguments) >= 64:
                long_calls += 1
                assert len([f for f in fragments if f]) >= 3, arguments
    assert long_calls >= (10 if _omp_cases() else 1)


def test_a_long_bare_word_keeps_the_argument_buffer_bounded():
    from gemma4_incremental.arguments import ArgumentStream
    arguments = ArgumentStream()
    arguments.feed("{a:")
    for _ in range(3 * MAX_TOKEN_CHARS // 4):
        arguments.feed("word")
        assert len(arguments._buffer) <= MAX_TOKEN_CHARS
    assert arguments.stopped and arguments.sent == '{"a": '


def test_serving_doc_examples_run():
    text = (REPO / "docs" / "serving.md").read_text(encoding="utf-8").split("\n## An agent loop", 1)[0]
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) >= 2  # each section may add its own
    for block in blocks:
        exec(compile(block, "docs/serving.md", "exec"), {})


def _feed_arguments(pieces):
    from gemma4_incremental.arguments import ArgumentStream

    arguments = ArgumentStream()
    for piece in pieces:
        arguments.feed(piece)


# the argument stream alone, over 1-character pieces (decoding the finished block is the strict
# parser's cost), whatever the shape
_ARGUMENT_SHAPES = {
    "a bare word that keeps growing": lambda n: "{a:" + "x:y " * (n // 4) + "}",
    "'<' in a string": lambda n: "{a:" + D_ + "a<b " * (n // 4) + D_ + "}",
    "many members": lambda n: "{" + ",".join(f"k{i}:[{i},true]" for i in range(n // 12)) + "}",
}
# Compared past MAX_TOKEN_CHARS: a growing bare word is read again with each character until it
# reaches that many, where the stream stops streaming it (the bound on a character's cost). Below
# the bound a growing word costs quadratic time, so two sizes on either side of it read as such
# (500 and 8,000: 55x); past it the bound must hold, and a broken bound reads 256x.
_ARGUMENT_GUARDS = [Guard(f"argument stream, {name}", _feed_arguments, lambda n, shape=shape: list(shape(n)), 4_096,
                          min_size=MAX_TOKEN_CHARS) for name, shape in _ARGUMENT_SHAPES.items()]
test_streaming_arguments_is_linear, test_the_argument_stream_guard_can_fail = guard_tests(
    _ARGUMENT_GUARDS, twins=_ARGUMENT_GUARDS[-1:])


D_ = '<|"|>'


def test_after_thought_joins_the_first_thought_to_one_sent_before():
    def reasoning(**options):
        stream = OpenAIStream(StreamParser(), completion_id="c", created=0, **options)
        chunks = stream.feed("<|channel>thought\nB<channel|>ok<|channel>thought\nC<channel|>") + stream.flush()
        return "".join(c["choices"][0]["delta"].get("reasoning_content", "") for c in chunks if c["choices"])

    assert reasoning() == "B\nC" and reasoning(after_thought=True) == "\nB\nC"
