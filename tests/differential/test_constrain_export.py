"""The exports, checked by the engines themselves against the parser.

scope="call" without tools must accept exactly the language of `parse_call`: canonical calls,
blocks generated from the grammar, the conformance corpus and mutants are run through llguidance's
matcher (markers as special tokens), llguidance's GBNF reader and Python Lark, and compared with
`parse_call`, refusal positions included.
"""

from __future__ import annotations

import functools
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gemma4_lark import constrain, strategies, tokens
from gemma4_lark.errors import GemmaSyntaxError
from gemma4_lark.parser import parse_call, parse_output_document

from constrain_helpers import Matcher, gbnf_as_llguidance, lark_parser
from conftest import TESTS

CORPUS = TESTS / "conformance"
SETTINGS = settings(max_examples=80, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
STRUCTURE = set(" \t\r\n,{}[]")


def engine_matchers(scope: str) -> dict:
    """llguidance's matcher over the llguidance export, and over the GBNF export as its reader takes it."""
    return {
        "llguidance": Matcher(constrain.grammar("llguidance", scope=scope)),
        "gbnf": Matcher(gbnf_as_llguidance(constrain.grammar("gbnf", scope=scope))),
    }


@pytest.fixture(scope="module")
def call_matchers():
    return engine_matchers("call")


@pytest.fixture(scope="module")
def call_lark():
    return lark_parser(constrain.grammar("lark", scope="call"))


def strict(text: str):
    """(whether parse_call accepts, the error position or None); None for text the grammar
    accepts but parse_call refuses for a limit of its values (a number beyond a double, nesting
    deeper than max_depth): no grammar enforces those (docs/constrained-decoding.md)."""
    try:
        parse_call(text)
        return True, None
    except GemmaSyntaxError as exc:
        try:
            _block_grammar().parse(text, start="call_block")
        except Exception:
            return False, exc.pos
        return None


@functools.lru_cache(maxsize=1)
def _block_grammar():
    from gemma4_lark import grammar

    return grammar.build(grammar.BLOCK_STARTS)


def assert_agrees(matcher: Matcher, text: str):
    verdict = strict(text)
    if verdict is None:
        return
    ok, error_pos = verdict
    accepted, refused_at = matcher.accepted_prefix(text)
    assert accepted == ok, (text, error_pos, refused_at)
    if not ok and refused_at < len(text):
        # refused in the token where the parser reports the error: at its start, or inside it
        # (a prefix the engine could still complete, such as `cal` of `call:`)
        assert error_pos <= refused_at, (text, error_pos, refused_at)
        between = text[error_pos:refused_at]
        if between.startswith(tokens.STRING_DELIMITER):
            return  # a string: the parser names where it opened, the engine where it fails
        assert not (set(between) & STRUCTURE) and not any(m in between for m in tokens.CONTROL_TOKENS), \
            (text, error_pos, refused_at)


# --- accepted: what the parser accepts ----------------------------------------------------------
@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@SETTINGS
@given(block=strategies.canonical_calls())
def test_canonical_calls_accepted(call_matchers, engine, block):
    assert call_matchers[engine].accepts(block), block


@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@SETTINGS
@given(block=strategies.grammar_text("call_block"))
def test_grammar_generated_blocks_accepted(call_matchers, engine, block):
    assert strict(block) in (None, (True, None))
    assert call_matchers[engine].accepts(block), block


@SETTINGS
@given(block=strategies.grammar_text("call_block"))
def test_lark_export_parses_grammar_generated_blocks(call_lark, block):
    call_lark.parse(block)


@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@pytest.mark.parametrize("block", [
    # a marker's text inside a string: the model writes it as the special token
    '<|tool_call>call:say{text:<|"|>end with <turn|> then <|tool_call><|"|>}<tool_call|>',
    '<|tool_call>call:say{text:<|"|><eos><|"|>,n:<|"|>a<|"|<bos>b<|"|>}<tool_call|>',
    # and inside a bare word, where the grammar lets `<bos>` and `<eos>` stand
    "<|tool_call>call:say{w:a<bos>b c<eos>}<tool_call|>",
])
def test_markers_inside_strings_as_special_tokens(call_matchers, engine, block):
    assert strict(block) == (True, None)
    assert call_matchers[engine].accepts(block)


# --- refused: where the parser refuses ------------------------------------------------------------
@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@SETTINGS
@given(data=st.data())
def test_mutants_agree_with_parse_call(call_matchers, engine, data):
    text = data.draw(strategies.mutated(data.draw(strategies.canonical_calls())))
    assert_agrees(call_matchers[engine], text)


def _corpus(kind: str, start: str):
    for spec_path in sorted((CORPUS / kind).glob("*.json")):
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        if spec.get("start") == start:
            yield spec_path.stem, spec_path.with_suffix(".gemma").read_bytes().decode("utf-8"), spec


def _corpus_blocks():
    """The corpus' call blocks, and its values inside a call (a value document is a value)."""
    for kind in ("valid", "invalid"):
        for name, text, spec in _corpus(kind, "call_block"):
            yield f"{kind}/{name}", text
    for name, text, _ in _corpus("valid", "value_document"):
        yield f"valid/{name}", "<|tool_call>call:f{v:" + text + "}<tool_call|>"
    for name, text, _ in _corpus("invalid", "value_document"):
        yield f"invalid/{name}", "<|tool_call>call:f{v:" + text + "}<tool_call|>"


CORPUS_BLOCKS = list(_corpus_blocks())


def test_corpus_has_blocks():
    assert sum(1 for n, _ in CORPUS_BLOCKS if n.startswith("valid/")) >= 60
    assert sum(1 for n, _ in CORPUS_BLOCKS if n.startswith("invalid/")) >= 40


@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@pytest.mark.parametrize("name,text", CORPUS_BLOCKS, ids=[n for n, _ in CORPUS_BLOCKS])
def test_conformance_corpus(call_matchers, engine, name, text):
    assert_agrees(call_matchers[engine], text)


@pytest.mark.parametrize("name,text", CORPUS_BLOCKS, ids=[n for n, _ in CORPUS_BLOCKS])
def test_conformance_corpus_lark_export(call_lark, name, text):
    import lark

    verdict = strict(text)
    if verdict is None:
        return
    ok = verdict[0]
    try:
        call_lark.parse(text)
        parsed = True
    except lark.exceptions.LarkError:
        parsed = False
    assert parsed == ok


# --- generated: what the mask lets through parses ----------------------------------------------------
@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
def test_random_walks_produce_blocks_parse_call_accepts(call_matchers, engine):
    rng = random.Random(12)
    finished = 0
    for _ in range(60):
        text = call_matchers[engine].random_walk(rng)
        if text is None:
            continue
        finished += 1
        assert strict(text) in (None, (True, None)), text
    assert finished >= 20


# --- a whole turn -------------------------------------------------------------------------------------
def output_ok(text: str) -> bool:
    try:
        parse_output_document(text)
        return True
    except GemmaSyntaxError:
        return False


@pytest.fixture(scope="module")
def output_matchers():
    return engine_matchers("output")


@pytest.fixture(scope="module")
def output_matcher(output_matchers):
    return output_matchers["llguidance"]


@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@SETTINGS
@given(text=strategies.canonical_streams())
def test_output_accepts_canonical_streams(output_matchers, engine, text):
    assert output_ok(text)
    assert output_matchers[engine].accepts(text), text
    for stop in (tokens.TURN_CLOSE, tokens.TOOL_RESPONSE_OPEN, tokens.EOS):
        assert output_matchers[engine].accepts(text + stop)


@pytest.mark.parametrize("engine", ["llguidance", "gbnf"])
@SETTINGS
@given(data=st.data())
def test_output_mutants_agree_with_parse_output_document(output_matchers, engine, data):
    text = data.draw(strategies.mutated(data.draw(strategies.canonical_streams())))
    ok = output_ok(text)
    assert output_matchers[engine].accepts(text) == ok, text


def _lark_parses(text):
    import lark

    try:
        _output_lark().parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


def _marker_prefix_in_text(text):
    """Whether `text`, its markers taken out, still holds `<|`: free text where Python's `re`
    (first alternative wins) can stop a terminal early."""
    for marker in sorted(tokens.CONTROL_TOKENS, key=len, reverse=True):
        text = text.replace(marker, "")
    return "<|" in text


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_output_lark_export_refuses_what_the_parser_refuses(data):
    text = data.draw(strategies.canonical_streams())
    mutant = data.draw(strategies.mutated(text))
    assert output_ok(mutant) or not _lark_parses(mutant), mutant


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_output_lark_export_takes_canonical_turns(data):
    """Every canonical turn whose free text holds no `<|` but in markers (the documented limit of
    the Lark export: docs/constrained-decoding.md; the test below pins it)."""
    text = data.draw(strategies.canonical_streams())
    if not _marker_prefix_in_text(text):
        assert _lark_parses(text), text


@pytest.mark.xfail(strict=True, reason="Python Lark matches a terminal with re.match: the first alternative"
                                       " that matches wins, so free text with `<|` that is no marker can be"
                                       " cut short (docs/constrained-decoding.md); llguidance and GBNF take it")
@pytest.mark.parametrize("text", ["<|tool_c0", 'a <|c"h b'])
def test_output_lark_export_misses_free_text_with_a_marker_prefix(text):
    assert output_ok(text)
    assert _lark_parses(text)


@functools.lru_cache(maxsize=1)
def _output_lark():
    return lark_parser(constrain.grammar("lark", scope="output"))


CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
THOUGHT = "<|channel>thought\nCheck the weather.<channel|>"


def test_output_text_may_hold_the_string_delimiter_token(output_matcher):
    text = 'Write <|"|> to quote.' + CALL
    assert output_ok(text) and output_matcher.accepts(text)
    assert not output_matcher.accepts("Write <turn|x> then <|tool_call>.")


def test_output_thinking_off_refuses_thoughts():
    on = Matcher(constrain.grammar("llguidance", scope="output"))
    off = Matcher(constrain.grammar("llguidance", scope="output", thinking=False))
    assert on.accepts(THOUGHT + "It is sunny.")
    assert not off.accepts(THOUGHT + "It is sunny.")
    assert off.accepts("It is sunny." + CALL)


def test_output_tool_choice_none_refuses_calls():
    none = Matcher(constrain.grammar("llguidance", scope="output", tool_choice="none"))
    assert none.accepts("It is sunny.<turn|>")
    assert not none.accepts("Let me check." + CALL)


def test_output_tool_choice_required_needs_a_call_soon():
    from gemma4_lark.constrain._turns import MAX_PREFIX_CHARS

    required = Matcher(constrain.grammar("llguidance", scope="output", tool_choice="required"))
    assert required.accepts(CALL)
    assert required.accepts(THOUGHT + "Let me check." + CALL + "Done.<turn|>")
    assert not required.accepts("It is sunny.<turn|>")
    assert required.accepts("a" * MAX_PREFIX_CHARS + CALL)
    assert not required.accepts("a" * (MAX_PREFIX_CHARS + 1) + CALL)
    # the mask stops free text at the bound: only the call can come next
    rng = random.Random(3)
    for _ in range(10):
        text = required.random_walk(rng, max_tokens=MAX_PREFIX_CHARS + 200)
        if text is not None:
            assert tokens.TOOL_CALL_OPEN in text and output_ok(text), text


@pytest.mark.parametrize("options", [{}, {"thinking": False}, {"tool_choice": "required"}, {"tool_choice": "none"}])
def test_output_random_walks_parse(options):
    matcher = Matcher(constrain.grammar("llguidance", scope="output", **options))
    rng = random.Random(5)
    finished = 0
    for _ in range(40):
        text = matcher.random_walk(rng, max_tokens=700)
        if text is None:
            continue
        finished += 1
        assert output_ok(text), text
        if options.get("thinking") is False:
            assert tokens.CHANNEL_OPEN not in text
        if options.get("tool_choice") == "none":
            assert tokens.TOOL_CALL_OPEN not in text
        if options.get("tool_choice") == "required":
            assert tokens.TOOL_CALL_OPEN in text
    assert finished >= 10
