"""gemma4_lark/_compat.py, the one home of the private names of Lark and `re` the project reads:
each still means what the project takes it to mean on the Lark and Python installed. Run at the
newest Lark (`make test`) and the lowest the project supports (`make test-minimum`: lark 1.2.2)."""

import re

import lark
from lark.lexer import LexerState, LexerThread, LineCounter
from lark.load_grammar import GrammarBuilder

from gemma4_lark import _compat, grammar
from gemma4_lark.lalr import TextSlice  # (None before lark 1.3, which lexes a str)


def _builder() -> GrammarBuilder:
    builder = GrammarBuilder()
    builder.load_grammar(grammar.grammar_text(), "gemma4")
    return builder


def _block_parser() -> lark.Lark:
    return grammar.build(grammar.BLOCK_STARTS, cache=False)


def test_the_stored_tables_load_back_as_the_parser_the_grammar_builds():
    built = _block_parser()
    data, memo = built.memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
    loaded = _compat.load_lark_from_dict(data, memo)
    assert isinstance(loaded, lark.Lark)
    assert grammar.canonical_tables(loaded) == grammar.canonical_tables(built)
    block = '<|tool_call>call:f{a:1}<tool_call|>'
    assert loaded.parse(block, start="call_block") == built.parse(block, start="call_block")


def test_the_grammar_definitions_are_its_rules_and_terminals_before_bnf():
    definitions = _compat.grammar_definitions(_builder())
    names = {str(name) for name in definitions}
    assert {"call_block", "model_output", "STRING", "WS", "TEXT"} <= names
    assert "WS" in _compat.ignored_terminal_names(_builder())


def test_every_lexer_state_scans_with_one_regex():
    parser = _block_parser()
    states = parser.parser.lexer.lexers  # the contextual lexer's lexer per parser state
    assert states and all(_compat.scanner_regex_count(basic.scanner) == 1 for basic in states.values())


def test_the_bare_lalr_loop_calls_the_parse_tree_builders_callbacks():
    parser = _block_parser()
    reduced = []

    class Names(lark.Transformer):
        def __default__(self, data, children, meta):
            reduced.append(data)
            return children

    callbacks = _compat.parse_tree_callbacks(parser, Names())
    tables = parser.parser.parser.parser.parse_table
    loop = _compat.lalr_parser_loop(tables, callbacks)
    text = '<|tool_call>call:f{a:1}<tool_call|>'
    view = text if TextSlice is None else TextSlice(text, 0, len(text))
    thread = LexerThread(parser.parser.lexer, LexerState(view, LineCounter("\n")))
    loop.parse(thread, "call_block")
    assert "call_block" in reduced


def test_the_regex_parser_reads_a_pattern_into_items():
    items = list(_compat.sre_parse.parse("a[b-c]*", 0))
    assert [op for op, _ in items] == [_compat.sre_constants.LITERAL, _compat.sre_constants.MAX_REPEAT]
    for name in ("LITERAL", "IN", "RANGE", "NEGATE", "NOT_LITERAL", "ANY", "MAX_REPEAT", "MIN_REPEAT", "MAXREPEAT",
                 "SUBPATTERN", "BRANCH", "ASSERT", "ASSERT_NOT"):
        assert hasattr(_compat.sre_constants, name), name
    assert _compat.sre_parse.LITERAL is _compat.sre_constants.LITERAL
    assert re.fullmatch("a[b-c]*", "abcb")
