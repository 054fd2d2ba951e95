"""Text that arrives in pieces of any size, kept with few objects.

A stream may arrive one character at a time; a list with one `str` per piece costs about 50 bytes
per character. Small pieces are joined every `COMPACT_EVERY`, so each character is copied O(1)
times more (a joined piece is never small again) and the list holds few objects.
"""

from __future__ import annotations

COMPACT_EVERY = 256


class Pieces:
    """Append pieces; read the whole text. Raises nothing."""

    __slots__ = ("_parts", "_small")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._small = 0  # pieces at the end of _parts not joined yet

    def append(self, piece: str) -> None:
        self._parts.append(piece)
        self._small += 1
        if self._small >= COMPACT_EVERY:
            tail = "".join(self._parts[-self._small:])
            del self._parts[-self._small:]
            self._parts.append(tail)
            self._small = 0

    def text(self) -> str:
        return "".join(self._parts)
