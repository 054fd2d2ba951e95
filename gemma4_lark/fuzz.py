"""Differential fuzzing: hypothesis strategies for the format, and a campaign that runs the grammar's
parsers against the hand-written oracle (`gemma4_lark.reference`), or against any parser, through a
small JSONL protocol.

Strategies (import them in your own tests):
    values()             JSON-like values the format can carry (no string delimiter in strings)
    calls()              (name, arguments) pairs
    canonical_calls()    canonical call blocks, as text
    canonical_streams()  model outputs made of text, thoughts and canonical call blocks
    edge_streams()       markup in every place: whole, cut and stray markers, odd, invalid,
                         nested and unclosed blocks, between text and canonical blocks
    bounded_streams()    a few blocks of every size and depth up to a few dozen: for small limits
    mutated(text)        the text after random deletions, insertions of markers, brackets and
                         quotes, and truncations
    chunked(text)        the text split at random points
    grammar_text(start)  strings generated from the grammar itself (hypothesis.extra.lark)

Comparing: `comparable(events)`, what two strict event streams must agree on; `typed(value)`, a
value in a form where 1, 1.0, True and -0.0, 0.0 differ.

Settings: `settings(max_examples=...)`, hypothesis settings for properties over these strategies
(no deadline, no too-slow health check: see its docstring).

The `--target` protocol: the command reads one JSON object per line, {"text": "..."}, and answers
each with one line, {"calls": [{"name": ..., "arguments": {...}}, ...], "text": "..."}: the calls
it found and the text left over. The campaign sends canonical streams and compares the answers
with this project's.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field

from hypothesis import strategies as st

from . import tokens
from .render.values import dump_value

_D = tokens.STRING_DELIMITER
_MARKERS = [t for t in tokens.CONTROL_TOKENS] + ["call:", "{", "}", "[", "]", ",", ":", '"', "'", "\n"]


def values(max_leaves: int = 20) -> st.SearchStrategy:
    strings = st.text().filter(lambda s: _D not in s)
    scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-10**30, max_value=10**30)
               | st.floats(allow_nan=False, allow_infinity=False) | strings)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4),
                        max_leaves=max_leaves)


def names() -> st.SearchStrategy:
    return st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:-]{0,24}", fullmatch=True)


def calls() -> st.SearchStrategy:
    return st.tuples(names(), st.dictionaries(st.text().filter(lambda s: _D not in s), values(), max_size=5))


def settings(**overrides):
    """Hypothesis settings for a property over these strategies: `overrides` (max_examples, ...) on
    top of the current profile, without a deadline and without the too_slow health check.

    These strategies draw whole calls and streams, nested values and the grammar's own strings; on
    a loaded or small machine (2 shared cores) drawing the first examples can take longer than the
    health check allows, and the run then fails having found nothing (1 run in 13 did, running the
    guide's example). How long a draw takes says nothing about a parser, so neither the check nor a
    deadline belongs in a differential property."""
    from hypothesis import HealthCheck
    from hypothesis import settings as hypothesis_settings

    current = hypothesis_settings()  # the profile loaded
    options = {"deadline": None, **overrides}
    options["suppress_health_check"] = [*current.suppress_health_check, HealthCheck.too_slow,
                                        *options.get("suppress_health_check", ())]
    return hypothesis_settings(current, **options)


def canonical_call(name: str, arguments: dict) -> str:
    return tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + name + dump_value(arguments, unsafe="allow") + tokens.TOOL_CALL_CLOSE


def canonical_calls() -> st.SearchStrategy:
    # control tokens inside strings are fine for the parsers (only the delimiter is not)
    return calls().map(lambda c: canonical_call(*c))


def _prose() -> st.SearchStrategy:
    plain = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1, max_size=40)
    return plain | st.sampled_from(["a < b", "x <y> z", "{not a block}", "see <|", "<|tool_c"])


def canonical_streams() -> st.SearchStrategy:
    thought = _prose().map(lambda t: tokens.THOUGHT_OPEN + t + tokens.CHANNEL_CLOSE)
    piece = _prose() | thought | canonical_calls() | st.just(tokens.THOUGHT_OPEN + tokens.CHANNEL_CLOSE)
    return st.lists(piece, max_size=8).map("".join)


# Small blocks at the edges of the language: repeated keys, `<escape>`, nesting, odd blanks and
# numbers, refusals of every kind, unclosed strings and blocks.
_EDGE_BLOCKS = tuple(tokens.TOOL_CALL_OPEN + body for body in (
    "call:f{a:1,a:2}" + tokens.TOOL_CALL_CLOSE, "call:f{a:x<escape>y<escape> z}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:[[[[{b:[]}]]]]}" + tokens.TOOL_CALL_CLOSE, " call: f {\n a : -1.5e3 , b:.5,c:1.}\n" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:1,}" + tokens.TOOL_CALL_CLOSE, "call:f{a:-,b:+x,c:hello world ,d:None}" + tokens.TOOL_CALL_CLOSE,
    "call:f{" + _D + "k" + _D + ":1," + _D + "k" + _D + ":" + _D + "<turn|>" + _D + "}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:1e999}" + tokens.TOOL_CALL_CLOSE, "call:f{a:12abc}" + tokens.TOOL_CALL_CLOSE,
    "call:f{a:x" + _D + "}" + tokens.TOOL_CALL_CLOSE, "call:f{a:" + _D + "open", "call:f{a:1}", "call:f",
    "call:f{a:<|image|>}" + tokens.TOOL_CALL_CLOSE, "call:f{a:b<c}" + tokens.TOOL_CALL_CLOSE,
    "call:f(a=1)" + tokens.TOOL_CALL_CLOSE, ":call:f{}" + tokens.TOOL_CALL_CLOSE, "call:a{}call:b{}" + tokens.TOOL_CALL_CLOSE,
))
_EDGE_PIECES = tuple(tokens.CONTROL_TOKENS) + (
    tokens.THOUGHT_OPEN, tokens.THOUGHT_OPEN[:-1], "thought\n", tokens.CALL_KEYWORD, "call:f{", "<|tool_c", "<tool_call",
    "<|channel>tho", "<|", "<", "|>", "{", "}", "[", "]", ",", ":", " ", "\n", "<escape>", "x y", "1", "-1.5e3", "true",
    "\ud800", "\udc00")  # lone surrogates: a str may hold them


def edge_streams() -> st.SearchStrategy:
    """Markup in every place: whole, cut and stray markers, odd, invalid, nested and unclosed
    blocks, among text and canonical blocks."""
    piece = st.one_of(st.sampled_from(_EDGE_PIECES), st.sampled_from(_EDGE_BLOCKS), canonical_calls(), _prose())
    return st.lists(piece, max_size=12).map("".join)


def bounded_streams() -> st.SearchStrategy:
    """A few short pieces, mostly blocks of every size and depth up to a few dozen characters and
    levels: what small `max_block_chars` and `max_depth` cut, at and around their bounds."""
    sized = st.integers(0, 40).map(lambda k: tokens.TOOL_CALL_OPEN + "call:f{a:" + _D + "x" * k + _D + "}"
                                   + tokens.TOOL_CALL_CLOSE)
    nested = st.tuples(st.integers(0, 8), st.sampled_from(["[", "{b:"])).map(
        lambda p: tokens.TOOL_CALL_OPEN + "call:f{a:" + p[1] * p[0] + "1" + ("]" if p[1] == "[" else "}") * p[0] + "}"
        + tokens.TOOL_CALL_CLOSE)
    bare = st.sampled_from([tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE, tokens.TURN_CLOSE, tokens.EOS, "x", "{"])
    piece = st.one_of(sized, nested, bare, st.sampled_from(_EDGE_BLOCKS))
    return st.lists(piece, min_size=1, max_size=4).map("".join)


def mutated(text: str) -> st.SearchStrategy:
    """Mutations of `text`: deletions, insertions of markers/brackets/quotes, truncations."""
    def apply(draw_ops):
        out = text
        for kind, at, what in draw_ops:
            at = at % (len(out) + 1)
            if kind == "delete":
                out = out[:at] + out[at + 1 + what % 4:]
            elif kind == "insert":
                out = out[:at] + _MARKERS[what % len(_MARKERS)] + out[at:]
            else:
                out = out[:at]
        return out

    op = st.tuples(st.sampled_from(["delete", "insert", "insert", "truncate"]), st.integers(0, 10**6), st.integers(0, 10**6))
    return st.lists(op, min_size=1, max_size=4).map(apply)


def chunked(text: str) -> st.SearchStrategy:
    return st.lists(st.integers(0, max(len(text), 1)), max_size=12).map(
        lambda cuts: [text[a:b] for a, b in zip([0] + sorted(set(cuts)), sorted(set(cuts)) + [len(text)])])


def grammar_text(start: str) -> st.SearchStrategy:
    """Strings of the grammar's language for a block start rule, generated from the grammar."""
    from hypothesis.extra.lark import from_lark

    from . import grammar

    prose = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1)
    explicit = {
        "STRING": prose.map(lambda s: _D + s + _D) | st.just(_D + _D),
        "INTEGER": st.integers().map(str),
        "FLOAT": st.floats(allow_nan=False, allow_infinity=False).map(repr),
        "BARE_WORD": st.from_regex(r"[A-Za-z_][A-Za-z0-9_ ]{0,10}[A-Za-z0-9_]", fullmatch=True),
    }
    return from_lark(grammar.build(grammar.BLOCK_STARTS, cache=False), start=start, explicit=explicit)


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


class _Target:
    """An external parser speaking the JSONL protocol."""

    def __init__(self, command: str):
        self.process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, text: str) -> dict:
        self.process.stdin.write(json.dumps({"text": text}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the target closed its output")
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=10)


def run_campaign(stream_parser, examples: int = 200, seed: int = 0, target: str | None = None, progress=None) -> Report:
    """Run every differential property for `examples` examples each; collect shrunk failures.

    `stream_parser` is the streaming parser class under test (`gemma4_incremental.StreamParser`:
    this package does not import the streaming layer itself).
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis.errors import InvalidArgument

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
    external = _Target(target) if target else None
    if external:
        def against_target(data):
            text = data.draw(canonical_streams())
            ours = StreamParser(id_factory=iter(ids).__next__)
            events = ours.feed(text) + ours.flush()
            expected = {"calls": [{"name": e.name, "arguments": e.arguments} for e in events if isinstance(e, ToolCallEnd)],
                        "text": "".join(e.text for e in events if e.type == "text")}
            answer = external.ask(text)
            assert {"calls": answer.get("calls"), "text": answer.get("text")} == expected, (text, answer, expected)

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
    finally:
        if external:
            external.close()
    return report
