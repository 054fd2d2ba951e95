"""gemma4_lark/marker_search.py: each function returns what the `str` method it names returns.

Texts from an alphabet where the marker's first character is rare, dense and absent, markers that
overlap themselves, bounds anywhere; each twice: as shipped (short texts left to `str`) and with
every text taken by the loop (`SHORT = 0`), where giving up on a dense `<` is exercised too.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings, strategies as st

from gemma4_lark import marker_search

MARKERS = ['<|"|>', "<escape>", "<<", "<a<a", "<"]
PIECES = ["<", "<|", '<|"|>', '<|"|', "|>", "<escape>", "<escape", "<<", "<a", "a", "bc", "é", "→", "😀", "\n",
          "x" * 300, "y" * 700]


@contextlib.contextmanager
def _short(every_text: bool):
    saved = marker_search.SHORT
    marker_search.SHORT = 0 if every_text else saved
    try:
        yield
    finally:
        marker_search.SHORT = saved


@settings(max_examples=500)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=60), marker=st.sampled_from(MARKERS), data=st.data(),
       every_text=st.booleans())
def test_find_and_split_are_the_str_methods(pieces, marker, data, every_text):
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)) | st.none())
    with _short(every_text):
        assert marker_search.find(text, marker, start, end) == text.find(marker, start, end)
        assert marker_search.split(text, marker, start, end) == text[start:end].split(marker)


@pytest.mark.parametrize("every_text", [False, True])
@pytest.mark.parametrize("gap", [0, 1, 7, 255, 256, 257, 2000])
def test_dense_and_sparse_first_characters(every_text, gap):
    """The loop gives up on a `<` every `gap` characters (or not), and still finds the marker."""
    with _short(every_text):
        _dense_and_sparse(gap)


def _dense_and_sparse(gap: int) -> None:
    for count in (1, 5, 40, 400):
        text = ("<" + "a" * gap) * count + '<|"|>' + "tail" + ('<|"|>' + "b" * gap) * 3
        assert marker_search.find(text, '<|"|>') == text.find('<|"|>')
        assert marker_search.split(text, '<|"|>') == text.split('<|"|>')
        assert marker_search.find(text, "<escape>") == -1


def test_ahead_is_what_the_loops_inline():
    step, free = marker_search.STEP, marker_search.FREE_STEPS
    assert marker_search.ahead(free, 0) and not marker_search.ahead(free + 1, step - 1)
    assert marker_search.ahead(free + 1, step) and marker_search.ahead(free + 10, 10 * step)
