"""Random walks under an engine's token mask: each token drawn among those the mask allows, until
the walk stops where the grammar may end. Either engine walks (llg_matcher, llama_matcher), and
the other is asked about every step: a token one mask allows and the other refuses shows up as
a refusal inside the walk's text.

Structural tokens (the markers, brackets, `,` and `:`) are drawn more often than other bytes, so
that strings and objects close and walks end, as in tests/constrain_helpers.py."""

from __future__ import annotations

import random
from typing import Protocol

from constrain_helpers import FIRST_SPECIAL, ByteTokenizer

EOG = ByteTokenizer().eos_token_id
STRUCTURAL = {ord(c) for c in "{}[],:"}


class Walkable(Protocol):
    def reset(self) -> None: ...
    def allowed(self) -> list[int]: ...
    def take(self, token: int) -> None: ...


def walk(matcher: Walkable, rng: random.Random, max_tokens: int = 400) -> list[int] | None:
    """The token ids of one walk, or None when it did not end within `max_tokens`."""
    matcher.reset()
    out: list[int] = []
    for _ in range(max_tokens):
        allowed = matcher.allowed()
        may_end = EOG in allowed
        choices = [t for t in allowed if t != EOG]
        if may_end and (not choices or rng.random() < 0.3):
            return out
        assert choices, f"the mask allows nothing after {len(out)} tokens"
        structural = [t for t in choices if t >= FIRST_SPECIAL or t in STRUCTURAL]
        pool = structural if structural and rng.random() < 0.35 else choices
        token = rng.choice(pool)
        matcher.take(token)
        out.append(token)
    return None
