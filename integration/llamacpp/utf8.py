"""Byte strings that are no UTF-8 but that llama.cpp's grammar takes whatever the grammar says.

llama.cpp decodes a token's bytes before it matches them (decode_utf8 in llama-grammar.cpp), and
reads the overlong three- and four-byte forms (E0 80-9F .., F0 80-8F .. ..) as the code point
they spell, which a grammar over code points cannot tell from its short form; llguidance matches
bytes, and refuses them. A walk under llama.cpp's mask that writes one is counted apart, not
compared. (The other lenient readings, values beyond U+10FFFF and surrogates, a grammar can
refuse, and the GBNF printer does: gemma4_lark/constrain/dialects.py.)"""

from __future__ import annotations

import re

_OVERLONG = re.compile(rb"\xe0[\x80-\x9f]|\xf0[\x80-\x8f]")


def overlong(data: bytes) -> bool:
    """Whether `data` holds an overlong form llama.cpp reads as a code point."""
    return _OVERLONG.search(data) is not None
