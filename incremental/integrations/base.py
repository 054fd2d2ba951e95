"""What the vLLM and SGLang adapters delegate to, with no framework imported: the request's options,
a stream's deltas merged per server call, the thought that opens an output, and the marker tokens.

Servers call a parser once per decoded delta and want one message delta back (vLLM's
`DeltaMessage`, SGLang's `StreamingParseResult`); `OpenAIStream` returns a list of chunks.
`ToolCallDeltas` folds them into one `Delta`: content and reasoning concatenated, tool-call deltas
merged per call `index`. The adapters only translate a `Delta` into their framework's classes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from gemma4_lark import tokens
from gemma4_lark.events import ThinkingDelta, ThinkingEnd, ThinkingStart
from gemma4_lark.family import WrongModelFamilyError
from gemma4_lark.grammar import whitespace
from gemma4_lark.schema.registry import compile_tools
from gemma4_lark.tools import read_tool_choice
from ..openai import OpenAIStream, to_openai_message
from ..output import parse_output
from .._inputs import plain_str
from ..parser import StreamParser
from ..token_ids import TokenMarkers

__all__ = [
    "Delta", "MarkerIds", "ThoughtGate", "ToolCallDeltas", "extract_calls", "plain", "split_reasoning",
    "stream_parser_options", "token_parser",
]

_BLANKS = whitespace()
# The thought opener as the parser reads it: its newline is optional.
_THOUGHT_HEAD = tokens.THOUGHT_OPEN[:-1]
# The markers whose token a server that strips special tokens deletes from the text.
_MARKERS = (tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE, tokens.STRING_DELIMITER, tokens.CHANNEL_OPEN,
            tokens.CHANNEL_CLOSE)


def plain(value: Any) -> Any:
    """`value` as JSON-like data: a pydantic model (the frameworks' request classes) dumped
    without its unset fields, lists and dicts walked. Raises nothing."""
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def stream_parser_options(tools: Any = None, tool_choice: Any = None) -> dict[str, Any]:
    """The `StreamParser` options for a request: the one place a request's `tools` and
    `tool_choice` (as the framework holds them: pydantic models or dicts) become parser options.

    Both are read (and checked) with `gemma4_lark.tools`, and the tools' schemas compiled, so a
    malformed request is a `ShapeError` naming its field here, at the start of the response
    (vLLM's tool parser asks in `adjust_request`, before generating). Declared tools make the
    parser decode against them (docs/schema.md: an undeclared name is never a call, scalars are
    typed by the schema); a request without tools leaves decoding as it is.
    """
    registry = compile_tools(plain(tools) if tools else None)  # reads the tools, checks each schema
    choice = plain(tool_choice)
    read_tool_choice(choice, registry.tools if registry is not None else ())
    options: dict[str, Any] = {}
    if registry is not None:
        options["tools"] = registry  # compiled once here: the parser takes it as it is
        options["tool_choice"] = choice
    return options


@dataclass
class Delta:
    """One server call's worth of output: `content`, `reasoning` (None when there is none; "" when
    a thought opened with no text yet), and
    `tool_calls`, OpenAI tool-call deltas (`index`, and `id`, `type`, `function.name` on a call's
    first; `function.arguments` fragments; `error` on the delta that voids a streamed call)."""

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        # an empty thought still says there was one (`reasoning` "")
        return bool(self.content or self.reasoning is not None or self.tool_calls)


def merge_chunks(chunks: Iterable[Mapping[str, Any]], reasoning_field: str) -> Delta:
    """The deltas of `chat.completion.chunk` objects folded into one `Delta`. Consecutive tool-call
    deltas of one `index` become one (their fragments joined), so a server sends each call's part
    of the delta once. `finish_reason` is dropped: servers decide it themselves. Raises nothing."""
    delta = Delta()
    content: list[str] = []
    reasoning: list[str] = []
    calls = delta.tool_calls
    for chunk in chunks:
        part = chunk["choices"][0]["delta"]
        if part.get("content"):
            content.append(part["content"])
        if reasoning_field in part:
            reasoning.append(part[reasoning_field])
        for call in part.get("tool_calls", ()):
            if calls and calls[-1]["index"] == call["index"]:
                _merge_call(calls[-1], call)
            else:
                calls.append(json.loads(json.dumps(call)))  # a copy the caller may keep
    delta.content = "".join(content) or None
    delta.reasoning = "".join(reasoning) if reasoning else None
    return delta


def _merge_call(into: dict[str, Any], call: Mapping[str, Any]) -> None:
    for key, value in call.items():
        if key == "function":
            function = into.setdefault("function", {})
            for name, part in value.items():
                if name == "arguments":
                    function["arguments"] = function.get("arguments", "") + part
                else:
                    function[name] = part
        elif key != "index":
            into[key] = json.loads(json.dumps(value))


class ToolCallDeltas:
    """`OpenAIStream` for a server that wants one `Delta` per call: `feed(text)` and, when the
    stream ends, `finish()`. Nothing of a block that fails is ever sent as a call that can run: by
    default calls go whole once decoded; with `stream_arguments` (opt-in) a failed entry is voided
    (arguments never complete JSON, an `error` key); either way its raw text goes out as content
    (docs/serving.md). `after_thought`: a reasoning parser sent the output's opening thought (see
    `OpenAIStream`)."""

    REASONING_FIELD = "reasoning"

    def __init__(self, parser: StreamParser, *, stream_arguments: bool = False, after_thought: bool = False):
        self.stream = OpenAIStream(parser, stream_arguments=stream_arguments, reasoning_field=self.REASONING_FIELD,
                                   after_thought=after_thought)

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> Delta:
        """The delta `text` (and its `token_ids`, for a parser made by `StreamParser.for_tokenizer`)
        completes (possibly empty). Raises what `OpenAIStream.feed` raises."""
        return merge_chunks(self.stream.feed(text, token_ids), self.REASONING_FIELD)

    def finish(self, finish_reason: str | None = None) -> Delta:
        """What the parser still held, and the end of every open block (an unclosed call fails
        here, as it does in `parse_output`, unless `finish_reason` is "stop" and its arguments are
        complete: `StreamParser.flush`). A second call returns an empty Delta."""
        return merge_chunks(self.stream.flush(finish_reason), self.REASONING_FIELD)


def token_parser(tokenizer: Any, options: Mapping[str, Any]) -> StreamParser | None:
    """`StreamParser.for_tokenizer(tokenizer, **options)`: markers by token id (docs/streaming.md#token-ids),
    or None when the tokenizer lacks `convert_tokens_to_ids` and `decode` or their marker tokens
    (the adapter then reads markers by text). Raises what StreamParser raises for `options`."""
    try:
        return StreamParser.for_tokenizer(tokenizer, **options)
    except (TypeError, ValueError) as error:
        if "tokenizer" not in str(error):
            raise
        return None


def extract_calls(text: str, **options: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """A whole output's content and its calls (OpenAI `tool_calls` entries), as
    `to_openai_message(parse_output(text))` has them: a failed block's raw text stays in the
    content, never in the calls. Raises what `parse_output` raises (TypeError for a non-str)."""
    message = to_openai_message(parse_output(text, **options))
    return message["content"], message.get("tool_calls", [])


def split_reasoning(text: str, *, start_in_thinking: bool = False) -> tuple[str | None, str | None]:
    """A whole output's thoughts (joined by a newline, as `to_openai_message` joins them; None when
    there is none) and the rest of its text, raw (thought markup removed, everything else kept for
    the tool parser). Raises TypeError for a non-str."""
    parsed = parse_output(text, start_in_thinking=start_in_thinking)
    if not parsed.thinking:
        return None, text or None
    kept: list[str] = []
    at = 0
    for event in parsed.events:
        if type(event) is ThinkingStart:
            kept.append(text[at:event.span[0]])
        elif type(event) is ThinkingEnd:
            at = event.span[1]
    kept.append(text[at:])
    return "\n".join(parsed.thinking), "".join(kept) or None


class ThoughtGate:
    """The thought an output opens with, streamed: for a server that hands the start of an output to
    a reasoning parser until that says reasoning is over, then the rest to a tool parser.

    `feed(text)` returns (reasoning, content, forward): the thought's text (None when the delta has
    nothing of a thought, "" when it opened one with no text yet), text to send as content now
    (whitespace before a thought), and, once the thought is over, the raw text after it for the
    tool parser (None until then; `ended` turns True). An output that does not open with a thought
    (`<|channel>thought`, after optional whitespace) is over at once: all of it is forwarded. A
    thought ends at `<channel|>`, or where the parser ends it (a `<|tool_call>`, a stop marker):
    the text from there on is forwarded. `start_in_thinking`: the prompt ended inside the thought.
    Memory: the thought is not kept, only what the parser holds back.

    `tokenizer` (one `StreamParser.for_tokenizer` takes): deltas fed with their `token_ids` are
    read by token id (docs/streaming.md#token-ids): a thought opens and closes at the special
    tokens only, and what a delta's text lacks (no text at all, a skipped marker) is put back; the
    text forwarded is the text as reconstructed.
    """

    def __init__(self, *, start_in_thinking: bool = False, tokenizer: Any = None):
        self.ended = False
        self._tokenizer = tokenizer
        self._markers = TokenMarkers.of(tokenizer) if tokenizer is not None else None
        self._carry: Sequence[int] = ()  # ids whose text is held back (TokenMarkers.align)
        self._parser: StreamParser | None = None
        self._head = ""      # before a thought is decided: what may still open one
        self._head_marks: tuple[int, ...] = ()  # where in it a marker's special token starts
        self._held = ""      # in a thought: the raw text the events have not accounted for yet
        self._held_at = 0    # its offset in the parser's stream
        if start_in_thinking:
            self._parser = self._new_parser(start_in_thinking=True)

    def _new_parser(self, **options: Any) -> StreamParser:
        if self._markers is None:
            return StreamParser(**options)
        return StreamParser.for_tokenizer(self._tokenizer, **options)

    @property
    def reads_token_ids(self) -> bool:
        """Whether the gate reads markers by token id (it was given a tokenizer)."""
        return self._markers is not None

    @property
    def opened(self) -> bool:
        """Whether the output opened with a thought (or started in one): what comes after it that
        is a thought too is a second one, joined to it by a newline."""
        return self._parser is not None

    def feed(self, text: str, token_ids: Sequence[int] | None = None) -> tuple[str | None, str, str | None]:
        if self.ended:
            raise RuntimeError("the thought is over: feed the rest to the tool parser")
        if type(text) is not str:  # (a str subclass: read once as a str)
            text = plain_str(text)
        marks: tuple[int, ...] | None = None
        if token_ids is not None and self._markers is not None:
            text, marks, self._carry = self._markers.align(text, token_ids, self._carry)
        if self._parser is None:
            head = self._head + text
            rest = head.lstrip(_BLANKS)
            skip = len(head) - len(rest)
            content = head[:skip]
            head_marks = None
            opener = True  # whether the `<` that rest begins with may open a thought
            if marks is not None:
                head_marks = self._head_marks + tuple(len(self._head) + m for m in marks)
                opener = skip in head_marks
            if not rest or (opener and len(rest) < len(_THOUGHT_HEAD) and _THOUGHT_HEAD.startswith(rest)):
                self._head = rest
                self._head_marks = tuple(m - skip for m in head_marks or () if m >= skip)
                return None, content, None
            self._head = ""
            self._head_marks = ()
            if not (opener and rest.startswith(_THOUGHT_HEAD)):
                self.ended = True
                return None, content, rest
            self._parser = self._new_parser()
            rest_marks = None if head_marks is None else tuple(m - skip for m in head_marks if m >= skip)
            reasoning, forward = self._read(rest, rest_marks)
            return reasoning, content, forward
        reasoning, forward = self._read(text, marks)
        return reasoning, "", forward

    def _read(self, text: str, marks: tuple[int, ...] | None = None) -> tuple[str | None, str | None]:
        held = self._held + text
        reasoning: list[str] = []
        accounted = self._held_at
        parser = self._parser
        for event in parser.feed(text) if marks is None else parser.feed_aligned(text, marks):
            kind = type(event)
            if kind is ThinkingDelta or kind is ThinkingStart:
                reasoning.append(event.text if kind is ThinkingDelta else "")
            elif kind is ThinkingEnd:
                self.ended = True
                return "".join(reasoning) if reasoning else None, held[event.span[1] - self._held_at:]
            accounted = event.span[1]
        self._held = held[accounted - self._held_at:]
        self._held_at = accounted
        return ("".join(reasoning) if reasoning else None), None

    def finish(self) -> tuple[str | None, str]:
        """The end of the output while still in (or before) the thought: (reasoning, content)
        still held. Raises nothing."""
        if self.ended:
            return None, ""
        self.ended = True
        if self._parser is None:
            return None, self._head
        events = []
        if self._carry:  # a character never completed: as the whole text has it
            events = self._parser.feed_aligned(*self._markers.decoded(self._carry))
        held = [e.text for e in events + self._parser.flush() if type(e) is ThinkingDelta]
        return ("".join(held) if held else None), ""


@dataclass(frozen=True)
class MarkerIds:
    """The token ids of the markers in a tokenizer's vocabulary: what the token-level checks of a
    reasoning parser scan (servers ask them on token ids, not text). Read from the one map of a
    tokenizer's control tokens to their ids, `token_ids.TokenMarkers`, which the stream parser
    reads markers by."""

    channel_open: int
    channel_close: int
    tool_call_open: int
    boundaries: frozenset[int]          # a turn's or a tool response's start: no thought crosses it
    by_text: Mapping[str, int]
    stops: frozenset[int] = frozenset()  # the stop markers (`<|tool_response>`, `<turn|>`, `<eos>`)

    @classmethod
    def from_vocab(cls, vocab: Mapping[str, int]) -> "MarkerIds":
        """Raises `WrongModelFamilyError` (a ValueError) naming the markers the vocabulary lacks (not a
        Gemma 4 tokenizer)."""
        return cls.of(TokenMarkers.from_vocab(vocab))

    @classmethod
    def of(cls, markers: TokenMarkers) -> "MarkerIds":
        """The ids these checks scan, as `markers` (the stream parser's map of a tokenizer's
        control tokens) has them. Raises `WrongModelFamilyError` naming the markers it lacks."""
        wanted = _MARKERS + (tokens.TURN_OPEN, tokens.TOOL_RESPONSE_OPEN)
        ids = {marker: markers.id_of(marker) for marker in tokens.CONTROL_TOKENS}
        missing = [m for m in wanted if ids[m] is None]
        if missing:
            raise WrongModelFamilyError(f"the tokenizer has no token for {', '.join(missing)}: not a Gemma 4 tokenizer")
        return cls(ids[tokens.CHANNEL_OPEN], ids[tokens.CHANNEL_CLOSE], ids[tokens.TOOL_CALL_OPEN],
                   frozenset((ids[tokens.TURN_OPEN], ids[tokens.TOOL_RESPONSE_OPEN])),
                   {m: ids[m] for m in _MARKERS},
                   frozenset(ids[m] for m in (tokens.TOOL_RESPONSE_OPEN, tokens.TURN_CLOSE, tokens.EOS)
                             if ids[m] is not None))

    def thought_over(self, ids: Sequence[int], expect_thought: bool) -> bool:
        """Whether the output whose token ids end `ids` (a prompt, or a prompt and what followed)
        is past its thought: the last marker of its turn is a `<channel|>` or a `<|tool_call>`
        (which ends a thought). Inside a thought (`<|channel>` last) it is not; with no marker since
        the turn began it is unless the model is expected to think (`expect_thought`: thinking is
        on). Reads back to the last marker only. Raises nothing."""
        last = self._last_marker(ids)
        if last is None:
            return not expect_thought
        return last != self.channel_open

    def in_thought(self, ids: Sequence[int]) -> bool:
        """Whether `ids` (a rendered prompt) end inside a thought: `<|channel>` is the last marker
        of the turn (the official template's prefill after tool results). Raises nothing."""
        return self._last_marker(ids) == self.channel_open

    def _last_marker(self, ids: Sequence[int]) -> int | None:
        """The last of `<|channel>`, `<channel|>`, `<|tool_call>` since the turn began, or None."""
        for token in reversed(ids):
            if token == self.channel_close or token == self.tool_call_open or token == self.channel_open:
                return token
            if token in self.boundaries:
                return None
        return None

    def ends_thought(self, delta_ids: Iterable[int]) -> bool:
        """Whether a step's new tokens end a thought (the last of its markers decides). For a
        caller that latches the answer, so it only looks at the new tokens. Raises nothing."""
        over = False
        for token in delta_ids:
            if token == self.channel_close or token == self.tool_call_open:
                over = True
            elif token == self.channel_open:
                over = False
        return over

    def thought_tokens(self, ids: Sequence[int], start_inside: bool = False) -> int:
        """How many of an output's token ids are thought text (markers not counted);
        `start_inside`: the prompt ended inside a thought. Raises nothing."""
        count, inside = 0, start_inside
        for token in ids:
            if token == self.channel_open:
                inside = True
            elif token == self.channel_close or token == self.tool_call_open or token in self.boundaries:
                inside = False
            elif inside:
                count += 1
        return count

    def content_ids(self, ids: list[int]) -> list[int]:
        """The ids after the thought: after the last `<channel|>`, or from the `<|tool_call>` or
        stop marker that ended it (the text the reasoning parser forwards starts there too); all
        of them when none is there. Raises nothing."""
        for i in range(len(ids) - 1, -1, -1):
            if ids[i] == self.channel_close:
                return ids[i + 1:]
        for i, token in enumerate(ids):
            if token == self.tool_call_open or token in self.stops:
                return ids[i:]
        return ids

    def stripped(self, delta_text: str, delta_ids: Iterable[int]) -> str | None:
        """The first marker whose token is among `delta_ids` but whose text is not in
        `delta_text`: the server decoded with `skip_special_tokens=True`. None when all are there
        (or the step has no marker). Raises nothing."""
        for text, token in self.by_text.items():
            if token in delta_ids and text not in delta_text:
                return text
        return None
