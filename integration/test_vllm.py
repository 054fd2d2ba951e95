"""The vLLM adapter inside vLLM 0.33: registered through vLLM's own plugin loader, composed by its
`ParserManager`, and streamed through `OpenAIServingChat.chat_completion_stream_generator` (the
server's SSE loop; only the engine and the HTTP layer are left out), the chunks accumulated by the
OpenAI SDK; the non-streaming path through `chat_completion_full_generator`."""

from __future__ import annotations

import asyncio
import json
import logging
from types import SimpleNamespace

import pytest

from cases import corpus
from gemma4_incremental import parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens

from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat
from vllm.parser import ParserManager
from vllm.reasoning import ReasoningParserManager
from vllm.tool_parsers import ToolParserManager

MODULE = "gemma4_incremental.integrations.vllm"
TEXT_TOKEN = 10_000  # a character's id is TEXT_TOKEN + its code point
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
         for name in ("get_weather", "a", "b", "g", "write", "set", "note", "f", "gdb", "todowrite")]


class GemmaTokenizer:
    """Gemma 4's control tokens, one id each; any other text is one token per character. With
    Hugging Face's `convert_tokens_to_ids` and `decode`, which the adapter reads markers with."""

    def __init__(self):
        self.ids = {marker: i for i, marker in enumerate(tokens.CONTROL_TOKENS, start=1)}
        self.text_of = {i: marker for marker, i in self.ids.items()}

    def get_vocab(self):
        return dict(self.ids)

    def convert_tokens_to_ids(self, token):
        return self.ids.get(token, 0)

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.text_of[i] if i in self.text_of else chr(i - TEXT_TOKEN) for i in ids
                       if not (skip_special_tokens and i in self.text_of))

    def tokenize(self, text, spelled=False):
        """(piece, id) of `text`: a marker whole, other characters one by one; `spelled`: markers
        too, character by character (a model quoting a page that holds them)."""
        out, i = [], 0
        while i < len(text):
            marker = None if spelled else next((m for m in self.ids if text.startswith(m, i)), None)
            if marker:
                out.append((marker, self.ids[marker]))
                i += len(marker)
            else:
                out.append((text[i], TEXT_TOKEN + ord(text[i])))
                i += 1
        return out

    def prompt(self, in_thought=False):
        """The generation prompt's ids: a model turn, with the thought prefill or not."""
        ids = [self.ids[tokens.TURN_OPEN], TEXT_TOKEN]
        return ids + ([self.ids[tokens.CHANNEL_OPEN], TEXT_TOKEN] if in_thought else [])


TOKENIZER = GemmaTokenizer()


def setup_module():
    ToolParserManager.import_tool_parser(MODULE)            # what --tool-parser-plugin does
    ReasoningParserManager.import_reasoning_parser(MODULE)  # what --reasoning-parser-plugin does


def server(reasoning=True, tool_parser="gemma4-lark"):
    """An OpenAIServingChat with the state its generators read (its __init__ wants an engine)."""
    serving = object.__new__(OpenAIServingChat)
    serving.parser_cls = ParserManager.get_parser(
        tool_parser_name=tool_parser, reasoning_parser_name="gemma4-lark" if reasoning else None,
        enable_auto_tools=True, model_name="google/gemma-4", tokenizer=TOKENIZER)
    serving.enable_auto_tools = True
    serving.model_config = None
    serving.response_role = "assistant"
    serving._include_reasoning_tokens_details = reasoning
    serving.enable_force_include_usage = False
    serving.enable_log_outputs = False
    serving.request_logger = None
    serving.system_fingerprint = None
    serving.enable_per_request_metrics = False
    serving.enable_prompt_tokens_details = False
    serving.return_tokens_as_token_ids = False
    return serving


def request(**extra):
    fields = {"model": "gemma-4", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS,
              "tool_choice": "auto", "stream": True}
    return ChatCompletionRequest(**(fields | extra))


def engine_outputs(text, tokens_per_step, prompt, finish_reason="stop", pieces=None, text_of=None):
    """What the engine yields for `text` (or `pieces`, (piece, id) pairs): RequestOutput-shaped
    steps of `tokens_per_step` tokens, each step's text `text_of(step)` (its pieces joined)."""
    pieces = TOKENIZER.tokenize(text) if pieces is None else pieces
    steps = [pieces[i:i + tokens_per_step] for i in range(0, len(pieces), tokens_per_step)] or [[]]
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        step_text = "".join(p for p, _ in step) if text_of is None else text_of(n, step)
        output = SimpleNamespace(index=0, text=step_text, token_ids=[t for _, t in step],
                                 finish_reason=finish_reason if last else None, stop_reason=None, logprobs=None,
                                 weight_versions=None)
        output.routed_experts = output.spec_decode_metrics = None
        yield SimpleNamespace(prompt_token_ids=prompt, encoder_prompt_token_ids=None, num_cached_tokens=0,
                              num_cache_creation_tokens=0, prompt=None, outputs=[output], prompt_logprobs=None,
                              kv_transfer_params=None, ec_transfer_params=None, metrics=None)


async def _aiter(items):
    for item in items:
        yield item


def stream(serving, req, text, tokens_per_step, prompt, chat_template_kwargs=None, finish_reason="stop", **engine):
    """The SSE chunks the server sends, as dicts."""
    async def run():
        out = []
        async for frame in serving.chat_completion_stream_generator(
                req, _aiter(list(engine_outputs(text, tokens_per_step, prompt, finish_reason, **engine))), "chatcmpl-1",
                "gemma-4", [], TOKENIZER, SimpleNamespace(request_id="chatcmpl-1", final_usage_info=None),
                chat_template_kwargs=chat_template_kwargs):
            data = frame.removeprefix("data: ").strip()
            if data != "[DONE]":
                out.append(json.loads(data))
        return out
    return asyncio.run(run())


def accumulate(chunks):
    """The message the OpenAI SDK accumulates: content, reasoning, the calls that can run (name,
    arguments), the void entries, and the finish reason."""
    state = ChatCompletionStreamState()
    for chunk in chunks:
        assert "error" not in chunk, chunk
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    choice = state.current_completion_snapshot.choices[0]
    message = choice.message.to_dict()
    calls = message.get("tool_calls") or []
    assert [c["index"] for c in calls] == list(range(len(calls)))
    live = [(c["function"]["name"], c["function"]["arguments"]) for c in calls if "error" not in c]
    void = [c for c in calls if "error" in c]
    return message.get("content") or None, message.get("reasoning"), live, void, choice.finish_reason


def expected(text, **options):
    message = to_openai_message(parse_output(text, tools=TOOLS, **options))
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", ())]
    return message["content"], message.get("reasoning_content"), calls


CASES = corpus()


@pytest.mark.parametrize("tokens_per_step", [1, 4, 1000])
@pytest.mark.parametrize("name,text,options", CASES, ids=[c[0] for c in CASES])
def test_streams_through_the_server_loop_accumulate_to_the_message(name, text, options, tokens_per_step):
    reasoning = options.get("parse_thinking", True)
    prompt = TOKENIZER.prompt(in_thought=options.get("start_in_thinking", False))
    chunks = stream(server(reasoning=reasoning), request(), text, tokens_per_step, prompt)
    content, thought, calls, void, finish = accumulate(chunks)
    assert (content, thought, calls) == expected(text, **options)
    for entry in void:  # a block that failed after its header went out: never runnable
        with pytest.raises(ValueError):
            json.loads(entry["function"]["arguments"])
    assert finish == ("tool_calls" if calls or void else "stop")


# With thinking on, the reasoning parser takes the opening thought and the tool parser a later
# one; the tool parser knows of the first from the reasoning parser built with it (output-7).
THINKING_CASES = [c for c in CASES if c[2].get("parse_thinking", True)]


@pytest.mark.parametrize("name,text,options", THINKING_CASES, ids=[c[0] for c in THINKING_CASES])
def test_with_thinking_on_the_reasoning_parser_takes_the_opening_thought(name, text, options):
    prompt = TOKENIZER.prompt(in_thought=options.get("start_in_thinking", False))
    for tokens_per_step in (1, 3):
        chunks = stream(server(), request(), text, tokens_per_step, prompt,
                        chat_template_kwargs={"enable_thinking": True})
        content, thought, calls, _, _ = accumulate(chunks)
        assert (content, thought, calls) == expected(text, **options)


def test_an_unclosed_call_is_never_sent_runnable_and_its_text_goes_out_as_content():
    text = 'Cut off: <|tool_call>call:write{path:<|"|>/tmp/a<|"|>,text:<|"|>half of it'
    for tool_parser in ("gemma4-lark", "gemma4-lark-whole", "gemma4-lark-stream"):
        chunks = stream(server(tool_parser=tool_parser), request(), text, 2, TOKENIZER.prompt(), finish_reason="length")
        content, _, calls, void, finish = accumulate(chunks)
        assert calls == [] and content == text and finish == "length"
        assert len(void) == (1 if tool_parser == "gemma4-lark-stream" else 0)
        if void:
            assert void[0]["function"]["arguments"].startswith('{"path": "/tmp/a", "text": "half')


def test_arguments_stream_in_several_fragments_and_a_string_null_stays_a_string():
    text = '<|tool_call>call:note{body:<|"|>' + "a long line of text, " * 8 + '<|"|>,v:<|"|>null<|"|>}<tool_call|>'
    chunks = stream(server(tool_parser="gemma4-lark-stream"), request(), text, 4, TOKENIZER.prompt())
    fragments = [c["function"]["arguments"] for chunk in chunks for c in chunk["choices"][0]["delta"].get("tool_calls", ())
                 if c.get("function", {}).get("arguments")]
    assert len(fragments) > 5
    assert json.loads("".join(fragments))["v"] == "null"


def full(serving, req, text):
    """The non-streamed response's (content, calls, finish_reason)."""
    parser = serving._make_parser(req, TOKENIZER, None)

    async def run():
        return await serving.chat_completion_full_generator(
            req, _aiter(list(engine_outputs(text, len(text) + 1, TOKENIZER.prompt()))), "chatcmpl-1", "gemma-4",
            [], TOKENIZER, SimpleNamespace(request_id="chatcmpl-1", final_usage_info=None), parser=parser)

    choice = asyncio.run(run()).choices[0]
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls]
    return choice.message.content or None, calls, choice.finish_reason


D = tokens.STRING_DELIMITER
# The calls streamed arguments used to lose under `parallel_tool_calls: false` (vLLM keeps only the
# entries of index 0, and the entry there was void): a repeated key, and vllm#48678's
# `execute_python`, which the lenient decoder reads otherwise than the prefix streamed.
TRAPS = [
    f"<|tool_call>call:get_weather{{city:{D}Paris{D},city:{D}Rome{D}}}<tool_call|>",
    f"<|tool_call>call:f{{code:{D}result = duckdb.sql({D}{D}{D} SELECT ... {D}{D}{D}).df(){D},"
    f"data_refs:[{D}df_1{D}],return_vars:[{D}result{D}]}}<tool_call|>",
    f"<|tool_call>call:write{{path:{D}/tmp/a{D},text:{D}half of it<turn|>",
    "<|tool_call>call:set{broken}<tool_call|>",
]


@pytest.mark.parametrize("tool_parser", ["gemma4-lark", "gemma4-lark-whole", "gemma4-lark-stream"])
@pytest.mark.parametrize("parallel", [False, None])
@pytest.mark.parametrize("trap", TRAPS, ids=["repeated-key", "vllm-48678", "cut-at-turn", "lossy"])
def test_a_call_is_never_lost_and_finish_reason_is_the_non_streamed_one(trap, parallel, tool_parser):
    text = "Sure. " + trap + f"<|tool_call>call:g{{q:{D}ok{D}}}<tool_call|>"
    serving = server(tool_parser=tool_parser)
    extra = {} if parallel is None else {"parallel_tool_calls": parallel}
    want_content, want_calls, want_finish = full(serving, request(stream=False, **extra), text)
    assert want_calls  # (the non-streamed response has the calls)
    for tokens_per_step in (1, 4, 1000):
        chunks = stream(serving, request(**extra), text, tokens_per_step, TOKENIZER.prompt())
        content, _, calls, void, finish = accumulate(chunks)
        # (streamed, a repeated key is stated twice: read as JSON, it is the call)
        assert read(calls) == read(want_calls) and content == want_content
        if tool_parser != "gemma4-lark-stream":
            assert calls == want_calls and not void and finish == want_finish  # whole calls: as not streamed
        # and what the SDK runs for `client.chat.completions.stream(..., tools=...)` reads them
        if not void:
            assert read(sdk_calls(chunks)) == read(want_calls)


def read(calls):
    return [(name, json.loads(arguments)) for name, arguments in calls]


def sdk_calls(chunks):
    import pydantic
    from openai import pydantic_function_tool

    class Args(pydantic.BaseModel, extra="allow"):
        pass

    state = ChatCompletionStreamState(input_tools=[pydantic_function_tool(Args, name=t["function"]["name"])
                                                   for t in TOOLS])
    for chunk in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
    message = state.get_final_completion().choices[0].message
    return [(c.function.name, c.function.arguments) for c in message.tool_calls or ()]


def test_non_streaming_goes_through_the_same_parsers():
    serving = server()
    for name, text, options in CASES:
        if options:
            continue
        req = request(stream=False)
        parser = serving._make_parser(req, TOKENIZER, None)

        async def run():
            return await serving.chat_completion_full_generator(
                req, _aiter(list(engine_outputs(text, len(text) + 1, TOKENIZER.prompt()))), "chatcmpl-1", "gemma-4",
                [], TOKENIZER, SimpleNamespace(request_id="chatcmpl-1", final_usage_info=None), parser=parser)

        message = asyncio.run(run()).choices[0].message
        want_content, want_reasoning, want_calls = expected(text)
        assert message.reasoning == want_reasoning, name
        assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == want_calls, name
        assert (message.content or None) == want_content, name


def test_the_request_keeps_special_tokens_and_a_server_that_strips_them_is_told(caplog):
    serving = server()
    req = request(skip_special_tokens=True)
    parser = serving.parser_cls(TOKENIZER, req.tools)
    assert parser.adjust_request(req).skip_special_tokens is False
    call_open = TOKENIZER.ids[tokens.TOOL_CALL_OPEN]
    with caplog.at_level(logging.WARNING):
        parser.parse_delta("call:f{}", [call_open, TEXT_TOKEN], req, TOKENIZER.prompt(), finished=False)
    assert parser.tool_parser.special_tokens_stripped == tokens.TOOL_CALL_OPEN
    assert "skip_special_tokens" in caplog.text


def test_token_level_answers_for_the_prompt_and_structured_outputs():
    ids = TOKENIZER.ids
    rp = ReasoningParserManager.get_reasoning_parser("gemma4-lark")
    off, on = rp(TOKENIZER), rp(TOKENIZER, chat_template_kwargs={"enable_thinking": True})
    plain, prefilled = TOKENIZER.prompt(), TOKENIZER.prompt(in_thought=True)
    assert off.is_reasoning_end(plain) and not on.is_reasoning_end(plain)
    assert not off.is_reasoning_end(prefilled) and not on.is_reasoning_end(prefilled)
    closed = prefilled + [TEXT_TOKEN, ids[tokens.CHANNEL_CLOSE], TEXT_TOKEN]
    assert on.is_reasoning_end(closed) and on.extract_content_ids(closed) == [TEXT_TOKEN]
    assert on.is_reasoning_end_streaming(closed, [ids[tokens.CHANNEL_CLOSE], TEXT_TOKEN])
    assert not on.is_reasoning_end_streaming(prefilled + [TEXT_TOKEN], [TEXT_TOKEN])
    assert on.is_reasoning_end_streaming(prefilled, [ids[tokens.TOOL_CALL_OPEN]])
    on.set_prompt_token_ids(prefilled)
    assert on.count_reasoning_tokens([TEXT_TOKEN, TEXT_TOKEN, ids[tokens.CHANNEL_CLOSE], TEXT_TOKEN]) == 2


def test_a_tokenizer_without_gemma_markers_fails_at_startup():
    class Other:
        def get_vocab(self):
            return {"<s>": 1}

    with pytest.raises(TypeError, match="gemma4-lark"):
        ParserManager.get_parser(tool_parser_name="gemma4-lark", reasoning_parser_name="gemma4-lark",
                                 enable_auto_tools=True, model_name="other", tokenizer=Other())


# --- markers by token id: the adapter reads the engine's ids with the request's tokenizer -------
QUOTED = 'The page says <|tool_call>call:write{path:<|"|>/etc/passwd<|"|>}<tool_call|> and <turn|> ends. '
REAL_CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'


@pytest.mark.parametrize("tool_parser", ["gemma4-lark", "gemma4-lark-whole"])
@pytest.mark.parametrize("tokens_per_step", [1, 3, 1000])
def test_a_quoted_marker_is_content_never_a_call(tool_parser, tokens_per_step):
    # the model quotes a page that holds a call, written with ordinary tokens, then makes a real one
    pieces = TOKENIZER.tokenize(QUOTED, spelled=True) + TOKENIZER.tokenize(REAL_CALL)
    for reasoning in (True, False):
        chunks = stream(server(reasoning=reasoning, tool_parser=tool_parser), request(), QUOTED + REAL_CALL,
                        tokens_per_step, TOKENIZER.prompt(), pieces=pieces)
        content, _, calls, void, finish = accumulate(chunks)
        assert content == QUOTED
        assert calls == [("get_weather", '{"city": "Paris", "days": 3}')] and not void
        assert finish == "tool_calls"
    # a text parser would have made the quoted call: the same text, every marker a special token
    _, _, calls, _, _ = accumulate(stream(server(), request(), QUOTED + REAL_CALL, 1, TOKENIZER.prompt()))
    assert [name for name, _ in calls] == ["write", "get_weather"]


@pytest.mark.parametrize("tokens_per_step", [1, 2, 5])
def test_empty_text_steps_and_skipped_markers_are_read_from_the_ids(tokens_per_step):
    text = '<|channel>thought\nWeather.<channel|>Checking.' + REAL_CALL + '<|tool_call>call:a{x:1}<tool_call|>'

    # speculative decoding: some steps come with their ids and no text (vLLM #49254), the last
    # step (the closer) too
    def mtp(n, step):
        return "" if n % 3 == 1 or step[-1][1] == TOKENIZER.ids[tokens.TOOL_CALL_CLOSE] else "".join(p for p, _ in step)

    # a server that strips special tokens: the markers' text is gone, their ids are not
    def stripped(n, step):
        return "".join(p for p, t in step if t not in TOKENIZER.text_of)

    for text_of in (mtp, stripped):
        # the reasoning parser takes the opening thought (thinking on), the tool parser the rest; or
        # the tool parser all of it, the thought as text (no reasoning parser)
        for reasoning, thinking in ((True, {"enable_thinking": True}), (True, None), (False, None)):
            chunks = stream(server(reasoning=reasoning), request(), text, tokens_per_step, TOKENIZER.prompt(),
                            chat_template_kwargs=thinking, text_of=text_of)
            assert accumulate(chunks)[:3] == expected(text, parse_thinking=reasoning), (reasoning, thinking)


@pytest.mark.parametrize("tokens_per_step", [1, 4])
def test_a_quoted_marker_in_the_opening_thought_stays_reasoning(tokens_per_step):
    # a thought that quotes the closer and a call, written with ordinary tokens, then a real call
    quoted = 'The doc shows <channel|> and <|tool_call>call:write{path:<|"|>/x<|"|>}<tool_call|>.'
    pieces = (TOKENIZER.tokenize("<|channel>thought\n") + TOKENIZER.tokenize(quoted, spelled=True)
              + TOKENIZER.tokenize("<channel|>Sure." + REAL_CALL))
    text = "".join(p for p, _ in pieces)
    chunks = stream(server(), request(), text, tokens_per_step, TOKENIZER.prompt(),
                    chat_template_kwargs={"enable_thinking": True}, pieces=pieces)
    content, thought, calls, void, _ = accumulate(chunks)
    assert (content, thought) == ("Sure.", quoted)
    assert calls == [("get_weather", '{"city": "Paris", "days": 3}')] and not void


def test_a_tokenizer_without_the_methods_falls_back_to_text(caplog):
    class Old(GemmaTokenizer):
        convert_tokens_to_ids = None

    serving = server()
    req = request()
    parser = serving.parser_cls(Old(), req.tools)
    with caplog.at_level(logging.WARNING):
        parser.parse_delta(REAL_CALL, [TEXT_TOKEN], req, TOKENIZER.prompt(), finished=False)
    assert parser.tool_parser.by_token_id is False and "read by text" in caplog.text
