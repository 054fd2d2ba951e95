"""Differential fuzzing: a campaign that runs the grammar's parsers against the hand-written oracle
(`gemma4_lark.reference`), or against any parser, through a small JSONL protocol.

The strategies that make the examples are in `gemma4_lark.strategies` (it imports hypothesis,
which the library does not need: the campaign imports it when it runs).

Comparing: `comparable(events)`, what two strict event streams must agree on; `typed(value)`, a
value in a form where 1, 1.0, True and -0.0, 0.0 differ.

The `--target` protocol: the command reads one JSON object per line, {"text": "..."}, and answers
each with one line, {"calls": [{"name": ..., "arguments": {...}}, ...], "text": "..."}: the calls
it found and the text left over (the conformance kit's protocol: docs/conformance.md). The campaign
sends canonical streams and compares the answers with this project's, through the kit's client, so
a target that hangs or crashes is a finding rather than a hang of the campaign.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .conformance.target import (
    DEFAULT_STARTUP, DEFAULT_STOP_AFTER_HANGS, DEFAULT_TIMEOUT, NEVER_ANSWERED, Target, TargetDoesNotRun,
)

_STRATEGIES = frozenset({"values", "names", "calls", "canonical_call", "canonical_calls", "canonical_streams", "edge_streams",
                         "bounded_streams", "mutated", "chunked", "grammar_text"})


def __getattr__(name: str):
    # The strategies lived here until they moved to gemma4_lark.strategies (so that importing this
    # module loads no hypothesis): the old spelling works one more release, and says so.
    if name in _STRATEGIES:
        import warnings

        from . import strategies

        warnings.warn(f"gemma4_lark.fuzz.{name} is gemma4_lark.strategies.{name}", DeprecationWarning, stacklevel=2)
        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- comparing event streams -------------------------------------------------------------------------
def typed(value) -> tuple:
    """`value` flattened in pre-order, each item with its type: 1, 1.0 and True differ, and so do
    0.0 and -0.0 (floats by repr). Iterative: arguments nest as deep as `max_depth`."""
    out = []
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            out.append(("dict", len(item)))
            for key, member in reversed(list(item.items())):
                stack.append(member)
                stack.append(("key", key))
        elif kind is list:
            out.append(("list", len(item)))
            stack.extend(reversed(item))
        elif kind is tuple:  # a key pushed above
            out.append(item)
        else:
            out.append((kind.__name__, repr(item) if kind is float else item))
    return tuple(out)


def comparable(events) -> list:
    """What two strict streams must agree on, event for event: types and spans; text, markup and
    stop markers; ids, indexes and names; a call's arguments (typed exactly), raw text, `recovered`
    and diagnostics (all but their message); a failed block's raw text and `code`. Consecutive text
    or thinking deltas are merged (chunking may split them differently). Left out: error and
    diagnostic messages, and what a strict stream takes from the lenient decoder for a block not
    closed (an error's `name`, `partial` and `diagnostics`)."""
    out = []
    for event in events:
        kind = event.type
        if kind in ("text", "thinking_delta") and out and out[-1][0] == kind:
            _, text, (start, _end) = out.pop()
            out.append((kind, text + event.text, (start, event.span[1])))
            continue
        if kind in ("text", "thinking_delta"):
            out.append((kind, event.text, event.span))
        elif kind == "stop":
            out.append((kind, event.marker, event.span))
        elif kind == "stray_markup":
            out.append((kind, event.markup, event.span))
        elif kind == "tool_call_start":
            out.append((kind, event.id, event.index, event.name, event.span))
        elif kind == "tool_call_end":
            out.append((kind, event.id, event.index, event.name, typed(event.arguments), event.raw, event.recovered,
                        [(d.severity, d.code, d.line, d.column, d.pos, d.end) for d in event.diagnostics], event.span))
        elif kind == "tool_call_error":
            out.append((kind, event.id, event.index, event.raw, event.code, event.span))
        else:
            out.append((kind, event.span))
    return out


# --- the campaign -----------------------------------------------------------------------------------
@dataclass
class Finding:
    prop: str
    example: str
    detail: str


@dataclass
class Report:
    tried: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def _events(cls, chunks, ids, **options):
    parser = cls(id_factory=iter(ids).__next__, **options)
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.flush())
    return events


def _tiles(events, text) -> bool:
    pos = 0
    for event in events:
        if event.span[0] != pos:
            return False
        pos = event.span[1]
    return pos == len(text)


def run_campaign(stream_parser, examples: int = 200, seed: int = 0, target: str | None = None, progress=None,
                 timeout: float = DEFAULT_TIMEOUT, startup: float = DEFAULT_STARTUP) -> Report:
    """Run every differential property for `examples` examples each; collect shrunk failures.

    `target`: a command speaking the JSONL protocol, asked through the conformance kit's client
    (`gemma4_lark.conformance.target`): an answer not given within `timeout` seconds (up to
    `startup` more for a process's first), a crash, or a line not of the protocol's shape is a finding, and the next
    request starts the target again.

    `stream_parser` is the streaming parser class under test (`gemma4_incremental.StreamParser`:
    this package does not import the streaming layer itself).
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st
    from hypothesis.errors import InvalidArgument

    from .strategies import calls, canonical_call, canonical_streams, chunked, edge_streams, grammar_text, mutated

    from .events import ToolCallEnd
    from .parser import parse_call
    from .recovery import decode_call
    from .reference import ReferenceScanner, read_call

    StreamParser = stream_parser

    report = Report()
    ids = [f"call_{i}" for i in range(10_000)]
    config = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])

    def same_reading(block):
        strict = parse_call(block)
        oracle = read_call(block)
        assert (oracle.name, typed(oracle.arguments)) == (strict.name, typed(strict.arguments)), (block, strict, oracle)

    def block_level(name_arguments):
        same_reading(canonical_call(*name_arguments))

    def grammar_blocks(data):
        same_reading(data.draw(grammar_text("call_block")))

    def recovery_level(name_arguments):
        block = canonical_call(*name_arguments)
        strict = parse_call(block)
        lenient = decode_call(block)
        assert lenient.call == strict and not lenient.diagnostics, (strict, lenient)

    def stream_level(data):
        text = data.draw(st.one_of(canonical_streams(), edge_streams(), canonical_streams().flatmap(mutated)))
        chunks = data.draw(chunked(text))
        ours = comparable(_events(StreamParser, chunks, ids, strict=True))
        reference = comparable(_events(ReferenceScanner, chunks, ids))
        assert ours == reference, text

    def robustness(data):
        base = data.draw(canonical_streams())
        text = data.draw(mutated(base))
        chunks = data.draw(chunked(text))
        for cls in (StreamParser, ReferenceScanner):
            events = _events(cls, chunks, ids)
            assert _tiles(events, text), (cls.__name__, text)

    counts: dict = {}

    def counted(label, fn):
        def wrapper(value):
            counts[label] = counts.get(label, 0) + 1
            return fn(value)
        return wrapper

    properties = {
        "block: reference.read_call == parse_call on canonical calls": (calls(), block_level),
        "block: reference.read_call == parse_call on grammar-generated calls": (st.data(), grammar_blocks),
        "block: recovery.decode_call == parse_call on canonical calls": (calls(), recovery_level),
        "stream: ReferenceScanner == StreamParser(strict=True), event for event, on canonical, edge and mutated"
        " streams": (st.data(), stream_level),
        "robustness: no exception, spans tile, on mutated streams": (st.data(), robustness),
    }
    external = Target(target, timeout=timeout, startup=startup) if target else None
    gave_up: list = []  # the reply after which the target was asked no more
    never_ran: list = []  # the replies that crashed or hung before the target ever answered
    if external:
        failed_in_a_row = 0

        def against_target(data):
            nonlocal failed_in_a_row
            text = data.draw(canonical_streams())
            ours = StreamParser(id_factory=iter(ids).__next__)
            events = ours.feed(text) + ours.flush()
            expected = {"calls": [{"name": e.name, "arguments": e.arguments} for e in events if isinstance(e, ToolCallEnd)],
                        "text": "".join(e.text for e in events if e.type == "text")}
            if gave_up:  # it stopped answering: asked no more, each example fails as the last did
                reply = gave_up[0]
            else:
                reply = external.ask({"text": text})
                failed_in_a_row = 0 if reply.category is None else failed_in_a_row + 1
                # as the conformance run does: a target that crashed or hung on its first requests
                # without ever answering is not running; one that fails every request for a while has
                # stopped answering (each failure costs a restart)
                if external.answers == 0 and reply.category in ("crash", "timeout"):
                    never_ran.append(reply)
                if len(never_ran) >= NEVER_ANSWERED or failed_in_a_row >= DEFAULT_STOP_AFTER_HANGS:
                    gave_up.append(reply)
            assert reply.category is None, (text, f"{reply.category}: {reply.detail}")
            answer = reply.answer
            assert {"calls": answer["calls"], "text": answer["text"]} == expected, (text, answer, expected)

        properties = {"target: external parser == StreamParser on canonical streams": (st.data(), against_target)}
    try:
        for label, (strategy, fn) in properties.items():
            runner = with_seed(seed)(config(given(strategy)(counted(label, fn))))
            finding = None
            try:
                runner()
            except InvalidArgument:  # a bug of this harness, not a finding
                raise
            except Exception as exc:  # hypothesis re-raises the shrunk failure
                notes = "\n".join(getattr(exc, "__notes__", []))
                finding = Finding(label, notes or repr(exc.args[:1]), f"{type(exc).__name__}: {exc}"[:2000])
                report.findings.append(finding)
            report.tried[label] = counts.get(label, 0)
            if progress:
                progress(label, report.tried[label], finding)
        if gave_up and len(never_ran) >= NEVER_ANSWERED:
            raise TargetDoesNotRun(f"{gave_up[0].category}: {gave_up[0].detail}")
        if gave_up:
            report.findings.append(Finding("target: it stopped answering", "", f"{DEFAULT_STOP_AFTER_HANGS} requests in"
                                           f" a row failed, the last by {gave_up[0].category}: {gave_up[0].detail}"))
    finally:
        if external:
            external.close()
    return report
