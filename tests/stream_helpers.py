"""Helpers for streaming tests: deterministic ids, merging of piecewise events, span tiling."""

import itertools

from gemma4_incremental import StreamParser
from gemma4_incremental.output import merge_deltas


def counter_ids():
    numbers = itertools.count()
    return lambda: f"call_{next(numbers)}"


def run(chunks, cls=StreamParser, **options):
    """All events of `chunks` fed to a fresh parser of `cls`, with reproducible ids."""
    parser = cls(id_factory=counter_ids(), **options)
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.flush())
    return events


merged = merge_deltas  # the library's own


def assert_tiles(events, text):
    """The spans cover the stream exactly, in order, with nothing lost or duplicated."""
    pos = 0
    for event in events:
        start, end = event.span
        assert start == pos and end >= start, (event, pos)
        pos = end
    assert pos == len(text), (pos, len(text))


def split_every(text, size):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]
