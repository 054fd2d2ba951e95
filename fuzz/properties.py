"""The properties, and the campaigns that run them (entry point x strategy x property).

Each check takes one drawn example and raises AssertionError (or lets an undocumented exception
through) when the promise does not hold. What each entry point may raise comes from its docs:

    parse_*              GemmaSyntaxError (a ValueError), positioned inside the text; TypeError
                         for a non-str
    validate             nothing: diagnostics, positioned and in order; no error exactly when
                         the grammar accepts the text
    StreamParser         nothing on str chunks (TypeError for others, RuntimeError after flush)
    decode_call          nothing ("never raises")
    renderers            UnsafeContentError (a ValueError) for content they refuse
    readers              GemmaSyntaxError for text that is not a transcript
    the command line     exit 0, 1 or 2, never a traceback
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable

from hypothesis import strategies as st

import gemma4_lark
import gemma4_lark.fuzz
import gemma4_lark.strategies
from gemma4_lark import tokens
from gemma4_lark.diagnostics import Diagnostic, line_and_column
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.events import Text, ThinkingDelta, ToolCallEnd, ToolCallError, ToolCallStart
from gemma4_lark.messages import read_official, read_omp
from gemma4_lark.recovery import decode_call
from gemma4_lark.reference import ReferenceScanner
from gemma4_lark.render import js, official, omp
from gemma4_lark.render.safety import UnsafeContentError
from gemma4_lark.validate import start_rule_of, validate
from gemma4_incremental import StreamParser
from gemma4_incremental.output import merge_deltas

from . import strategies as s


# --- helpers ---------------------------------------------------------------------------------------
def _ids():
    numbers = itertools.count()
    return lambda: f"call_{next(numbers)}"


def run_stream(chunks, options, cls=StreamParser) -> list:
    parser = cls(id_factory=_ids(), **options)
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.flush())
    return events


merged = merge_deltas


def by_value(value):
    """A value with numbers compared as doubles (OMP writes them as JavaScript does) and -0.0 as 0."""
    def norm(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            try:
                f = float(v)
            except OverflowError:
                return v
            return 0.0 if f == 0 else f
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v

    return norm(value)


def _positioned(err: GemmaSyntaxError, text: str, who: str) -> None:
    assert 0 <= err.pos <= len(text), f"{who}: error position {err.pos} outside the text (length {len(text)})"
    assert (err.line, err.column) == line_and_column(text, err.pos), (
        f"{who}: line/column {(err.line, err.column)} do not match position {err.pos}")


# --- strict parser and validate --------------------------------------------------------------------
PARSE_FUNCTIONS = ("parse_call", "parse_response", "parse_declaration", "parse_value", "parse_thought",
                   "parse_output_document", "parse_transcript")


def check_parse(name: str) -> Callable:
    function = getattr(gemma4_lark, name)

    def check(text: str) -> None:
        try:
            function(text)
        except GemmaSyntaxError as err:
            _positioned(err, text, name)
    check.__name__ = f"check_{name}"
    return check


def check_parse_types(value) -> None:
    for name in PARSE_FUNCTIONS:
        try:
            getattr(gemma4_lark, name)(value)
        except TypeError:
            continue
        raise AssertionError(f"{name}({value!r}) did not raise TypeError")
    try:
        validate(value)
    except TypeError:
        pass
    else:
        raise AssertionError(f"validate({value!r}) did not raise TypeError")
    parser = StreamParser()
    try:
        parser.feed(value)
    except TypeError:
        pass
    else:
        raise AssertionError(f"StreamParser.feed({value!r}) did not raise TypeError")


def check_validate(text: str) -> None:
    diagnostics = validate(text)
    assert all(isinstance(d, Diagnostic) for d in diagnostics)
    assert [d.pos for d in diagnostics] == sorted(d.pos for d in diagnostics), "diagnostics out of order"
    for d in diagnostics:
        assert 0 <= d.pos <= len(text), f"diagnostic at {d.pos} outside the text (length {len(text)})"
        assert (d.line, d.column) == line_and_column(text, d.pos), f"line/column of {d} do not match its position"
    start, _ = start_rule_of(text)
    try:
        gemma4_lark.parser.parse(text, start)
        accepted = True
    except GemmaSyntaxError:
        accepted = False
    has_error = any(d.severity == "error" for d in diagnostics)
    assert has_error != accepted, f"validate says {'invalid' if has_error else 'valid'}, the parser (start {start}) {'accepts' if accepted else 'rejects'}"


# --- the streaming layer ---------------------------------------------------------------------------
def stream_cases(text=None) -> st.SearchStrategy:
    """(text, chunks, options): a hostile stream, a chunking of it, parser options."""
    texts = text if text is not None else s.hostile_streams()
    return texts.flatmap(lambda t: st.tuples(st.just(t), s.chunkings(t), s.stream_options()))


def check_stream_no_exception(case, cls=StreamParser) -> None:
    text, chunks, options = case
    run_stream(chunks, options, cls)


def check_stream_tiles(case, cls=StreamParser) -> None:
    """Spans tile the stream; a text or thinking event holds exactly the text of its span; a
    call's raw text is the stream's text that ends where its span ends."""
    text, chunks, options = case
    events = run_stream(chunks, options, cls)
    pos = 0
    for event in events:
        start, end = event.span
        assert start == pos and end >= start, f"{event!r} does not start where the last event ended ({pos})"
        pos = end
        if isinstance(event, (Text, ThinkingDelta)):
            assert event.text == text[start:end], f"{type(event).__name__} text differs from its span: {event!r}"
    assert pos == len(text), f"the events end at {pos}, the stream at {len(text)}"


def check_stream_chunking(case, cls=StreamParser) -> None:
    """The same events whatever the chunking (text and thinking deltas compared merged)."""
    text, chunks, options = case
    whole = merged(run_stream([text], options, cls))
    pieces = merged(run_stream(chunks, options, cls))
    assert whole == pieces, "events differ by chunking"


def check_stream_no_lost_call(case, cls=StreamParser) -> None:
    """Every `<|tool_call>` opens a block that ends in a call or an error: none is left in text or
    thinking, and every block started is finished, once."""
    text, chunks, options = case
    events = merged(run_stream(chunks, options, cls))
    for event in events:
        if isinstance(event, (Text, ThinkingDelta)):
            assert tokens.TOOL_CALL_OPEN not in event.text, f"{tokens.TOOL_CALL_OPEN} lost in {event!r}"
    open_id = None
    finished = set()
    for event in events:
        if isinstance(event, ToolCallStart):
            assert open_id is None, f"{event!r} while block {open_id} is open"
            open_id = event.id
        elif isinstance(event, (ToolCallEnd, ToolCallError)):
            assert open_id in (None, event.id), f"{event!r} ends block {event.id}, but {open_id} is open"
            assert event.id not in finished, f"block {event.id} finished twice"
            finished.add(event.id)
            open_id = None
        else:
            assert open_id is None, f"{event!r} while block {open_id} is open"
    assert open_id is None, f"block {open_id} started and never finished"


def _block_of(events, i):
    """(first, last): the indexes of the call events of the block that holds the call event
    events[i], read from the events alone. A block's events are contiguous; a new block starts at a
    tool_call_start or at a call event whose raw begins with `<|tool_call>`, and a block ends at a
    raw ending in `<tool_call|>` or at any other event."""
    opener, closer = tokens.TOOL_CALL_OPEN, tokens.TOOL_CALL_CLOSE

    def call(e):
        return isinstance(e, (ToolCallEnd, ToolCallError))

    def closed(e):
        return e.raw.rstrip(" \t\r\n").endswith(closer)

    def opens(e):
        return e.raw.lstrip(" \t\r\n").startswith(opener)

    first = i
    while (first > 0 and not opens(events[first]) and call(events[first - 1])
           and not closed(events[first - 1])):
        first -= 1
    last = i
    while last + 1 < len(events) and not closed(events[last]) and call(events[last + 1]) \
            and not opens(events[last + 1]):
        last += 1
    return first, last


def check_stream_nothing_invented(case, cls=StreamParser) -> None:
    """A successful call is a block the stream holds, closed, within the size limit; a call not
    marked as recovered is what the grammar reads; strict mode never recovers. A call of a block
    opened by `<|tool_call>` and cut off by the end of the stream is never a success, whichever call
    of the block it is."""
    text, chunks, options = case
    events = run_stream(chunks, options, cls)
    for i, event in enumerate(events):
        if not isinstance(event, ToolCallEnd):
            continue
        start, end = event.span
        assert text[end - len(event.raw):end] == event.raw, f"raw {event.raw!r} is not the stream's text before {end}"
        assert len(event.raw) <= options["max_block_chars"], (
            f"a successful call of {len(event.raw)} chars exceeds max_block_chars={options['max_block_chars']}")
        first, last = _block_of(events, i)
        block_end = events[last].span[1]
        opened = events[first].raw.lstrip(" \t\r\n").startswith(tokens.TOOL_CALL_OPEN)
        if (opened and block_end == len(text)
                and not events[last].raw.rstrip(" \t\r\n").endswith(tokens.TOOL_CALL_CLOSE)):
            raise AssertionError(f"a block cut by the end of the stream gives a successful call: {event.raw!r}")
        if options["strict"]:
            assert not event.recovered, f"strict mode recovered {event.raw!r}"
        if not event.recovered:
            call = gemma4_lark.parse_call(event.raw if event.raw.rstrip().endswith(tokens.TOOL_CALL_CLOSE)
                                          else event.raw + tokens.TOOL_CALL_CLOSE, max_depth=options["max_depth"])
            assert (call.name, call.arguments) == (event.name, event.arguments), (
                f"unrecovered call {event.name} {event.arguments!r} is not what the grammar reads: {call!r}")


# --- the oracle ----------------------------------------------------------------------------------------
def reference_options(small: bool = False) -> st.SearchStrategy:
    """`stream_options()` for the strict differential (the oracle reads strictly only); `small`:
    limits small enough for the blocks of `bounded_streams()` to cross."""
    if not small:
        return s.stream_options().map(lambda options: {**options, "strict": True})
    return st.fixed_dictionaries({"strict": st.just(True), "parse_thinking": st.booleans(),
                                  "start_in_thinking": st.booleans(), "max_block_chars": st.integers(1, 70),
                                  "max_depth": st.integers(1, 9)})


def reference_cases(text=None) -> st.SearchStrategy:
    texts = text if text is not None else st.one_of(s.hostile_streams(), gemma4_lark.strategies.edge_streams())
    return texts.flatmap(lambda t: st.tuples(st.just(t), s.chunkings(t), reference_options()))


def check_reference_agrees(case) -> None:
    """The oracle and StreamParser, both strict, give the same events (`gemma4_lark.fuzz.comparable`:
    types, spans, texts, ids, names, typed arguments, diagnostics, which blocks fail and their code)."""
    text, chunks, options = case
    options = {**options, "strict": True}
    ours = gemma4_lark.fuzz.comparable(run_stream(chunks, options))
    oracle = gemma4_lark.fuzz.comparable(run_stream(chunks, options, ReferenceScanner))
    if ours != oracle:
        at = next(i for i, (a, b) in enumerate(itertools.zip_longest(ours, oracle)) if a != b)
        raise AssertionError(f"event {at} differs: StreamParser {ours[at] if at < len(ours) else None!r},"
                             f" ReferenceScanner {oracle[at] if at < len(oracle) else None!r}")


def _strictly(check):
    """`check` run on the oracle, which reads strictly only."""
    return lambda case: check((case[0], case[1], {**case[2], "strict": True}), ReferenceScanner)


# --- the lenient decoder ----------------------------------------------------------------------------
def check_decode_call(block: str) -> None:
    decoded = decode_call(block)
    for d in decoded.diagnostics:
        assert d.code != "internal", f"decode_call failed inside: {d.message}"
        assert 0 <= d.pos <= len(block), f"diagnostic at {d.pos} outside the block (length {len(block)})"
        assert (d.line, d.column) == line_and_column(block, d.pos), f"line/column of {d} do not match its position"
    try:
        strict = gemma4_lark.parse_call(block)
    except GemmaSyntaxError:
        return
    assert decoded.call == strict, f"the grammar reads {strict!r}, decode_call {decoded.call!r}"


# --- renderers, and reading back ---------------------------------------------------------------------
REFUSALS = (UnsafeContentError,)


def check_omp_tool_call(case) -> None:
    """render_tool_call: refuses, or writes a block the grammar reads as the same call."""
    name, arguments, unsafe = case
    try:
        text = omp.render_tool_call(name, arguments, unsafe=unsafe)
    except REFUSALS:
        return
    call = gemma4_lark.parse_call(text)
    if unsafe == "error":
        assert call.name == name, f"name {name!r} reads back as {call.name!r}"
        assert by_value(call.arguments) == by_value(arguments), f"arguments read back as {call.arguments!r}"
    else:
        assert omp.render_tool_call(call.name, call.arguments, unsafe="error") == text, "stripped output is not stable"


def check_omp_tool_results(case) -> None:
    results, unsafe = case
    try:
        text = omp.render_tool_results(results, unsafe=unsafe)
    except REFUSALS:
        return
    read = list(gemma4_lark.parser.parse(text, "response_blocks")) if results else []
    assert len(read) == len(results), f"{len(results)} results read back as {len(read)}"
    if unsafe == "error":
        for result, response in zip(results, read):
            assert response.name == result["name"], f"name {result['name']!r} reads back as {response.name!r}"
            try:
                expected = js.parse_json(result["text"])
            except ValueError:
                expected = result["text"]
            assert by_value(response.fields) == by_value({"output": expected}), f"result reads back as {response.fields!r}"


def check_omp_thinking(case) -> None:
    text, unsafe = case
    try:
        out = omp.render_thinking(text, unsafe=unsafe)
    except REFUSALS:
        return
    if not out:  # empty thinking writes nothing; so does thinking that strips to nothing
        assert not text or unsafe == "strip", f"{text!r} wrote nothing"
        return
    thought = gemma4_lark.parse_thought(out)
    if unsafe == "error":
        assert thought.text == text, f"thinking reads back as {thought.text!r}"


def _as_system_content(text: str) -> None:
    """`text`, written as a system turn's content, reads back as that content and nothing else."""
    prompt = tokens.BOS + tokens.TURN_OPEN + "system\n" + text + tokens.TURN_CLOSE
    transcript = gemma4_lark.parse_transcript(prompt)
    assert len(transcript.turns) == 1, f"the content makes {len(transcript.turns)} turns"
    parts = transcript.turns[0].parts
    assert all(isinstance(p, gemma4_lark.Text) for p in parts), f"the content reads as structure: {parts!r}"
    assert "".join(p.text for p in parts) == text, "the content reads back different"


def check_omp_inventory(case) -> None:
    tools, unsafe, which = case
    render = omp.render_tool_inventory if which == "inventory" else omp.render_tool_catalog
    try:
        text = render(tools, unsafe=unsafe)
    except REFUSALS:
        return
    _as_system_content(text)


def _omp_structure(messages) -> dict:
    """What a reader must give back of an OMP conversation (error policy: nothing stripped)."""
    out = {"turns": [], "thinking": [], "text": [], "calls": [], "results": []}
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer", "user"):
            content = m.get("content")
            if not isinstance(content, str):
                content = "".join(p.get("text", "") if p.get("type") == "text" else f"[Image: {p.get('mimeType', '')}]"
                                  for p in content or [] if p.get("type") in ("text", "image"))
            out["turns"].append(("user" if role == "user" else "system", content))
        elif role == "assistant":
            parts = m.get("content") or []
            thinking = "\n".join(p.get("thinking", "") for p in parts if p.get("type") == "thinking")
            if thinking:
                out["thinking"].append(thinking)
            out["text"].append("".join(p.get("text", "") for p in parts if p.get("type") == "text"))
            out["calls"] += [(p.get("name"), by_value(p.get("arguments") or {})) for p in parts if p.get("type") == "toolCall"]
        elif role == "toolResult":
            text = "".join(p.get("text", "") for p in m.get("content") or [] if p.get("type") == "text")
            try:
                value = js.parse_json(text)
            except ValueError:
                value = text
            out["results"].append((m.get("toolName"), by_value(value)))
    out["text"] = "".join(out["text"])
    return out


def check_omp_transcript(case) -> None:
    """render_transcript: refuses, or read_omp gives back the same conversation and rendering
    that gives the same text."""
    messages, unsafe = case
    try:
        text = omp.render_transcript(messages, unsafe=unsafe)
    except REFUSALS:
        return
    read = read_omp(text)
    assert omp.render_transcript(read, unsafe=unsafe) == text, "render(read(prompt)) differs from the prompt"
    if unsafe == "error":
        expected, got = _omp_structure(messages), _omp_structure(read)
        for key in expected:
            assert expected[key] == got[key], f"{key}: rendered {expected[key]!r}, read back {got[key]!r}"


def _official_sequence(content, model: bool) -> list:
    """Content as a list of text and media markers, as the template writes it."""
    if isinstance(content, str):
        return [official.strip_thinking(content) if model else content.strip()]
    if isinstance(content, list):
        out = []
        for part in content:
            if part.get("type") == "text":
                t = part.get("text", "")
                out.append(official.strip_thinking(t) if model else str(t).strip())
            elif part.get("type") in ("image", "image_url", "audio", "input_audio", "video"):
                out.append(("media", {"image_url": "image", "input_audio": "audio"}.get(part["type"], part["type"])))
        return out
    return []


def _joined(seq) -> list:
    out = []
    for item in seq:
        if isinstance(item, str):
            if out and isinstance(out[-1], str):
                out[-1] += item
            elif item:
                out.append(item)
        else:
            out.append(item)
    return out


def _official_structure(messages, tools) -> dict:
    out = {"system": "", "users": [], "assistant_text": [], "reasoning": [], "calls": [], "results": [], "tools": []}
    loop = list(messages)
    if loop and loop[0]["role"] in ("system", "developer"):
        content = loop.pop(0).get("content")
        out["system"] = content.strip() if isinstance(content, str) else content
    last_user = max((i for i, m in enumerate(loop) if m["role"] == "user"), default=-1)
    for i, m in enumerate(loop):
        role = m["role"]
        if role == "assistant":
            out["assistant_text"] += _official_sequence(m.get("content"), True)
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if reasoning and i > last_user:
                out["reasoning"].append(reasoning)
            out["calls"] += [(c["function"]["name"], by_value(c["function"].get("arguments") or {}))
                             for c in m.get("tool_calls") or []]
        elif role == "tool":
            content = m.get("content")
            out["results"].append(by_value(content if isinstance(content, dict) and list(content) != ["value"]
                                           else {"value": content.get("value") if isinstance(content, dict) else content}))
        else:
            out["users"].append((role, _joined(_official_sequence(m.get("content"), False))))
    out["assistant_text"] = _joined(out["assistant_text"])
    for tool in tools or []:
        function = tool["function"]
        params = function.get("parameters") or {}
        out["tools"].append((function["name"], function.get("description", ""),
                             sorted((params.get("properties") or {})), list(params.get("required") or [])))
    return out


def _read_structure(prompt) -> dict:
    messages = list(prompt.messages)
    tools = []
    for tool in prompt.tools:
        function = dict(tool["function"])
        params = function.get("parameters") or {}
        function["parameters"] = {"properties": params.get("properties") or {}, "required": params.get("required") or []}
        tools.append({"function": function})
    out = _official_structure(messages, tools)
    # read_official gives a reasoning back with its message; the template wrote only the recent ones
    out["reasoning"] = [m["reasoning_content"] for m in messages if m.get("reasoning_content")]
    return out


def check_official_chat(case) -> None:
    """render_chat: refuses, or read_official gives back the same conversation (calls, results,
    tool declarations, roles and texts) and rendering that again gives the same prompt."""
    messages, tools, options, unsafe = case
    try:
        text = official.render_chat(messages, tools, unsafe=unsafe, **options)
    except REFUSALS:
        return
    read = read_official(text)
    again = official.render_chat(unsafe=unsafe, variant=options["variant"], **read.render_kwargs())
    assert again == text, "render(read(prompt)) differs from the prompt"
    if unsafe == "error":
        expected, got = _official_structure(messages, tools), _read_structure(read)
        for key in expected:
            assert expected[key] == got[key], f"{key}: rendered {expected[key]!r}, read back {got[key]!r}"


def check_readers(text: str) -> None:
    """read_official and read_omp: a transcript, or GemmaSyntaxError; read_omp also refuses, naming
    the turn, a transcript its profile never writes."""
    for reader in (read_official, read_omp):
        try:
            reader(text)
        except GemmaSyntaxError as err:
            _positioned(err, text, reader.__name__)
        except ValueError as err:
            if reader is not read_omp or "which the omp profile never writes" not in str(err):
                raise


# --- the command line --------------------------------------------------------------------------------
_CLI = [sys.executable, "-m", "gemma4_lark"]


def cli_cases() -> st.SearchStrategy:
    """(argv after the program, standard input as bytes)."""
    text = st.one_of(s.hostile_streams(), s.hostile_transcripts())
    data = st.one_of(text.map(lambda t: t.encode("utf-8", "surrogatepass")),
                     text.map(lambda t: t.encode("utf-8", "surrogatepass") + b"\xff\xfe" + b"x"))
    depth = st.sampled_from([[], [], ["--max-depth", "1"], ["--max-depth", "-1"], ["--max-depth", "100000"]])
    validate_args = st.tuples(st.just(["validate", "-"]), st.sampled_from([[], ["--json"]]), depth)
    decode_args = st.tuples(st.just(["decode", "-"]), st.sampled_from([[], ["--indent", "2"]]), depth)
    parse_args = st.tuples(
        st.just(["parse", "-"]),
        st.lists(st.sampled_from(["--strict", "--no-thinking", "--start-in-thinking"]), unique=True).map(list),
        st.tuples(st.sampled_from(["events", "summary", "openai"]), st.sampled_from([0, 1, 3, 64, -1])).map(
            lambda t: ["--format", t[0], "--chunk", str(t[1])]))
    texts = st.tuples(st.one_of(validate_args, decode_args, parse_args).map(lambda t: t[0] + t[1] + t[2]), data)
    render = st.tuples(st.tuples(st.sampled_from(["official", "omp"]), st.sampled_from(["error", "strip"])).map(
        lambda t: ["render", "-", "--profile", t[0], "--unsafe", t[1]]),
        st.one_of(s.official_messages(), s.omp_messages(), s.values(4)).map(
            lambda v: json.dumps(v, ensure_ascii=False).encode()))
    return st.one_of(texts, texts, render)


def check_cli(case) -> None:
    argv, data = case
    done = subprocess.run(_CLI + argv, input=data, capture_output=True, timeout=60)
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, f"gemma4-lark {' '.join(argv)}: traceback\n{err[-1500:]}"
    assert done.returncode in (0, 1, 2), f"gemma4-lark {' '.join(argv)}: exit {done.returncode}\n{err[-500:]}"
    if argv[0] == "parse" and done.returncode in (0, 1):
        out = done.stdout.decode("utf-8")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return
        if "--format" in argv and argv[argv.index("--format") + 1] == "events":
            events = [json.loads(line) for line in out.splitlines() if line.strip()]
            end = events[-1]["span"][1] if events else 0
            assert end == len(text), f"gemma4-lark {' '.join(argv)}: events cover {end} of {len(text)} characters"
        elif "openai" in argv:
            message = json.loads(out)
            summary = subprocess.run(_CLI + ["parse", "-", "--format", "summary"] + [a for a in argv if a in (
                "--strict", "--no-thinking", "--start-in-thinking")], input=data, capture_output=True, timeout=60)
            listed = [e["raw"] for e in message.get("tool_call_errors", [])]
            for error in json.loads(summary.stdout)["errors"]:
                # compared as decoded strings: the JSON output escapes control characters
                assert error["raw"] in listed and error["raw"] in (message.get("content") or ""), (
                    f"gemma4-lark {' '.join(argv)}: the failed block {error['raw']!r} is not in the openai output")


# --- the campaigns -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Campaign:
    name: str                 # property.entry_point, unique
    entry_point: str
    strategy: Callable        # () -> SearchStrategy (built lazily: some are slow to build)
    check: Callable
    weight: float = 1.0       # share of the budget (a subprocess example costs ~100 simple ones)


def _stream_strategy():
    return stream_cases()


def _renderer(strategy, *more):
    return lambda: st.tuples(strategy(), *(m() for m in more), st.sampled_from(["error", "error", "strip"]))


def _official_case():
    options = st.fixed_dictionaries({"add_generation_prompt": st.booleans(), "enable_thinking": st.booleans(),
                                     "variant": st.sampled_from(["e2b", "31b"])})
    return st.tuples(s.official_messages(), st.one_of(st.none(), s.official_tools()), options,
                     st.sampled_from(["error", "error", "strip"]))


def _wrong_types():
    return st.one_of(st.none(), st.integers(), st.binary(max_size=8), st.lists(st.text(max_size=3), max_size=2))


CAMPAIGNS = tuple(
    [Campaign(f"only-syntax-errors.{name}", f"gemma4_lark.{name}", s.any_text, check_parse(name)) for name in PARSE_FUNCTIONS]
    + [
        Campaign("wrong-types.parse_*+validate+feed", "gemma4_lark.parse_* / validate / StreamParser.feed", _wrong_types,
                 check_parse_types, 0.2),
        Campaign("diagnostics-and-agreement.validate", "gemma4_lark.validate", s.any_text, check_validate),
        Campaign("no-exception.StreamParser", "gemma4_incremental.StreamParser", _stream_strategy, check_stream_no_exception),
        Campaign("spans-tile.StreamParser", "gemma4_incremental.StreamParser", _stream_strategy, check_stream_tiles),
        Campaign("chunking-invariance.StreamParser", "gemma4_incremental.StreamParser", _stream_strategy, check_stream_chunking),
        Campaign("no-lost-call.StreamParser", "gemma4_incremental.StreamParser", _stream_strategy, check_stream_no_lost_call),
        Campaign("nothing-invented.StreamParser", "gemma4_incremental.StreamParser", _stream_strategy,
                 check_stream_nothing_invented),
        Campaign("never-raises.decode_call", "gemma4_lark.recovery.decode_call",
                 lambda: st.one_of(s.hostile_blocks("call_block"), s.hostile_streams()), check_decode_call),
        Campaign("spans-tile.ReferenceScanner", "gemma4_lark.reference.ReferenceScanner", _stream_strategy,
                 _strictly(check_stream_tiles)),
        Campaign("chunking-invariance.ReferenceScanner", "gemma4_lark.reference.ReferenceScanner", _stream_strategy,
                 _strictly(check_stream_chunking)),
        Campaign("agreement.ReferenceScanner", "gemma4_lark.reference.ReferenceScanner = StreamParser(strict=True)",
                 reference_cases, check_reference_agrees),
        Campaign("round-trip-or-refusal.omp.render_tool_call", "gemma4_lark.render.omp.render_tool_call",
                 _renderer(s.names, s.arguments), check_omp_tool_call),
        Campaign("round-trip-or-refusal.omp.render_tool_results", "gemma4_lark.render.omp.render_tool_results",
                 _renderer(lambda: st.lists(st.fixed_dictionaries({"name": s.names(), "text": st.one_of(
                     s.hostile_strings(), s.values(6).map(s._json))}), max_size=3)), check_omp_tool_results),
        Campaign("round-trip-or-refusal.omp.render_thinking", "gemma4_lark.render.omp.render_thinking",
                 _renderer(s.hostile_strings), check_omp_thinking),
        Campaign("round-trip-or-refusal.omp.render_tool_inventory+catalog",
                 "gemma4_lark.render.omp.render_tool_inventory / render_tool_catalog",
                 lambda: st.tuples(s.omp_tools(), st.sampled_from(["error", "strip"]),
                                   st.sampled_from(["inventory", "catalog"])), check_omp_inventory),
        Campaign("round-trip-or-refusal.omp.render_transcript+read_omp",
                 "gemma4_lark.render.omp.render_transcript / gemma4_lark.messages.read_omp",
                 _renderer(s.omp_messages), check_omp_transcript),
        Campaign("round-trip-or-refusal.official.render_chat+read_official",
                 "gemma4_lark.render.official.render_chat / gemma4_lark.messages.read_official",
                 _official_case, check_official_chat),
        Campaign("only-syntax-errors.read_official+read_omp", "gemma4_lark.messages.read_official / read_omp",
                 s.hostile_transcripts, check_readers),
        Campaign("no-traceback.cli", "gemma4-lark (subprocess)", cli_cases, check_cli, 0.02),
    ])


def campaign(name: str) -> Campaign:
    for c in CAMPAIGNS:
        if c.name == name:
            return c
    raise KeyError(name)
