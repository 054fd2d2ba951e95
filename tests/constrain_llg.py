"""llguidance for the tool-schema tests, over the exports' byte-level vocabulary
(tests/constrain_helpers.py: one token per byte, one special token per Gemma marker, as the real
tokenizer has them): compiled grammars cached, token counts, and random walks under the mask.
`to_lark` prints the IR with the export's llguidance printer (`constrain.dialects`).
"""

from __future__ import annotations

import random

import llguidance as llg
from constrain_helpers import FIRST_SPECIAL, MARKERS, ByteTokenizer, decode, tokenizer
from constrain_helpers import encode as encode_with_offsets

from gemma4_lark.constrain import ir
from gemma4_lark.constrain.dialects import to_llguidance

TOKENIZER = tokenizer()
SPECIAL_ID = {marker: FIRST_SPECIAL + i for i, marker in enumerate(MARKERS)}
EOS_ID = ByteTokenizer().eos_token_id  # the engine's end of sequence (not the `<eos>` marker)


def encode(text: str) -> list[int]:
    """`text` as token ids: a Gemma marker is its special token, anything else its bytes."""
    return encode_with_offsets(text)[0]


# --- printer --------------------------------------------------------------------------------

def to_lark(grammar: ir.Grammar) -> str:
    """The IR in llguidance's Lark dialect, by the export's own printer."""
    return to_llguidance(grammar)


# --- matching -------------------------------------------------------------------------------

_COMPILED: dict[str, llg.LLMatcher] = {}


def matcher(lark: str) -> llg.LLMatcher:
    """A fresh matcher at the start of `lark` (compiled once, then copied)."""
    if lark not in _COMPILED:
        if len(_COMPILED) > 64:
            _COMPILED.clear()
        m = llg.LLMatcher(TOKENIZER, lark, log_level=0)
        assert not m.is_error(), m.get_error()
        _COMPILED[lark] = m
    return _COMPILED[lark].deep_copy()


def accepted_prefix(lark: str, text: str) -> tuple[int, bool]:
    """How many tokens of `text` the grammar takes, and whether it then accepts the whole."""
    m = matcher(lark)
    ids = encode(text)
    n = m.validate_tokens(ids)
    if n < len(ids):
        return n, False
    assert m.consume_tokens(ids), m.get_error()
    return n, m.is_accepting()


def accepts(lark: str, text: str) -> bool:
    n, whole = accepted_prefix(lark, text)
    return whole


def allowed(m: llg.LLMatcher) -> list[int]:
    mask = m.compute_bitmask()
    return [i for i in range(TOKENIZER.vocab_size) if mask[i // 8] >> (i % 8) & 1]


_STRUCTURAL = set(b'{}[],:"') | set(SPECIAL_ID.values())


def random_walk(m: llg.LLMatcher, rng: random.Random, max_tokens: int = 400) -> str | None:
    """Sample allowed tokens (structural ones often, so strings end) until the matcher accepts;
    the text, or None when it did not within `max_tokens`."""
    ids: list[int] = []
    for _ in range(max_tokens):
        if m.is_accepting():
            return decode(ids)
        choices = [t for t in allowed(m) if t != EOS_ID]
        assert choices, f"nothing allowed after {decode(ids)!r}"
        structural = [t for t in choices if t in _STRUCTURAL]
        printable = [t for t in choices if 0x20 <= t < 0x7f] or choices
        pool = structural if structural and rng.random() < 0.35 else printable if rng.random() < 0.9 else choices
        token = rng.choice(pool)
        assert m.consume_token(token), m.get_error()
        ids.append(token)
    return None
