"""Every private name of Lark and of CPython's `re` the project reads, in one place.

Lark's public API builds a parser and parses; the project also reads a few of its insides: the
stored tables loaded back without pickle, the grammar's rules before Lark expands them to BNF, the
lexer's one regex per state, the parse-tree builder's callbacks and the bare LALR loop (for the
lean driver, which restates that loop on Lark's own tables). CPython's regex parser reads a
pattern into items (the lexer forms of the grammar's patterns, the spec pages' words, the
constrained-decoding translation). None of these is promised to stay: each is read here only, so
that a Lark or Python release that moves one breaks one module, and tests/packaging/test_compat.py, run at
the lowest and the newest Lark the project supports, says which.

Lark is imported only when one of these is asked for: the serving path loads no Lark (see
tests/packaging/test_import_cost.py).
"""

from __future__ import annotations

from typing import Any

try:  # Python >= 3.11
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

__all__ = [
    "grammar_definitions", "ignored_terminal_names", "lalr_parser_loop", "load_lark_from_dict",
    "parse_tree_callbacks", "scanner_regex_count", "sre_constants", "sre_parse",
]


def load_lark_from_dict(data: dict, memo: dict):
    """A `lark.Lark` from its serialized form (`Lark.serialize`'s data and memo), as `Lark.load`
    does after unpickling: the stored tables are JSON, never a pickle (docs/security.md)."""
    import lark

    return lark.Lark._load_from_dict(data, memo)


def grammar_definitions(builder) -> dict:
    """A `lark.load_grammar.GrammarBuilder`'s rules and terminals as read from the file, by name,
    before EBNF is expanded into BNF (Lark's public API offers the BNF only)."""
    return builder._definitions


def ignored_terminal_names(builder) -> list:
    """The terminals the grammar's `%ignore` names, as a GrammarBuilder read them."""
    return builder._ignore_names


def scanner_regex_count(scanner) -> int:
    """How many compiled regexes a lexer state's scanner alternates its terminals over (one, for
    every state of this grammar: the lean driver matches that one)."""
    return len(scanner._mres)


def parse_tree_callbacks(parser, transformer) -> dict:
    """The callbacks with which Lark's LALR loop builds `transformer`'s values per rule, as its
    parse-tree builder wraps them (`_rule` spliced, `?rule` of one child inlined, filtered tokens)."""
    return parser._parse_tree_builder.create_callback(transformer)


def lalr_parser_loop(parse_table, callbacks: dict) -> Any:
    """Lark's bare LALR parser loop over `parse_table`, calling `callbacks` on each reduction:
    `.parse(lexer_thread, start)`."""
    from lark.parsers.lalr_parser import _Parser

    return _Parser(parse_table, callbacks)
