"""LineIndex answers as line_and_column does, for offsets asked in any order."""

from hypothesis import given, strategies as st

from gemma4_lark.diagnostics import LineIndex, line_and_column


@given(st.text(alphabet="ab\n\r", max_size=60), st.lists(st.integers(min_value=0, max_value=60), max_size=12))
def test_line_index_agrees_with_line_and_column(source, offsets):
    index = LineIndex(source)
    for pos in offsets:
        pos = min(pos, len(source))
        assert index.line_and_column(pos) == line_and_column(source, pos)
