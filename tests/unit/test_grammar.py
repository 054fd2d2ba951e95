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


@functools.lru_cache(maxsize=None)
def _generated(starts, start, documents):
    # built once per start rule: building it compiles a strategy for every terminal, which cost
    # more than the 60 examples drawn from it when it was rebuilt for each one
    return from_lark(_uncached(starts), start=start, explicit=DOCUMENT_EXPLICIT if documents else EXPLICIT)


@pytest.mark.parametrize("start", ["call_block", "response_block", "declaration_block", "value_document"])
@settings(max_examples=60)
@given(data=st.data())
def test_blocks_generated_from_the_grammar_parse(start, data):
    text = data.draw(_generated(grammar.BLOCK_STARTS, start, documents=False))
    parse(text, start)  # must not raise


@pytest.mark.parametrize("start", ["thought", "model_output", "transcript"])
@settings(max_examples=60)
@given(data=st.data())
def test_documents_generated_from_the_grammar_parse(start, data):
    text = data.draw(_generated(grammar.DOCUMENT_STARTS, start, documents=True))
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


# The lexer compiles some patterns in a faster form of its own (gemma4_lark/possessive.py): on
# Python >= 3.11, a lazy run up to a literal becomes a possessive loop. Each must match exactly as
# the grammar's pattern does, from every start position, and in constant memory.
def _lexer_forms():
    from gemma4_lark.possessive import lexer_pattern

    forms = {}
    for term in grammar.terminals():
        if term.pattern.type == "re":
            fast = lexer_pattern(term.pattern.value, term.pattern.flags)
            if fast != term.pattern.value:
                forms[term.name] = re.compile(lark.lexer.PatternRE(fast, term.pattern.flags).to_regexp())
    return forms


_LEXER_FORMS = _lexer_forms()


def test_the_lexer_matches_strings_possessively_where_re_can():
    from gemma4_lark.possessive import POSSESSIVE

    assert sorted(_LEXER_FORMS) == (["STRING"] if POSSESSIVE else [])


@pytest.mark.skipif(not _LEXER_FORMS, reason="Python < 3.11: the lexer compiles the grammar's patterns as they are")
@settings(max_examples=3000)
@given(pieces=st.lists(st.sampled_from(_FRAGMENTS), max_size=16), start=st.integers(0, 6))
def test_lexer_forms_match_as_the_grammar_patterns_do(pieces, start):
    text = "".join(pieces)
    start = min(start, len(text))
    for name, fast in _LEXER_FORMS.items():
        before = grammar.terminal_pattern(name).match(text, start)
        after = fast.match(text, start)
        assert (before and before.end()) == (after and after.end()), name


@pytest.mark.parametrize("value, flags, rewritten", [
    (r'<\|"\|>.*?<\|"\|>', "s", True),
    (r'<\|"\|>.*?<\|"\|>', "", False),      # `.` without DOTALL: not the shape
    (r"a\.*?b", "s", False),                 # an escaped dot repeated
    (r"(a.*?b)", "s", False),                # inside a group
    (r"a|b.*?c", "s", False),                # inside a branch
    (r"a.*?b+", "s", False),                 # the tail is not a literal
    (r"x.*?", "s", False),                   # nothing after the lazy dot
    (r"a.*?b", "si", False),                 # another flag
])
def test_the_rewrite_takes_only_a_lazy_dot_before_a_final_literal(value, flags, rewritten):
    from gemma4_lark.possessive import POSSESSIVE, lexer_pattern

    fast = lexer_pattern(value, flags)
    assert (fast != value) == (rewritten and POSSESSIVE)
    for text in ["ab", "a.b", "axxbyb", "a\nb", "xab", "aB", "a", "abb", "c"]:
        expected = re.compile(value, re.S if "s" in flags else 0).match(text)
        got = re.compile(fast, re.S if "s" in flags else 0).match(text)
        assert (expected and expected.end()) == (got and got.end()), (value, text)


@pytest.mark.parametrize("text", [
    '<|"|>' + "<a" * 100_000 + '<|"|>',
    '<|"|>' + "<a" * 100_000,  # never closed
    '<|"|>' + "<|" * 100_000 + '<|"|>',
    '<|"|>' + "x" * 200_000 + '<|"|>',
])
def test_lexer_forms_match_in_constant_memory(text):
    import tracemalloc

    for name, fast in _LEXER_FORMS.items():
        tracemalloc.start()
        try:
            fast.match(text)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 64 * 1024, f"{name}: {peak} bytes to match {len(text)} characters"


def test_the_lean_driver_lexes_with_the_lexer_forms():
    # Every lexer state that can read a string compiles STRING in its lexer form.
    for parser in (block_parser(), document_parser()):
        patterns = {match.__self__.pattern for match, _, _ in parser.lexers if match is not None}
        with_string = [p for p in patterns if "(?P<STRING>" in p]
        assert with_string or parser is document_parser()
        for name, fast in _LEXER_FORMS.items():
            for p in patterns:
                if f"(?P<{name}>" in p:
                    assert f"(?P<{name}>{fast.pattern})" in p


def test_the_independent_decoders_blanks_are_the_grammars():
    # One home for the whitespace set: grammar.whitespace(), read from the WS terminal. The two
    # decoders written apart from the grammar code (SPEC section 4: the lenient decoder; the
    # design card: the hand-written oracle) keep their own copy on purpose, so that comparing them
    # with the grammar means something; here each copy is held to the grammar's set.
    from gemma4_lark import grammar, reference
    from gemma4_lark.recovery import decoder

    assert set(decoder.WS) == set(reference.BLANKS) == set(grammar.whitespace()) == set(" \t\r\n")
