"""Text that arrives in pieces of any size, kept with few objects.

A stream may arrive one character at a time; a list with one `str` per piece costs about 50 bytes
per character. Small pieces are joined every `COMPACT_EVERY`, so each character is copied O(1)
times more (a joined piece is never joined again until the text is read) and the lists hold few
objects.

`append` is the method; a hot loop may inline it, as `pieces.small.append(piece)` then
`if len(pieces.small) >= COMPACT_EVERY: pieces.compact()` (a method call per character costs about
as much as the rest of the work on a 1-character chunk).
"""

from __future__ import annotations

COMPACT_EVERY = 256


class Pieces:
    """Append pieces; read the whole text. Raises nothing."""

    __slots__ = ("small", "_joined")

    def __init__(self) -> None:
        self.small: list[str] = []   # the pieces appended since the last compact()
        self._joined: list[str] = []  # earlier pieces, COMPACT_EVERY at a time

    def append(self, piece: str) -> None:
        small = self.small
        small.append(piece)
        if len(small) >= COMPACT_EVERY:
            self.compact()

    def compact(self) -> None:
        self._joined.append("".join(self.small))
        self.small.clear()

    def text(self) -> str:
        return "".join(self._joined) + "".join(self.small)
