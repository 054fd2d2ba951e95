"""GemmaSyntaxError and Diagnostic: attributes, formatting, validation across blocks."""

import pickle

import pytest

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
