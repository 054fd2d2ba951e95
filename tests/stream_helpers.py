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


def run_tokens(steps, tokenizer, **options):
    """All events of `steps` ((text, token ids) deltas) fed to a parser reading `tokenizer`'s ids."""
    parser = StreamParser.for_tokenizer(tokenizer, id_factory=counter_ids(), **options)
    events = []
    for text, ids in steps:
        events.extend(parser.feed(text, token_ids=ids))
    return events + parser.flush()


def run_text(text, **options):
    """All events of `text` fed whole to a fresh parser, with reproducible ids."""
    return run([text], **options)


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
