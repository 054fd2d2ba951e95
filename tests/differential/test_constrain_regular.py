"""The derivation itself: each terminal's language, as `constrain._regular` states it without
look-arounds, is what Python's `re` takes with the grammar's own pattern, followed by what can
follow the terminal."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from gemma4_lark import grammar, tokens
from gemma4_lark.constrain import _regular as regular, _token_language, _translate as translate

SETTINGS = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))

# Characters that matter to the patterns, markers' characters included, and a few others.
ALPHABET = st.sampled_from(list(" \t\n,{}[]:\"'<|>-+.eE0159abosz_") + ["é", "\x00"])
PIECES = st.sampled_from(list(tokens.CONTROL_TOKENS) + ["true", "None", "<|", "|>", "<b", "os>"])
TEXTS = st.lists(ALPHABET | PIECES, max_size=12).map("".join)

# What follows each terminal where the block parser expects it, as text.
BLOCK_FOLLOWS = {
    "STRING": [":", ",", "}", "]", " }"],
    "INTEGER": [",", "}", "]", " ,"],
    "FLOAT": [",", "}", "]", "\n]"],
    "BARE_WORD": [",", "}", "]", " }", "\t,"],
    "KEY": [":", " :"],
    "NAME": ["{", " {"],
}
DOCUMENT_FOLLOWS = {"TEXT": [tokens.TURN_CLOSE, tokens.TOOL_CALL_OPEN, tokens.THOUGHT_OPEN, ""]}


def lexer_takes(name: str, text: str, follow: str) -> bool:
    """Whether Lark's lexer, reading the terminal's pattern at the start of `text + follow`,
    takes exactly `text`."""
    pattern = grammar.terminal_pattern(name)
    m = pattern.match(text + follow)
    return m is not None and m.end() == len(text)


def derived(name: str, starts):
    return translate.terminal_language(name, starts)


@pytest.mark.parametrize("name", sorted(BLOCK_FOLLOWS))
@SETTINGS
@given(text=TEXTS)
def test_block_terminals_are_what_the_lexer_takes(name, text):
    dfa = derived(name, grammar.BLOCK_STARTS)
    for follow in BLOCK_FOLLOWS[name]:
        assert dfa.accepts(text) == lexer_takes(name, text, follow), (name, text, follow)


@SETTINGS
@given(text=TEXTS)
def test_free_text_is_what_the_lexer_takes(text):
    dfa = derived("TEXT", grammar.DOCUMENT_STARTS)
    for follow in DOCUMENT_FOLLOWS["TEXT"]:
        assert dfa.accepts(text) == lexer_takes("TEXT", text, follow), (text, follow)


@pytest.mark.parametrize("name,text,taken", [
    ("STRING", '<|"|>a<turn|>b<|"|>', True),          # a marker inside a string is text
    ("STRING", '<|"|>a<|"|>b<|"|>', False),           # the first delimiter ends it
    ("BARE_WORD", "hello world", True),
    ("BARE_WORD", "a<|tool_call>", False),            # a control token ends a bare word
    ("BARE_WORD", "a<bos>b", True),                   # but `<bos>` does not (the grammar's choice)
    ("BARE_WORD", "1abc", False),
    ("INTEGER", "12", True),
    ("FLOAT", "1e5", True),
    ("FLOAT", "1e", False),
])
def test_examples(name, text, taken):
    assert derived(name, grammar.BLOCK_STARTS).accepts(text) is taken
    assert lexer_takes(name, text, "}") is taken


def test_lookarounds_and_lazy_repetitions_are_gone():
    """What the engines get has no look-around and no lazy repetition: every derived terminal is
    a plain automaton, and the export's regexes have no `(?` group but `(?:`."""
    from gemma4_lark import constrain

    for fmt in ("llguidance", "lark"):
        text = constrain.grammar(fmt, scope="output")
        assert not re.search(r"\(\?[^:]", text), fmt
        assert "*?" not in text and "+?" not in text


def test_follow_dependence_is_refused():
    """A lazy terminal whose end the follow language does not decide is refused, not guessed."""
    anything = regular.star(regular.rset(regular.ALL))
    with pytest.raises(regular.CannotDerive):
        _token_language.token_language(r"a+?(?=b)", "", anything)
