"""GemmaSyntaxError and Diagnostic: attributes, formatting, validation across blocks."""

import pickle

import pytest
from hypothesis import given, settings, strategies as st

import gemma4_lark as g


def _error(text, parse=g.parse_call):
    with pytest.raises(g.GemmaSyntaxError) as info:
        parse(text)
    return info.value


def test_error_attributes():
    err = _error("<|tool_call>call:f{\n  a:1,\n}<tool_call|>")
    assert isinstance(err, ValueError)
    assert (err.line, err.column, err.pos) == (3, 1, 27)
    assert err.text == "}"
    assert err.expected == ["key", "string"]
    assert err.source_line == "}<tool_call|>"
    assert str(err) == "line 3, column 1: trailing comma before `}`\n}<tool_call|>\n^"


def test_expected_names_are_readable():
    # never Lark's internal names such as __ANON_3 or $END
    for text in ["<|tool_call>call:f{a 1}<tool_call|>", "<|tool_call>call:f{a:1", "<|tool_call>", "x"]:
        err = _error(text)
        for name in err.expected:
            assert "ANON" not in name and "$" not in name and name == name.lower() or name.startswith("`")


def test_error_survives_pickling():
    err = _error("<|tool_call>call:f{a:1,}<tool_call|>")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.line, copy.column, copy.message, str(copy)) == (err.line, err.column, err.message, str(err))


def test_column_counts_characters_not_bytes():
    err = _error('<|tool_call>call:f{a:<|"|>日本<|"|>,}<tool_call|>')
    assert err.column == len('<|tool_call>call:f{a:<|"|>日本<|"|>,') + 1


def test_validate_valid_output_is_empty():
    assert g.validate("Hi<|tool_call>call:f{a:1}<tool_call|><|tool_response>") == []


def test_validate_checks_every_block():
    text = ("<|tool_call>call:f{a:1,a:2}<tool_call|>x"
            "<|tool_call>call:f{a:1,}<tool_call|>y"
            "<|tool_call>call:g{b:[}<tool_call|>"
            "<|tool_call>call:h{c:1,c:2}<tool_call|>")
    found = [(d.severity, d.code, d.pos) for d in g.validate(text)]
    assert found == [
        ("warning", "duplicate-key", text.index("a:2")),
        ("error", "syntax", text.index(",}") + 1),
        ("error", "syntax", text.index("[}") + 1),
        ("warning", "duplicate-key", text.index("c:2")),
    ]


def test_validate_transcript_and_blocks():
    assert g.validate("<bos><|turn>user\nHi<turn|>\n<|turn>model\n") == []
    assert g.validate("<|tool_response>response:f{value:1}<tool_response|>") == []
    assert g.validate("<|tool>declaration:f{description:<|\"|>d<|\"|>}<tool|>") == []
    [d] = g.validate("<bos><|turn>user\nHi<turn|><turn|>")
    assert (d.code, d.line, d.column) == ("syntax", 2, 10)


def test_validate_duplicate_quoted_key():
    [d] = g.validate('<|tool_call>call:f{a:1,<|"|>a<|"|>:2}<tool_call|>')
    assert d.code == "duplicate-key" and d.pos == len("<|tool_call>call:f{a:1,")


def test_diagnostic_format():
    [d] = g.validate("<|tool_call>call:f{a:1,}<tool_call|>")
    assert d.format("x.txt") == "x.txt:1:24: error: trailing comma before `}`"
    assert d.to_dict()["code"] == "syntax"


def test_validate_runs_of_results_and_declarations():
    from gemma4_lark.render import omp

    results = omp.render_tool_results([{"name": "a", "text": "1"}, {"name": "b", "text": "x"}])
    assert g.validate(results) == []
    declarations = ('<|tool>declaration:f{description:<|"|>d<|"|>}<tool|>'
                    '<|tool>declaration:g{description:<|"|>e<|"|>}<tool|>')
    assert g.validate(declarations) == []
    [d] = g.validate(results.replace("<|tool_response>response:b", "<|tool_response>respons:b"))
    assert d.code == "syntax" and "response keyword" in d.message


def test_a_long_line_is_shown_cut_around_the_error():
    from gemma4_lark.diagnostics import SHOWN_LINE_CHARS

    text = "<|tool_call>call:f{a:<|\"|>" + "x" * 10_000 + "<|\"|>,b:1,}<tool_call|>" + "y" * 10_000
    with pytest.raises(g.GemmaSyntaxError) as info:
        g.parse_call(text)
    err = info.value
    assert err.column == text.index(",}") + 2
    shown, caret = str(err).split("\n")[1:]
    assert len(shown) <= SHOWN_LINE_CHARS + 2 and shown.startswith("…") and shown.endswith("…")
    assert shown[len(caret) - 1:].startswith("}<tool_call|>")  # the caret stands under the error


def test_validate_reports_absolute_positions_of_many_errors():
    from gemma4_lark.diagnostics import line_and_column

    block = "<|tool_call>call:f{a:1,}<tool_call|>\n"
    text = "Intro\n" + block * 50 + "<|tool_call>call:f{a:1,a:2}<tool_call|>"
    diagnostics = g.validate(text)
    assert len(diagnostics) == 51
    for d in diagnostics:
        assert (d.line, d.column) == line_and_column(text, d.pos)
        assert text[d.pos] in "}a"
    assert diagnostics[-1].code == "duplicate-key" and diagnostics[-1].line == 52


def test_an_error_at_the_end_of_a_large_block_costs_no_parse_tree():
    # Finding why the input fails re-runs Lark's parser; it used to build a parse tree of
    # everything before the error, over 300 bytes a character.
    import tracemalloc

    text = "<|tool_call>call:f{a:[" + "1," * 50_000 + "]}<tool_call|>"
    g.parse_call("<|tool_call>call:f{a:[1]}<tool_call|>")  # build the parsers first
    tracemalloc.start()
    try:
        with pytest.raises(g.GemmaSyntaxError):
            g.parse_call(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 40 * len(text), peak / len(text)


@settings(max_examples=300)
@given(text=st.text(alphabet="ab\n<", max_size=300), data=st.data())
def test_shown_line_puts_the_caret_under_the_error(text, data):
    from gemma4_lark.diagnostics import SHOWN_LINE_CHARS, line_and_column, shown_line

    pos = data.draw(st.integers(0, len(text)))
    line_start = pos - line_and_column(text, pos)[1] + 1
    shown, caret = shown_line(text, pos, line_start)
    assert "\n" not in shown and len(shown) <= SHOWN_LINE_CHARS + 2
    line = text[line_start:].split("\n", 1)[0]
    if len(line) <= SHOWN_LINE_CHARS:
        assert (shown, caret) == (line, pos - line_start)
    if pos < len(text) and text[pos] != "\n":
        assert shown[caret] == text[pos]
