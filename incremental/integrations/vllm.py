"""A vLLM tool parser and reasoning parser for Gemma 4, registered as `gemma4-lark` (docs/serving.md):

    vllm serve google/gemma-4-... \\
        --tool-parser-plugin gemma4_incremental.integrations.vllm \\
        --reasoning-parser-plugin gemma4_incremental.integrations.vllm \\
        --enable-auto-tool-choice --tool-call-parser gemma4-lark --reasoning-parser gemma4-lark

Written against vLLM 0.33's parser interfaces (`vllm.parser.abstract_parser.DelegatingParser` runs
the pair): the serving layer builds one `Parser`, so one instance of each class here, per request
and choice, and both keep their stream's state on the instance. Both are "engine based"
(`engine_based_streaming`): vLLM hands them each delta's text (not the text so far), asks the
reasoning parser `has_engine_confirmed_reasoning_end()` after each delta, passes the text after the
thought to the tool parser, and calls `finish_streaming()` when the output ends (the end-of-stream
hook for an unclosed call: it fails there, as in `parse_output`; its raw text goes out as content).

Pass the module's name, not its file's path: vLLM loads a path as a module named after the file,
and a module named `vllm` would replace vLLM itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from gemma4_lark import tokens

try:
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall, DeltaMessage, DeltaToolCall, ExtractedToolCallInformation, FunctionCall, ToolCall,
    )
    from vllm.reasoning.abs_reasoning_parsers import ReasoningParser, ReasoningParserManager
    from vllm.tool_parsers.abstract_tool_parser import ToolParser, ToolParserManager
except ImportError as error:  # no vLLM, or one whose modules moved: say which adapter and why
    raise type(error)(f"{__name__} is a vLLM adapter (written against vLLM 0.33) and needs vLLM: {error}",
                      name=error.name, path=error.path) from error

from ..parser import StreamParser
from .base import (
    Delta, MarkerIds, ThoughtGate, ToolCallDeltas, extract_calls, plain, split_reasoning, stream_parser_options,
    token_parser,
)

__all__ = ["Gemma4LarkReasoningParser", "Gemma4LarkStreamedToolParser", "Gemma4LarkToolParser",
           "Gemma4LarkWholeCallsToolParser", "NAME"]

NAME = "gemma4-lark"

logger = logging.getLogger(__name__)


def _delta_message(delta: Delta, drop_calls: bool = False) -> DeltaMessage | None:
    if drop_calls:  # tool_choice "none": the text of calls is not content, and no call goes out
        delta.tool_calls = []
    if not delta:
        return None
    calls = []
    for call in delta.tool_calls:
        # Only the keys the delta has: vLLM serializes set fields, and a `type: null` on a later
        # delta would overwrite the call's type in a client's accumulation.
        fields = dict(call)
        if "function" in fields:
            fields["function"] = DeltaFunctionCall(**fields["function"])
        calls.append(DeltaToolCall(**fields))
    return DeltaMessage(content=delta.content, reasoning=delta.reasoning, tool_calls=calls)


def _keep_special_tokens(request: Any) -> Any:
    # The markers are special tokens: decoded with skip_special_tokens=True they vanish from the text.
    if hasattr(request, "skip_special_tokens"):
        request.skip_special_tokens = False
    return request


class _StrippedCheck:
    """Says once (a warning, and `special_tokens_stripped` names the marker) when a step's token
    ids hold a marker that its text lacks: the server decoded with `skip_special_tokens=True`."""

    special_tokens_stripped: str | None = None
    markers: MarkerIds

    def _check(self, delta_text: str, delta_token_ids: Sequence[int]) -> None:
        if self.special_tokens_stripped is None and delta_token_ids:
            marker = self.markers.stripped(delta_text, delta_token_ids)
            if marker is not None:
                self.special_tokens_stripped = marker
                logger.warning("the token of %s is in the output but its text is not: the server decodes with"
                               " skip_special_tokens=True, and Gemma 4's markers are lost (set it to False)",
                               marker)


# vLLM's Parser builds a request's reasoning parser, then its tool parser, in one call, and gives
# neither the other. The tool parser needs one fact of its reasoning parser: whether that sent the
# output's opening thought (a later thought is then joined to it by a newline). So each reasoning
# parser waits here, per thread, for the tool parser built next with the same tokenizer.
_unpaired = threading.local()


def _reasoning_pair(tokenizer: Any) -> "Gemma4LarkReasoningParser | None":
    reasoning = getattr(_unpaired, "parser", None)
    _unpaired.parser = None
    # one built for another request (a process that builds reasoning parsers alone) has been fed
    if reasoning is None or reasoning.model_tokenizer is not tokenizer or reasoning._gate is not None:
        return None
    return reasoning


class Gemma4LarkToolParser(_StrippedCheck, ToolParser):
    """Gemma 4 tool calls through `StreamParser`/`OpenAIStream`, each call sent whole once its
    block has been decoded: every entry a client accumulates is a call it can run, nothing of a
    block that fails is ever sent as a call (its raw text goes out as content), and
    `finish_reason` is what the same request gets without streaming.
    `Gemma4LarkStreamedToolParser` (`gemma4-lark-stream`) streams arguments instead.
    Markers are read by token id, from the engine's delta ids and the request's tokenizer
    (docs/streaming.md#token-ids): marker text written with ordinary tokens stays content.

    `tool_choice` "required" or a named function is parsed like "auto" (vLLM's JSON-schema
    forcing would make the model write JSON, not Gemma's syntax): the output is not forced.
    """

    supports_required_and_named = False
    engine_based_streaming = True
    stream_arguments = False
    by_token_id = False  # once streaming: whether the request's tokenizer gave the markers' ids
    # vLLM sets this when no reasoning parser is configured: thoughts then stay text.
    skip_reasoning_parsing = False

    def __init__(self, tokenizer: Any, tools: list | None = None):
        super().__init__(tokenizer, tools)
        self.markers = MarkerIds.from_vocab(self.vocab)
        self._deltas: ToolCallDeltas | None = None
        # vLLM strips the calls of a "none" request (its default without tools) from each delta,
        # but not from what finish_streaming returns: a void marker there reached clients alone.
        self._drop_calls = False
        self._reasoning = _reasoning_pair(tokenizer)

    def _options(self, request: Any) -> dict[str, Any]:
        options = stream_parser_options(getattr(request, "tools", None), getattr(request, "tool_choice", None))
        options["parse_thinking"] = not self.skip_reasoning_parsing
        return options

    def adjust_request(self, request: Any) -> Any:
        # A malformed `tools` or `tool_choice` (a ShapeError, so a ValueError: vLLM answers the
        # request with an error) is refused here, before generation, not at the first delta of a
        # stream the client has already been told succeeded.
        self._options(request)
        return _keep_special_tokens(super().adjust_request(request))

    def get_remaining_unstreamed_args(self) -> str:
        # vLLM appends this at the end of a stream; what a call still owes is sent by
        # finish_streaming, and a failed call is never completed behind the stream's back.
        return ""

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        content, calls = extract_calls(model_output, **self._options(request))
        return ExtractedToolCallInformation(
            tools_called=bool(calls),
            tool_calls=[ToolCall(id=call["id"], type="function", function=FunctionCall(
                name=call["function"]["name"], arguments=call["function"]["arguments"])) for call in calls],
            content=content)

    def extract_tool_calls_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                     previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                     delta_token_ids: Sequence[int], request: Any) -> DeltaMessage | None:
        self._check(delta_text, delta_token_ids)
        if self._deltas is None:
            # vLLM keeps only the entries of index 0 when `parallel_tool_calls` is false: a streamed
            # entry voided there would be all the client gets of the call. Whole calls then.
            streamed = self.stream_arguments and getattr(request, "parallel_tool_calls", None) is not False
            options = self._options(request)
            parser = token_parser(self.model_tokenizer, options)
            self.by_token_id = parser is not None
            if parser is None:
                logger.warning("the tokenizer (%s) has no convert_tokens_to_ids and decode: markers are read by"
                               " text, so text that spells one counts as one", type(self.model_tokenizer).__name__)
                parser = StreamParser(**options)
            gate = self._reasoning._gate if self._reasoning is not None else None
            self._deltas = ToolCallDeltas(parser, stream_arguments=streamed, after_thought=gate is not None and gate.opened)
            self._drop_calls = plain(getattr(request, "tool_choice", None)) == "none"
        # The engine's ids: only a marker's special token is a marker, and ids whose text the
        # delta lacks (speculative decoding, skipped special tokens) are decoded.
        ids = list(delta_token_ids) if self.by_token_id and delta_token_ids is not None else None
        return _delta_message(self._deltas.feed(delta_text, ids), self._drop_calls)

    def finish_streaming(self) -> DeltaMessage | None:
        """The end of the output: what the parser held, and the failure of an unclosed block."""
        if self._deltas is None:
            return None
        return _delta_message(self._deltas.finish(), self._drop_calls)


class Gemma4LarkWholeCallsToolParser(Gemma4LarkToolParser):
    """`gemma4-lark-whole`: the default's behaviour under the name it had when arguments streamed
    by default (each call whole once decoded)."""

    stream_arguments = False


class Gemma4LarkStreamedToolParser(Gemma4LarkToolParser):
    """`gemma4-lark-stream` (opt-in): a call's header at `call:NAME{`, its arguments as the grammar
    accepts them. Clients cannot retract what was streamed: a block that fails after its header
    went out (or that the lenient decoder reads otherwise) leaves its entry void (an `error` key,
    arguments that never close), its raw text goes out as content, and vLLM then reports
    `finish_reason` "tool_calls" for it. With `parallel_tool_calls: false` calls go whole
    (docs/serving.md#vllm)."""

    stream_arguments = True


class Gemma4LarkReasoningParser(_StrippedCheck, ReasoningParser):
    """The thought an output opens with (`<|channel>thought\\n...<channel|>`), through `StreamParser`.

    When the prompt ends inside a thought (the official template's prefill after tool results)
    the output starts in it. An output that does not open with a thought is over at once and goes
    to the tool parser whole; it parses later thoughts itself. Token-level answers (`is_reasoning_end`,
    for the prompt and for structured outputs): past the thought once `<channel|>` or `<|tool_call>`
    is the last marker of the turn; with no marker, unless thinking is on
    (`chat_template_kwargs.enable_thinking`): then a thought is expected first.
    """

    engine_based_streaming = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any):
        super().__init__(tokenizer, *args, **kwargs)
        self.markers = MarkerIds.from_vocab(self.vocab)
        chat_template_kwargs = kwargs.get("chat_template_kwargs") or {}
        self.expect_thought = bool(chat_template_kwargs.get("enable_thinking", False))
        self._start_in_thinking = False
        self._prompt_known = False
        self._gate: ThoughtGate | None = None
        _unpaired.parser = self  # for the tool parser vLLM builds next (see _reasoning_pair)

    @property
    def reasoning_start_str(self) -> str:
        return tokens.CHANNEL_OPEN

    @property
    def reasoning_end_str(self) -> str:
        return tokens.CHANNEL_CLOSE

    def adjust_request(self, request: Any) -> Any:
        return _keep_special_tokens(super().adjust_request(request))

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        # The server's first question is about the prompt (vLLM asks it before generating, on the
        # instance that parses the output). vLLM 0.32 never hands a non-streamed output's prompt
        # to the reasoning parser (its DelegatingParser drops set_prompt_token_ids; 0.33 passes it
        # on), so the prompt's thought prefill is read here too; set_prompt_token_ids, when it
        # comes, decides.
        if not self._prompt_known:
            self._prompt_known = True
            self._start_in_thinking = self.markers.in_thought(input_ids)
        return self.markers.thought_over(input_ids, self.expect_thought)

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Sequence[int]) -> bool:
        # Asked while the thought is not over (callers latch True): the new tokens decide.
        return self.markers.ends_thought(delta_ids)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        return self.markers.thought_tokens(token_ids, self._start_in_thinking)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        return self.markers.content_ids(list(input_ids))

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._prompt_known = True
        self._start_in_thinking = self.markers.in_thought(prompt_token_ids)

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        self.set_prompt_token_ids(prompt_token_ids)

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        return split_reasoning(model_output, start_in_thinking=self._start_in_thinking)

    def extract_reasoning_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                    previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                    delta_token_ids: Sequence[int]) -> DeltaMessage | None:
        self._check(delta_text, delta_token_ids)
        if self._gate is None:
            # markers by token id, as the tool parser reads them (docs/streaming.md#token-ids)
            tokenizer = self.model_tokenizer if token_parser(self.model_tokenizer, {}) is not None else None
            self._gate = ThoughtGate(start_in_thinking=self._start_in_thinking, tokenizer=tokenizer)
        if self._gate.ended:  # (vLLM stops calling once the thought is over) the rest is content
            return DeltaMessage(content=delta_text) if delta_text else None
        ids = list(delta_token_ids) if self._gate.reads_token_ids and delta_token_ids is not None else None
        reasoning, content, forward = self._gate.feed(delta_text, ids)
        content += forward or ""
        if reasoning is None and not content:
            return None
        return DeltaMessage(reasoning=reasoning, content=content or None)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._gate is not None and self._gate.ended

    def finish_streaming(self) -> DeltaMessage | None:
        """The output ended in (or before) its thought: what the parser still held."""
        if self._gate is None:
            return None
        reasoning, content = self._gate.finish()
        if reasoning is None and not content:
            return None
        return DeltaMessage(reasoning=reasoning, content=content or None)


ToolParserManager.register_module(NAME, module=Gemma4LarkToolParser)
ToolParserManager.register_module(NAME + "-whole", module=Gemma4LarkWholeCallsToolParser)
ToolParserManager.register_module(NAME + "-stream", module=Gemma4LarkStreamedToolParser)
ReasoningParserManager.register_module(NAME, module=Gemma4LarkReasoningParser)
