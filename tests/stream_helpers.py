"""Helpers for streaming tests: deterministic ids, merging of piecewise events, span tiling."""

import itertools

from gemma4_incremental import StreamParser, Text, ThinkingDelta


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


def merged(events):
    """Consecutive text (or thinking delta) events joined: the same for any chunking."""
    out = []
    for event in events:
        if out and type(event) in (Text, ThinkingDelta) and type(out[-1]) is type(event):
            last = out.pop()
            event = type(event)(last.text + event.text, (last.span[0], event.span[1]))
        out.append(event)
    return out


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
