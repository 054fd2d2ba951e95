"""Where a marker starts: the one test the scan makes at a `<` of its state's markers."""

from __future__ import annotations

__all__ = ["match"]


def match(data: str, j: int, by_second: dict, prefixes: frozenset, longest: int, final: bool):
    """At `data[j] == "<"`: the marker that starts there, "hold" if more input could still make
    one (or a longer one), or None."""
    if not final and len(data) - j < longest and data[j:] in prefixes:
        return "hold"
    for marker in by_second.get(data[j + 1] if j + 1 < len(data) else "", ()):
        if data.startswith(marker, j):
            return marker
    return None
