"""Generated cases for the conformance run: canonical model outputs (prose, thoughts and call
blocks as the official template writes them) and mutations of them, from a seed, with no
dependency beyond the standard library. The same seed gives the same cases on every machine.

The shapes are the ones that broke peers: strings holding commas, brackets, colons and a literal
`<tool_call|>`, nested lists and objects, numbers of every kind, parallel calls, text between
calls; mutations delete, insert control tokens and punctuation, and truncate.
"""

from __future__ import annotations

import random

from .. import tokens
from ..render.values import dump_value

_D = tokens.STRING_DELIMITER
_MARKERS = list(tokens.CONTROL_TOKENS) + [
    tokens.CALL_KEYWORD, "{", "}", "[", "]", ",", ":", '"', "'", "\n", "<|", "|>", " "]
_STRING_PIECES = ["a", "Tokyo, JP", " ", "\n", "{", "}", "[", "]", ":", ",", "<", "|>", "}<tool_call|>", "日本", "é",
                  '"', "\\n", "null", "1", "x y"]
_PROSE_PIECES = ["Let me check.", " ", "\n", "The answer is 42", ".", "a < b", "{not a block}", "see <|", "é", "ok"]
_NAME_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_NAME_REST = _NAME_START + "0123456789.:-"
_NUMBERS = [0, 1, -7, 42, 10**30, -(10**20), 2.5, -0.5, 1e20, 1e-07, 0.0, 3.25]


def _string(rng: random.Random) -> str:
    return "".join(rng.choice(_STRING_PIECES) for _ in range(rng.randrange(0, 6)))


def _name(rng: random.Random) -> str:
    return rng.choice(_NAME_START) + "".join(rng.choice(_NAME_REST) for _ in range(rng.randrange(0, 12)))


def value(rng: random.Random, depth: int = 0):
    """A JSON-like value the format can carry (no delimiter inside strings)."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice(_NUMBERS)
    if kind in (3, 4, 5):
        return _string(rng)
    if kind in (6, 7):
        return [value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {(_name(rng) if rng.random() < 0.7 else _string(rng)): value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}


def call_block(rng: random.Random) -> str:
    arguments = {_name(rng): value(rng) for _ in range(rng.randrange(0, 5))}
    return tokens.TOOL_CALL_OPEN + tokens.CALL_KEYWORD + _name(rng) + dump_value(arguments, unsafe="allow") + tokens.TOOL_CALL_CLOSE


def _prose(rng: random.Random) -> str:
    return "".join(rng.choice(_PROSE_PIECES) for _ in range(rng.randrange(1, 5)))


def model_output(rng: random.Random) -> str:
    """Text, thoughts and call blocks in any order, perhaps ending in a stop marker."""
    pieces = []
    for _ in range(rng.randrange(1, 7)):
        kind = rng.randrange(6)
        if kind < 2:
            pieces.append(_prose(rng))
        elif kind == 2:
            pieces.append(tokens.THOUGHT_OPEN + _prose(rng) + tokens.CHANNEL_CLOSE)
        else:
            pieces.append(call_block(rng))
    if rng.random() < 0.3:
        pieces.append(rng.choice([tokens.TURN_CLOSE, tokens.EOS, tokens.TOOL_RESPONSE_OPEN]))
    return "".join(pieces)


def mutate(rng: random.Random, text: str) -> str:
    """`text` after one to four deletions, insertions of markers or punctuation, and truncations."""
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(text) + 1)
        kind = rng.randrange(4)
        if kind == 0:
            text = text[:at] + text[at + rng.randrange(1, 5):]
        elif kind in (1, 2):
            text = text[:at] + rng.choice(_MARKERS) + text[at:]
        else:
            text = text[:at]
    return text


def generated(seed: int, count: int) -> list[str]:
    rng = random.Random(f"generated {seed}")
    return [model_output(rng) for _ in range(count)]


def mutated(seed: int, count: int, bases: list[str]) -> list[str]:
    """`count` mutations, each of one of `bases` (valid corpus inputs and generated outputs)."""
    rng = random.Random(f"mutated {seed}")
    return [mutate(rng, rng.choice(bases)) for _ in range(count)] if bases else []
