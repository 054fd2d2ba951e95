"""An SGLang tool-call detector for Gemma 4, registered as `gemma4-lark` (docs/serving.md):

    python -m sglang.launch_server --model-path google/gemma-4-... \\
        --tool-call-parser gemma4-lark --reasoning-parser gemma4

Installed with gemma4-lark, the package's `sglang.srt.plugins` entry point runs `register()` when
SGLang loads its plugins (before it reads its arguments); importing this module registers too.
Written against SGLang 0.5.23's `BaseFormatDetector`: its serving layer makes one
`FunctionCallParser`, so one detector, per request and choice, calls `parse_streaming_increment`
per delta and `finish` (through `parse_stream_end`) when the output ends.

Thoughts are SGLang's reasoning parser's (`--reasoning-parser gemma4`): this detector leaves thought
markup it is handed in the text, since a detector's result has no place for reasoning.
"""

from __future__ import annotations

from typing import Any, List, Sequence

from gemma4_lark import tokens

try:
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem
except ImportError as error:  # no SGLang, or one whose modules moved: say which adapter and why
    raise type(error)(f"{__name__} is an SGLang adapter (written against SGLang 0.5.23) and needs SGLang: {error}",
                      name=error.name, path=error.path) from error

from ..parser import StreamParser
from .base import Delta, ToolCallDeltas, extract_calls, stream_parser_options, token_parser

__all__ = ["Gemma4LarkDetector", "Gemma4LarkStreamedDetector", "Gemma4LarkWholeCallsDetector", "NAME", "register"]

NAME = "gemma4-lark"


def _result(delta: Delta, voided: set) -> StreamingParseResult:
    calls = []
    for call in delta.tool_calls:
        function = call.get("function") or {}
        if "error" in call:
            voided.add(call["index"])
            if not function.get("arguments"):
                continue  # a voided entry: SGLang's items cannot say so; its arguments stay unclosed
        calls.append(ToolCallItem(tool_index=call["index"], name=function.get("name"),
                                  parameters=function.get("arguments", "")))
    return StreamingParseResult(normal_text=delta.content or "", calls=calls)


class Gemma4LarkDetector(BaseFormatDetector):
    """Gemma 4 tool calls through `StreamParser`/`OpenAIStream`, each call sent whole once its
    block has been decoded: nothing of a failed block is ever a call. `tool_index` is the call's
    ordinal (0, 1, 2... over the calls sent), as SGLang's streaming deltas use it.

    `Gemma4LarkStreamedDetector` (`gemma4-lark-stream`, opt-in) streams arguments as the grammar
    accepts them; a block that fails after its header went out keeps arguments that never close
    (invalid JSON; SGLang's items have no field to mark it void), its index is listed in
    `incomplete_tool_call_indices` (SGLang then keeps `finish_reason` "stop") and its raw text goes
    out as text. String arguments stay strings: `<|"|>null<|"|>` is "null", `null` is null.
    """

    stream_arguments = False

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self.bot_token = tokens.TOOL_CALL_OPEN
        self.eot_token = tokens.TOOL_CALL_CLOSE
        # SGLang's FunctionCallParser hands its tokenizer to a detector that takes one: with it,
        # deltas that come with their ids are read by token id (docs/streaming.md#token-ids)
        self.tokenizer = tokenizer
        self._deltas: ToolCallDeltas | None = None
        # the streamed entries voided (SGLang reads this set: a choice with one is not "tool_calls")
        self.incomplete_tool_call_indices: set[int] = set()

    @staticmethod
    def _options(tools: Any) -> dict[str, Any]:
        options = stream_parser_options(tools, None)
        options["parse_thinking"] = False
        return options

    def has_tool_call(self, text: str) -> bool:
        """Whether `text` holds a call block's opener (SGLang asks before parsing a whole output)."""
        return self.bot_token in text

    def detect_and_parse(self, text: str, tools: List[Any]) -> StreamingParseResult:
        content, calls = extract_calls(text, **self._options(tools))
        return StreamingParseResult(normal_text=content or "", calls=[
            ToolCallItem(tool_index=i, name=call["function"]["name"], parameters=call["function"]["arguments"])
            for i, call in enumerate(calls)])

    def parse_streaming_increment(self, new_text: str, tools: List[Any],
                                  token_ids: Sequence[int] | None = None) -> StreamingParseResult:
        """One delta. `token_ids`, the delta's ids (SGLang 0.5.23's serving loop passes text only:
        a loop that has them passes them here), are read with the tokenizer this detector was
        given: markers by id. Without them, or without a tokenizer, markers are read by text."""
        if self._deltas is None:
            options = self._options(tools)
            parser = token_parser(self.tokenizer, options) if self.tokenizer is not None else None
            self._deltas = ToolCallDeltas(parser or StreamParser(**options), stream_arguments=self.stream_arguments)
        if token_ids is not None and not self._deltas.stream.parser.reads_token_ids:
            token_ids = None  # (no tokenizer to read them with)
        return _result(self._deltas.feed(new_text, token_ids), self.incomplete_tool_call_indices)

    def finish(self, tools: List[Any]) -> StreamingParseResult:
        """The end of the output: what the parser held, and the failure of an unclosed block."""
        if self._deltas is None:
            return StreamingParseResult()
        return _result(self._deltas.finish(), self.incomplete_tool_call_indices)

    def supports_structural_tag(self) -> bool:
        # SGLang's structural tags put JSON between begin and end; Gemma's arguments are not JSON.
        return False

    def structure_info(self):
        """A call's begin, end and trigger as text (what a structural tag would need)."""
        def info(name: str) -> StructureInfo:
            return StructureInfo(begin=f"{tokens.TOOL_CALL_OPEN}{tokens.CALL_KEYWORD}{name}{{",
                                 end="}" + tokens.TOOL_CALL_CLOSE, trigger=tokens.TOOL_CALL_OPEN)
        return info


class Gemma4LarkWholeCallsDetector(Gemma4LarkDetector):
    """`gemma4-lark-whole`: the default's behaviour under the name it had when arguments streamed
    by default."""

    stream_arguments = False


class Gemma4LarkStreamedDetector(Gemma4LarkDetector):
    """`gemma4-lark-stream` (opt-in): arguments streamed as the grammar accepts them."""

    stream_arguments = True


def register() -> None:
    """Make `gemma4-lark`, `gemma4-lark-whole` and `gemma4-lark-stream` SGLang tool-call parsers
    (and `--tool-call-parser` choices). Idempotent. Raises ImportError without SGLang."""
    from sglang.srt.function_call import parser_names
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    for name, detector in ((NAME, Gemma4LarkDetector), (NAME + "-whole", Gemma4LarkWholeCallsDetector),
                           (NAME + "-stream", Gemma4LarkStreamedDetector)):
        FunctionCallParser.ToolCallParserEnum[name] = detector
        if name not in parser_names.TOOL_CALL_PARSER_NAMES:
            parser_names.TOOL_CALL_PARSER_NAMES.append(name)


register()
