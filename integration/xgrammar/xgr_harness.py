"""xgrammar over a byte-level test vocabulary: one token per byte and one per Gemma marker."""

from __future__ import annotations

import json
import random

import xgrammar as xgr

from gemma4_lark import tokens

SPECIALS = tuple(tokens.CONTROL_TOKENS)
SPECIAL_ID = {token: 256 + i for i, token in enumerate(SPECIALS)}
EOS_ID = SPECIAL_ID[tokens.EOS]
INFO = xgr.TokenizerInfo([bytes([i]) for i in range(256)] + [s.encode() for s in SPECIALS],
                         vocab_type=xgr.VocabType.RAW, stop_token_ids=[EOS_ID])
COMPILER = xgr.GrammarCompiler(INFO, cache_enabled=True)


def encode(text: str) -> list[int]:
    """A Gemma marker as its token, anything else as its bytes."""
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
    return b"".join(bytes([t]) if t < 256 else SPECIALS[t - 256].encode() for t in ids).decode(errors="replace")


def compiled(ebnf: str) -> xgr.CompiledGrammar:
    return COMPILER.compile_grammar(ebnf)


def compiled_tag(tag: dict) -> xgr.CompiledGrammar:
    return COMPILER.compile_structural_tag(json.dumps(tag))


def accepts(grammar: xgr.CompiledGrammar, text: str, *, complete: bool = True) -> bool:
    """Whether the matcher takes every token of `text` (and then the end, when `complete`)."""
    m = xgr.GrammarMatcher(grammar)
    if not all(m.accept_token(t) for t in encode(text)):
        return False
    return m.accept_token(EOS_ID) if complete else True


def allowed(m: xgr.GrammarMatcher) -> list[int]:
    mask = xgr.allocate_token_bitmask(1, INFO.vocab_size)
    m.fill_next_token_bitmask(mask)
    words = mask[0].tolist()
    return [i for i in range(INFO.vocab_size) if (words[i // 32] >> (i % 32)) & 1]


_STRUCTURAL = set(b'{}[],:"') | set(SPECIAL_ID.values())


def random_walk(grammar: xgr.CompiledGrammar, rng: random.Random, max_tokens: int = 400) -> str | None:
    """Sample allowed tokens until the end is allowed (then stop): the text, or None."""
    m = xgr.GrammarMatcher(grammar)
    ids: list[int] = []
    for _ in range(max_tokens):
        choices = allowed(m)
        if EOS_ID in choices:
            return decode(ids)
        structural = [t for t in choices if t in _STRUCTURAL]
        printable = [t for t in choices if 0x20 <= t < 0x7f] or choices
        pool = structural if structural and rng.random() < 0.35 else printable if rng.random() < 0.9 else choices
        token = rng.choice(pool)
        assert m.accept_token(token)
        ids.append(token)
    return None
