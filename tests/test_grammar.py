"""The grammar file itself: it builds strictly, documents every rule and terminal, stays ASCII, and
the lean LALR driver agrees with Lark's own parser on everything it is given."""

import functools
import re

import lark
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.lark import from_lark

import gemma4_lark as g
from gemma4_lark import grammar, tokens
from gemma4_lark.parser import block_parser, document_parser, parse

from conftest import REPO


@pytest.fixture(scope="module", params=[grammar.BLOCK_STARTS, grammar.DOCUMENT_STARTS], ids=["blocks", "documents"])
def strict_parser(request):
    return grammar.build(request.param, strict=True)


def test_builds_in_strict_mode(strict_parser):
    # strict=True: Lark raises on any shift/reduce or reduce/reduce conflict and on regex collisions
    assert strict_parser.options.parser == "lalr" and strict_parser.options.lexer == "contextual"


def test_grammar_file_is_the_packaged_resource():
    assert grammar.grammar_text() == (REPO / "grammar" / "gemma4.lark").read_text(encoding="utf-8")


def _all_symbols():
    full = grammar.build(grammar.BLOCK_STARTS + grammar.DOCUMENT_STARTS)
    rules = {r.origin.name for r in full.rules if not r.origin.name.startswith("__")}
    terminals = {t.name for t in full.terminals}
    return full, rules, terminals


def test_every_rule_and_terminal_has_a_comment_above_it():
    lines = grammar.grammar_text().splitlines()
    _, rules, terminals = _all_symbols()
    for name in rules | terminals:
        pattern = re.compile(rf"^\??{re.escape(name)}(\.\d+)?\s*:")
        index = next(i for i, line in enumerate(lines) if pattern.match(line))
        above = lines[index - 1]
        assert above.startswith("//"), f"{name} has no comment above it"


def test_terminals_are_named():
    _, _, terminals = _all_symbols()
    assert not [t for t in terminals if t.startswith("__ANON")]


def test_character_classes_are_ascii():
    full, _, _ = _all_symbols()
    for term in full.terminals:
        regexp = term.pattern.to_regexp()
        assert not re.search(r"\\[dwsDWS]", regexp), f"{term.name} uses a Unicode-aware class"
        assert regexp.isascii(), term.name


def test_token_constants_match_the_grammar():
    literals = grammar.literal_terminals()
    for name, literal in literals.items():
        if hasattr(tokens, literal) and literal in vars(tokens):
            assert getattr(tokens, literal) == name
    for literal, name in literals.items():
        if hasattr(tokens, name):
            assert getattr(tokens, name) == literal, name


# --- the lean driver and Lark agree --------------------------------------------------------------
def test_driver_and_lark_accept_the_same_corpus():
    corpus = REPO / "tests" / "conformance"
    import json

    for folder in ("valid", "invalid"):
        for path in sorted((corpus / folder).glob("*.gemma")):
            text = path.read_text(encoding="utf-8")
            start = json.loads(path.with_suffix(".json").read_text())["start"]
            lean = block_parser() if start in grammar.BLOCK_STARTS else document_parser()
            try:
                lean.lark.parse(text, start=start)
                lark_ok = True
            except lark.exceptions.UnexpectedInput:
                lark_ok = False
            try:
                parse(text, start)
                lean_ok = True
            except g.GemmaSyntaxError as err:
                lean_ok = False
                if "number out of range" in err.message:  # a value check after the syntax
                    assert lark_ok, path.name
                    continue
            assert lean_ok == lark_ok == (folder == "valid"), path.name


# --- generation from the grammar ----------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _uncached(starts):
    # hypothesis reads the grammar object, which a parser loaded from Lark's cache does not keep
    return grammar.build(starts, cache=False)


# Terminals with look-arounds are given explicitly; the rest come from their regexes.
_text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=1)
EXPLICIT = {
    "STRING": _text.map(lambda s: '<|"|>' + s + '<|"|>') | st.just('<|"|><|"|>'),
    "INTEGER": st.integers().map(str),
    "FLOAT": st.floats(allow_nan=False, allow_infinity=False).map(repr),
    "BARE_WORD": st.from_regex(r"[A-Za-z_][A-Za-z0-9_ ]{0,10}[A-Za-z0-9_]", fullmatch=True),
}
# In documents, whitespace next to free text is text (TEXT outranks the ignored WS), so the
# generator inserts none there; blocks exercise insignificant whitespace above.
DOCUMENT_EXPLICIT = {"TEXT": _text, "WS": st.just(""), **EXPLICIT}


@pytest.mark.parametrize("start", ["call_block", "response_block", "declaration_block", "value_document"])
@settings(max_examples=60)
@given(data=st.data())
def test_blocks_generated_from_the_grammar_parse(start, data):
    text = data.draw(from_lark(_uncached(grammar.BLOCK_STARTS), start=start, explicit=EXPLICIT))
    parse(text, start)  # must not raise


@pytest.mark.parametrize("start", ["thought", "model_output", "transcript"])
@settings(max_examples=60)
@given(data=st.data())
def test_documents_generated_from_the_grammar_parse(start, data):
    text = data.draw(from_lark(_uncached(grammar.DOCUMENT_STARTS), start=start, explicit=DOCUMENT_EXPLICIT))
    try:
        parse(text, start)
    except g.GemmaSyntaxError as err:
        # Generation is context-free; only lexical adjacency (two TEXT pieces, an optional
        # newline after `thought`) can make a drawn string mean something else.
        pytest.fail(f"{err}\n{text!r}")


# The patterns of STRING, BARE_WORD and TEXT as they stood before they were rewritten to run in
# constant memory (a repeated group made Python's regex engine keep state for every repetition).
# The rewrite must match exactly what these matched, from every start position.
_DENIED_LT = r'<(?!\|"\|>|\|[a-z_]+\|?>|[a-z_]+\|>)'
_CONTROL = r"\|[a-z_]+\|?>|[a-z_]+\|>|[be]os>"
_UNROLLED = {
    "STRING": r'<\|"\|>[^<]*(?:<(?!\|"\|>)[^<]*)*<\|"\|>',
    "BARE_WORD": rf"""(?![+-]?[0-9.])(?:[^ \t\r\n,{{}}\[\]"'<]|{_DENIED_LT})(?:[ \t\r\n]*(?:[^ \t\r\n,{{}}\[\]"'<]|{_DENIED_LT}))*""",
    "TEXT": rf"(?:[^<]|<(?!{_CONTROL}))[^<]*(?:<(?!{_CONTROL})[^<]*)*",
}
_FRAGMENTS = ['<|"|>', "<", "|", ">", '"', "'", "a", "Z", " ", "\n", "\t", "[", "]", "{", "}", ",", ":",
              "<|tool_call>", "<tool_call|>", "<|x", "x|>", "<|a|>", "<bos>", "<eo", "s>", "1", ".", "-",
              "+", "é", "\\", '<|"', '|"|>']


@pytest.mark.parametrize("name", sorted(_UNROLLED))
@settings(max_examples=1500)
@given(pieces=st.lists(st.sampled_from(_FRAGMENTS), max_size=14), start=st.integers(0, 3))
def test_terminal_patterns_match_as_the_unrolled_ones_did(name, pieces, start):
    text = "".join(pieces)
    start = min(start, len(text))
    before = re.compile(_UNROLLED[name]).match(text, start)
    after = grammar.terminal_pattern(name).match(text, start)
    assert (before and before.end()) == (after and after.end())


@pytest.mark.parametrize("name, text", [
    ("STRING", '<|"|>' + "<a" * 100_000 + '<|"|>'),
    ("STRING", '<|"|>' + "<a" * 100_000),  # never closed
    ("BARE_WORD", "a " * 100_000 + "b"),
    ("BARE_WORD", "a<" * 100_000 + "]"),
    ("TEXT", "x<y" * 70_000 + "<|tool_call>"),
])
def test_terminal_patterns_match_in_constant_memory(name, text):
    import tracemalloc

    pattern = grammar.terminal_pattern(name)
    tracemalloc.start()
    try:
        pattern.match(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, f"{name}: {peak} bytes to match {len(text)} characters"
