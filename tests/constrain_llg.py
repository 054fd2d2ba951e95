"""llguidance over a byte-level test vocabulary, for the tool-schema tests.

The vocabulary has one token per byte and one special token per Gemma marker (as the real
tokenizer has them: `<|tool_call>`, `<|"|>`, ... are single tokens, never spelled in bytes).
`to_lark` prints the IR with the export's llguidance printer (`constrain.dialects`).
"""

from __future__ import annotations

import random

import llguidance as llg

from gemma4_lark import tokens
from gemma4_lark.constrain import ir
from gemma4_lark.constrain.dialects import to_llguidance

SPECIALS = tuple(tokens.CONTROL_TOKENS)
SPECIAL_ID = {token: 256 + i for i, token in enumerate(SPECIALS)}
EOS_ID = SPECIAL_ID[tokens.EOS]


class _ByteVocabulary:
    def __init__(self):
        # llguidance marks special tokens by a leading 0xFF byte
        self.tokens = [bytes([i]) for i in range(256)] + [b"\xff" + s.encode() for s in SPECIALS]
        self.special_token_ids = list(SPECIAL_ID.values())
        self.eos_token_id = EOS_ID
        self.bos_token_id = SPECIAL_ID[tokens.BOS]

    def __call__(self, text):
        return list(text.encode() if isinstance(text, str) else text)


TOKENIZER = llg.LLTokenizer(llg.TokenizerWrapper(_ByteVocabulary()))


def encode(text: str) -> list[int]:
    """`text` as token ids: a Gemma marker is its special token, anything else its bytes."""
    ids: list[int] = []
    i = 0
    while i < len(text):
        for special in SPECIALS:
            if text.startswith(special, i):
                ids.append(SPECIAL_ID[special])
                i += len(special)
                break
        else:
            ids.extend(text[i].encode())
            i += 1
    return ids


def decode(ids: list[int]) -> str:
    out = bytearray()
    for t in ids:
        out += TOKENIZER.decode_bytes([t]) if t < 256 else SPECIALS[t - 256].encode()
    return out.decode()


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
