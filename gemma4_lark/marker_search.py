"""Finding a marker in a long text: by its first character, which C finds with memchr.

CPython's `str.find` of a string of several characters (every marker: `<|"|>`, `<escape>`...)
steps through the text in C at about 0.5 ns a character, whatever it holds; `str.find` of one
character calls memchr, some 40 times faster. So where a marker's first character is rare (a `<`
in prose or code), finding each `<` and comparing the marker there is much faster on a long text;
where it is dense (HTML), each `<` costs a step of Python (about 0.15 µs, some 300 characters of
`str.find`). The functions below take the `<`s one by one while that is ahead, and leave the rest
of the text to `str.find` as soon as it is not (`ahead`): never much slower than `str.find`
alone, and on a 20 KB string with a few dozen `<` about 4 times faster.

Each function returns exactly what the `str` method it names returns; tests/differential/test_marker_search.py
checks them against those methods on random texts.
"""

from __future__ import annotations

# A text shorter than this is searched by `str.find` alone: there it costs well under a
# microsecond, and the loop's own steps would not pay.
SHORT = 1024


# A step of the loop (a `<` looked at) costs about what `str.find` spends on STEP characters; the
# first FREE_STEPS are free. The loops below go on while `steps * STEP <= FREE_STEPS * STEP +
# advanced`, kept as one number, `budget`, compared with how far they advanced.
STEP = 256
FREE_STEPS = 4


def ahead(looked_at: int, advanced: int) -> bool:
    """Whether finding the first character one by one is still cheaper than `str.find`: after
    `looked_at` of them, `advanced` characters into the text. (The loops inline it.)"""
    return (looked_at - FREE_STEPS) * STEP <= advanced


def find(text: str, marker: str, start: int = 0, end: int | None = None) -> int:
    """`text.find(marker, start, end)`."""
    if end is None:
        end = len(text)
    if end - start < SHORT:
        return text.find(marker, start, end)
    first = marker[0]
    seek = text.find
    at = seek(first, start, end)
    budget = FREE_STEPS * STEP  # `ahead`, inlined: this loop is the cost it saves
    while at != -1:
        if text.startswith(marker, at, end):
            return at
        budget -= STEP
        if budget < start - at:
            return seek(marker, at + 1, end)
        at = seek(first, at + 1, end)
    return -1


def split(text: str, marker: str, start: int = 0, end: int | None = None) -> list[str]:
    """`text[start:end].split(marker)`, without copying the slice first."""
    if end is None:
        end = len(text)
    if end - start < SHORT:
        return text[start:end].split(marker)
    first = marker[0]
    size = len(marker)
    seek = text.find
    begin = start  # where the text's next piece begins
    pieces = []
    budget = FREE_STEPS * STEP  # `ahead`, inlined; every `first` costs a step, a marker's or not
    at = seek(first, start, end)
    while at != -1:
        budget -= STEP
        if budget < start - at:
            return pieces + text[begin:end].split(marker)
        if text.startswith(marker, at, end):
            pieces.append(text[begin:at])
            begin = at + size
            at = seek(first, begin, end)
        else:
            at = seek(first, at + 1, end)
    pieces.append(text[begin:end])
    return pieces
