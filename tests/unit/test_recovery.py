"""The lenient recovery (gemma4_lark.recovery): on the language it reads what the grammar reads,
on anything else it never raises, and in the stream parser it recovers the real-world outputs
docs/leniency.md lists."""

import ast
import pathlib

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_lark as g
from gemma4_incremental import StreamParser, parse_output
from gemma4_lark import recovery, strategies
from gemma4_lark.recovery import decode_call

from conftest import shared_cases
from stream_helpers import assert_tiles, run
from conftest import REPO, TESTS


def test_recovery_is_independent_of_the_grammar():
    """SPEC section 4: the lenient decoder is written independently of the grammar code, so that
    its agreement with the strict parser on the language means something."""
    imported = set()
    for path in pathlib.Path(recovery.__file__).parent.glob("*.py"):  # every module of the decoder
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level > 1:  # the package's own siblings: `.`
                imported.add("." + (node.module or ""))
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module)
    assert {".diagnostics", ".schema.lexeme"} <= imported  # (what it does import is seen)
    forbidden = {".grammar", ".parser", ".values", ".lalr", ".errors", ".validate", ".fastpath", ".possessive",
                 "gemma4_lark.grammar", "gemma4_lark.parser", "gemma4_lark.values", "gemma4_lark.lalr",
                 "gemma4_lark.errors", "gemma4_lark.fastpath"}
    assert not imported & forbidden, imported & forbidden
    assert not any(name.split(".")[0] == "lark" for name in imported)


# --- on the language: what the grammar reads ------------------------------------------------------
@given(strategies.calls())
def test_decode_call_agrees_with_parse_call_on_canonical_calls(name_arguments):
    block = strategies.canonical_call(*name_arguments)
    decoded = decode_call(block)
    assert decoded.call == g.parse_call(block) and decoded.diagnostics == []


@settings(max_examples=100)
@given(strategies.grammar_text("call_block"))
def test_decode_call_agrees_with_parse_call_on_grammar_generated_blocks(block):
    assert decode_call(block).call == g.parse_call(block)


def test_decode_call_agrees_on_the_valid_corpus():
    corpus = TESTS / "conformance" / "valid"
    checked = 0
    for path in sorted(corpus.glob("call-*.gemma")):
        text = path.read_text(encoding="utf-8")
        assert decode_call(text).call == g.parse_call(text), path.name
        checked += 1
    assert checked >= 15


# --- anywhere else: never raises ------------------------------------------------------------------
@given(st.text())
def test_decode_call_never_raises_on_any_text(text):
    decode_call(text)
    decode_call("<|tool_call>call:f{" + text)


def test_deep_nesting_never_recurses():
    block = "<|tool_call>call:f{a:" + "[" * 5000 + "]" * 5000 + "}<tool_call|>"
    assert decode_call(block).call is None
    assert decode_call(block, max_depth=6000).call is not None


# --- the lenient path in the stream parser ----------------------------------------------------
def test_rejected_block_is_recovered_with_the_grammar_error_attached():
    [call] = parse_output('<|tool_call>call:search{query:"raw",note:<|"|>x<|"|>}<tool_call|>').calls
    assert call.recovered and call.arguments == {"query": "raw", "note": "x"}
    assert call.diagnostics[0].code == "syntax" and "JSON-quoted" in call.diagnostics[0].message
    assert "json-string" in [d.code for d in call.diagnostics]


@given(st.data())
def test_mutated_streams_tile(data):
    text = data.draw(strategies.mutated(data.draw(strategies.canonical_streams())))
    chunks = data.draw(strategies.chunked(text))
    for options in ({}, {"start_in_thinking": True}, {"parse_thinking": False}):
        assert_tiles(run(chunks, StreamParser, **options), text)


@given(st.text(alphabet=st.sampled_from(list('<|>"{}[],:tolcaTURNreshponsenbv_\n ')), max_size=60))
def test_marker_alphabet_soup(text):
    assert_tiles(run([text], StreamParser), text)
    assert_tiles(run(list(text), StreamParser), text)


# --- real-world outputs -----------------------------------------------------------------------
# Each case is either reproduced ("match") or deliberately not, with the reason (docs/leniency.md).
START_IN_THINKING = {"vllm-45834-prompt-ends-inside-thought", "ollama-18307-call-inside-unclosed-thinking",
                     "ollama-18288-unmatched-channel-close-in-content"}
NOT_REPRODUCED = {
    "ollama-15315-raw-multiline-terminal-string": "an undelimited string with commas cannot be told from members",
    "llamacpp-21760-missing-channel-opener": "the label was already streamed as text when the closer came",
    "omlx-1837-missing-colon-after-call": "`calldone` needs the tool registry to be split",
    "omlx-capitalized-boolean": "`True` is a bare word in the grammar; no schema coercion",
    "unsloth-wrapperless-space-before-colon": "a bare call after prose needs the tool registry",
    "openclaude-380-stripped-tokens-bare-values": "with every special token stripped, the label is prose",
    "litert-trailing-duplicate-parameter-in-string": "the stray `,Description:` stays inside the string",
    "vllm-colon-prefixed-call": "a block unclosed at the end of the stream is an error (it may be cut off)",
    "omlx-1846-paren-kwargs-call": "a bare block opens only on `call:NAME{`; inside <|tool_call> it is recovered",
    "omlx-paren-single-quoted-live": "a bare block opens only on `call:NAME{`; inside <|tool_call> it is recovered",
}


@pytest.mark.parametrize("case", shared_cases("realworld-cases.jsonl"), ids=lambda c: c["id"] if c else "absent")
def test_real_world_case(case):
    options = {"start_in_thinking": case["id"] in START_IN_THINKING}
    for chunks in ([case["raw"]], list(case["raw"])):
        assert_tiles(run(chunks, StreamParser, **options), case["raw"])
    out = parse_output(case["raw"], **options)
    expected = case["expected"]
    if expected is None:  # no agreed parse: nothing invented, nothing lost
        assert all(c.recovered for c in out.calls)
        return
    got = {"calls": [{"name": c.name, "arguments": c.arguments} for c in out.calls], "text": out.text.strip()}
    want = {"calls": expected["calls"], "text": expected["text"].strip()}
    if "reasoning" in expected:
        got["reasoning"] = "".join(out.thinking).strip()
        want["reasoning"] = expected["reasoning"].strip()
    if case["id"] in NOT_REPRODUCED:
        assert got != want, "reproduced now: move it out of NOT_REPRODUCED and update docs/leniency.md"
    else:
        assert got == want


def test_real_world_decisions_are_documented():
    doc = (REPO / "docs" / "leniency.md").read_text(encoding="utf-8")
    for case_id in NOT_REPRODUCED:
        assert case_id in doc, case_id
