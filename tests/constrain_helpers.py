"""The engines that check the exports: llguidance's matcher over a byte-level vocabulary in which
Gemma's markers are special tokens (as in the real tokenizer), llguidance's own GBNF reader, and
Python Lark for the portable export."""

from __future__ import annotations

import functools
import random
import re

import pytest

from gemma4_lark import tokens

llg = pytest.importorskip("llguidance")

MARKERS = tuple(tokens.CONTROL_TOKENS)
FIRST_SPECIAL = 256


class ByteTokenizer:
    """256 byte tokens, then one special token per marker, then the engine's end of sequence.

    The end of sequence is a token of its own, not `<eos>`: the engine takes it as "stop here",
    which would hide what the grammar says about a written `<eos>` (a stop marker in a turn,
    refused after a call block)."""

    def __init__(self):
        self.tokens = [bytes([i]) for i in range(256)] + [m.encode() for m in MARKERS] + [b"<|end|>"]
        self.special_token_ids = list(range(FIRST_SPECIAL, FIRST_SPECIAL + len(MARKERS) + 1))
        self.eos_token_id = FIRST_SPECIAL + len(MARKERS)
        self.bos_token_id = FIRST_SPECIAL + MARKERS.index(tokens.BOS)

    def __call__(self, data: bytes):
        return list(data)


@functools.lru_cache(maxsize=1)
def tokenizer():
    return llg.LLTokenizer(llg.TokenizerWrapper(ByteTokenizer()))


def encode(text: str) -> tuple[list[int], list[int]]:
    """The token ids of `text` as the model would write it (each marker its special token, the
    rest bytes), and the character offset where each token starts."""
    ids, starts = [], []
    i = 0
    while i < len(text):
        for j, marker in enumerate(MARKERS):
            if text.startswith(marker, i):
                ids.append(FIRST_SPECIAL + j)
                starts.append(i)
                i += len(marker)
                break
        else:
            for b in text[i].encode("utf-8"):
                ids.append(b)
                starts.append(i)
            i += 1
    return ids, starts


def decode(ids) -> str:
    out = bytearray()
    for t in ids:
        out += ByteTokenizer().tokens[t]
    return out.decode("utf-8")


class Matcher:
    """One compiled grammar, reset for each text."""

    def __init__(self, grammar: str):
        error = llg.LLMatcher.validate_grammar(grammar, tokenizer())
        assert not error, error
        self.matcher = llg.LLMatcher(tokenizer(), grammar, log_level=0)
        assert not self.matcher.is_error(), self.matcher.get_error()

    def accepted_prefix(self, text: str) -> tuple[bool, int]:
        """(whether the whole text is accepted, the character offset of the first token refused
        or len(text) when none is)."""
        self.matcher.reset()
        ids, starts = encode(text)
        taken = self.matcher.try_consume_tokens(ids)
        if taken < len(ids):
            return False, starts[taken]
        return self.matcher.is_accepting(), len(text)

    def accepts(self, text: str) -> bool:
        return self.accepted_prefix(text)[0]

    def random_walk(self, rng: random.Random, max_tokens: int = 400) -> str | None:
        """Tokens drawn at random among those the mask allows, until the matcher accepts (then
        stopping there or going on at random); None when `max_tokens` run out first. Structural
        tokens are drawn more often than bytes so that walks end."""
        m = self.matcher
        m.reset()
        out: list[int] = []
        eos = ByteTokenizer().eos_token_id
        for _ in range(max_tokens):
            if m.is_accepting() and rng.random() < 0.3:
                return decode(out)
            mask = m.compute_bitmask()
            allowed = [i for i in range(len(mask) * 8) if mask[i // 8] >> (i % 8) & 1 and i < tokenizer().vocab_size]
            allowed = [t for t in allowed if t != eos] or allowed
            if not allowed:
                return decode(out) if m.is_accepting() else None
            special = [t for t in allowed if t >= FIRST_SPECIAL or chr(t) in "{}[],:"]
            pool = special if special and rng.random() < 0.35 else allowed
            token = rng.choice(pool)
            if token == eos:
                return decode(out)
            assert m.consume_token(token), m.get_error()
            out.append(token)
            if m.is_stopped():
                return decode(out)
        return decode(out) if m.is_accepting() else None


def gbnf_as_llguidance(gbnf: str) -> str:
    """A GBNF export through llguidance's own reader (`gbnf_to_lark`). That reader predates
    GBNF's token syntax (`<|tool_call>`), so each token stands in for a rule while it reads, and
    is put back as llguidance's token syntax (the same spelling) after."""
    from llguidance.gbnf_to_lark import gbnf_to_lark

    names: dict[str, str] = {}

    def stand_in(m):
        return names.setdefault(m.group(0), f"tok-{len(names)}")

    # a token is `<...>` outside a quoted literal or class: read left to right
    lexeme = re.compile(r'(<[^<>\s]+>)|"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]')
    body = lexeme.sub(lambda m: stand_in(m) if m.group(1) else m.group(0), gbnf)
    # the reader drops an escape's leading zeros (`\U0010ffff` becomes `\U10ffff`, which its
    # regex refuses): `\uNNNN` and `\UNNNNNNNN` are put in as the characters they stand for
    escape = re.compile(r"(\\\\)|\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})")
    body = escape.sub(lambda m: m.group(1) or chr(int(m.group(2) or m.group(3), 16)), body)
    # recursive, so that the reader keeps them rules (a token cannot stand inside a terminal)
    body += "".join(f'{n} ::= "@{n}@" | {n} "@"\n' for n in names.values())
    out = gbnf_to_lark(body)
    for token, n in names.items():
        ln = n.replace("-", "_")
        out, count = re.subn(ln + r': "@' + n + r'@"\s*\| ' + ln + r' "@"', lambda _m: f"{ln}: {token}", out)
        assert count == 1, (token, out[-500:])
    return out


def lark_parser(text: str):
    """The portable export, as Python Lark reads it (see docs/constrained-decoding.md)."""
    import lark

    return lark.Lark(text, parser="earley", lexer="dynamic_complete")
