"""The xgrammar export's character classes, run by xgrammar's own matcher byte by byte: every
class the exports write (negated ones, `[^<]` above all, and the tool exports' string and enum
classes) takes exactly the UTF-8 encodings of the characters it holds, and no byte sequence that
is not UTF-8 (a lone continuation byte, an overlong form, a surrogate, a value past U+10FFFF, a
sequence cut short).

The vocabulary is one token per byte (xgr_harness), so the mask is asked about each byte in turn:
a class that took a byte no UTF-8 encoding starts with, or a continuation where none can follow,
would let a model write text that is no UTF-8, which the parser then cannot read as written.
"""

import pytest
from xgr_harness import EOS_ID, allowed, compiled, encode

import xgrammar as xgr

from gemma4_lark import constrain, tokens

D = tokens.STRING_DELIMITER

# (what it is, the bytes): none of them is UTF-8
NOT_UTF8 = [
    ("a lone continuation byte", b"\x80"),
    ("a continuation byte after ASCII", b"a\xbf"),
    ("an overlong `/` (C0 AF)", b"\xc0\xaf"),
    ("an overlong two-byte lead (C1)", b"\xc1\x81"),
    ("an overlong three-byte form (E0 80 AF)", b"\xe0\x80\xaf"),
    ("an overlong four-byte form (F0 80 80 AF)", b"\xf0\x80\x80\xaf"),
    ("a surrogate (ED A0 80)", b"\xed\xa0\x80"),
    ("a low surrogate (ED BF BF)", b"\xed\xbf\xbf"),
    ("past U+10FFFF (F4 90 80 80)", b"\xf4\x90\x80\x80"),
    ("a lead byte F5", b"\xf5\x80\x80\x80"),
    ("a lead byte FF", b"\xff"),
    ("a two-byte sequence cut short", b"\xc3a"),
    ("a three-byte sequence cut short", b"\xe2\x82a"),
    ("a four-byte sequence cut short", b"\xf0\x9f\x98a"),
]

UTF8 = ["é", "€", "\u0800", "\ud7ff", "\ue000", "\uffff", "😀", "\U00010000", "\U0010ffff", "a\u00a0b"]


def _matcher_after(grammar: xgr.CompiledGrammar, prefix: str) -> xgr.GrammarMatcher:
    m = xgr.GrammarMatcher(grammar)
    for t in encode(prefix):
        assert m.accept_token(t), prefix
    return m


def _takes(grammar, prefix: str, data: bytes, suffix: str) -> bool:
    """Whether the matcher, after `prefix`, takes each byte of `data`, then `suffix` and the end."""
    m = _matcher_after(grammar, prefix)
    for b in data:
        if b not in allowed(m):  # the mask, as a sampler sees it
            return False
        assert m.accept_token(b)
    return all(m.accept_token(t) for t in encode(suffix)) and m.accept_token(EOS_ID)


# Where each export writes a class over free text: (label, export, prefix, suffix).
def _places():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"type": "string"}, "p": {"type": "string", "pattern": "^[^x]+$"}},
        "required": []}}}]
    call = constrain.grammar("xgrammar", scope="call")
    output = constrain.grammar("xgrammar", scope="output")
    typed = constrain.grammar("xgrammar", tools=tools)
    return [
        ("call scope: a string", call, "<|tool_call>call:f{a:" + D, D + "}<tool_call|>"),
        ("output scope: text", output, "Hi ", ""),
        ("output scope: a thought", output, "<|channel>thought\n", "<channel|>"),
        ("tools: a string parameter", typed, "<|tool_call>call:f{s:" + D, D + "}<tool_call|>"),
        ("tools: a string with a negated pattern", typed, "<|tool_call>call:f{p:" + D + "y", D + "}<tool_call|>"),
    ]


PLACES = _places()


@pytest.mark.parametrize("label, text, prefix, suffix", PLACES, ids=[p[0] for p in PLACES])
@pytest.mark.parametrize("what, data", NOT_UTF8, ids=[n for n, _ in NOT_UTF8])
def test_a_class_takes_no_byte_sequence_that_is_not_utf8(label, text, prefix, suffix, what, data):
    grammar = compiled(text)
    assert not _takes(grammar, prefix, data, suffix), f"{label}: {what} {data!r} taken"


@pytest.mark.parametrize("label, text, prefix, suffix", PLACES, ids=[p[0] for p in PLACES])
def test_a_class_takes_every_utf8_length(label, text, prefix, suffix):
    grammar = compiled(text)
    for char in UTF8:
        assert _takes(grammar, prefix, char.encode(), suffix), f"{label}: {char!r} refused"


def test_the_check_can_fail():
    """xgrammar's own negated class takes a surrogate's bytes: written as `[^<]`, the export would
    fail the check above (it did, before the printer excluded them)."""
    raw = compiled('root ::= "a" [^<]* "b"')
    assert _takes(raw, "a", b"\xed\xa0\x80", "b")
    assert not _takes(raw, "a", b"\x80", "b")  # the other sequences xgrammar refuses on its own
