"""The known hostile inputs (`corpus.jsonl`): each one an example of one campaign, run every time.

A row is {"id", "campaign", "what", "example"}; the example is JSON, turned into what the
campaign's check takes by `example()`: a stream case is [text, chunks, options] where chunks is a
list of pieces or a piece size (0: the whole text at once) and options override the defaults; a
command-line case is [argv, standard input as text].
"""

from __future__ import annotations

import json
import pathlib

from .properties import Campaign, campaign

PATH = pathlib.Path(__file__).with_name("corpus.jsonl")
STREAM_DEFAULTS = {"strict": False, "parse_thinking": True, "start_in_thinking": False,
                   "max_block_chars": 4 * 1024 * 1024, "max_depth": 512}


def rows() -> list:
    with PATH.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def example(c: Campaign, value):
    """The check's input for a corpus example of campaign `c`."""
    if c.name.endswith(("StreamParser", "ReferenceScanner")):
        text, chunks, options = value
        if isinstance(chunks, int):
            chunks = [text[i:i + chunks] for i in range(0, len(text), chunks)] if chunks else [text]
        return text, chunks, {**STREAM_DEFAULTS, **options}
    if c.name.endswith(".cli"):
        argv, text = value
        return argv, text.encode("utf-8")
    return tuple(value) if isinstance(value, list) else value


def examples(name: str) -> list:
    """(id, input) of every corpus row of the campaign called `name`."""
    c = campaign(name)
    return [(row["id"], example(c, row["example"])) for row in rows() if row["campaign"] == name]
