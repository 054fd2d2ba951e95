"""The grammar file and the two LALR parsers built from it.

`grammar/gemma4.lark` at the top of the repository is the only copy of the grammar. The package
reaches it as the resource `gemma4_lark/gemma4.lark`: a symbolic link in a checkout, the file itself
in a wheel (the build copies what the link points to), so both read it the same way.

Two parsers come from the one file (see the grammar's header): the block parser, whose lexer knows
only what can stand inside a block, and the document parser for thoughts, model outputs and
transcripts.
"""

from __future__ import annotations

import functools
from importlib import resources

import lark

GRAMMAR_PACKAGE = "gemma4_lark"
GRAMMAR_FILE = "gemma4.lark"

BLOCK_STARTS = ("call_block", "response_block", "declaration_block", "response_blocks", "declaration_blocks",
                "value_document")
DOCUMENT_STARTS = ("thought", "model_output", "transcript")


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    """The grammar's source text."""
    return resources.files(GRAMMAR_PACKAGE).joinpath(GRAMMAR_FILE).read_text(encoding="utf-8")


def build(starts, *, strict: bool = False, cache: bool = True) -> lark.Lark:
    """A Lark LALR parser with the contextual lexer for the given start rules.

    `strict=True` makes Lark refuse any conflict or regex collision (the test suite builds both
    parsers that way); the runtime parsers skip that check and use Lark's on-disk cache, since
    the grammar is fixed for an installed version.
    """
    return lark.Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=list(starts),
        strict=strict,
        maybe_placeholders=False,
        propagate_positions=False,
        cache=cache and not strict,
    )


@functools.lru_cache(maxsize=1)
def terminals() -> tuple:
    """Every terminal of the grammar (Lark's TerminalDef objects)."""
    return tuple(build(BLOCK_STARTS + DOCUMENT_STARTS).terminals)


@functools.lru_cache(maxsize=1)
def literal_terminals() -> dict[str, str]:
    """Every terminal that is a fixed string, as literal -> terminal name (for error messages)."""
    return {t.pattern.value: t.name for t in terminals() if t.pattern.type == "str"}


@functools.lru_cache(maxsize=None)
def terminal_literal(name: str) -> str | None:
    """The fixed string of a terminal, or None when the terminal is a pattern."""
    for literal, term in literal_terminals().items():
        if term == name:
            return literal
    return None


@functools.lru_cache(maxsize=None)
def terminal_pattern(name: str):
    """The compiled regular expression of a terminal, as the grammar defines it."""
    import re

    for term in terminals():
        if term.name == name:
            return re.compile(term.pattern.to_regexp())
    raise KeyError(name)
