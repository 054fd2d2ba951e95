"""An accept-only fast path for call blocks: the common block decoded by C code (`re`, `json`).

The LALR driver spends most of a typical call in Python: a loop step per token, a method call per
value. This path rewrites the block into JSON with a few regex substitutions and lets the C JSON
decoder check the structure and build the values. It only ever accepts: whatever it cannot take
(anything unusual, anything wrong) it hands back as None, and the LALR path decides, so every result
it does give is the one the grammar gives, and every error, diagnostic and limit is the LALR path's.

How (each pattern below is one of the grammar's terminals, read from it, never restated):

1. The head `<|tool_call>call:NAME{` and the tail `}<tool_call|>` are matched with the grammar's
   literals, its NAME and its WS.
2. The body is split at the string delimiter. In a block the grammar accepts, a delimiter can only
   open or close a STRING (no other terminal holds one), so the odd pieces are the strings' texts,
   taken exactly as the grammar takes them, and the even ones the structure around them. (A long
   block is split by marker_search, which finds the delimiter's `<` by memchr; a stream's scan that
   found the delimiters already hands their places over, and the block is not searched again.)
3. The structure is refused when it holds a character JSON would read differently from the
   grammar (`"`, `'`, `\\`); then each string becomes a `'` placeholder, bare keys before `:` and
   bare words in value position are quoted (KEY and BARE_WORD, with the grammar's patterns; a
   bare word that ends where no value can refuses the block at once), the null spellings `None`
   and `none` become `null`, and the placeholders become the strings, JSON-encoded by C; or, when
   the strings are long, tokens (`"'3"`) that a walk over the decoded value replaces with the
   strings as they are.
4. `json.loads` decodes it, or refuses: JSON's numbers, literals and structure are a subset of the
   grammar's (`.5`, `007`, a trailing comma, a key in a list... are refused and go to LALR).
   Refused too, to keep the grammar's limits exact: more brackets than the depth limit, a digit run
   long enough to approach the integer digit limit, a float beyond a double, JSON's own NaN and
   Infinity; a repeated key when the caller asks for the duplicate-key report; and, for memory, a
   big block of many short strings.

tests/differential/test_fastpath.py checks by differential fuzzing (canonical, mutated, hostile and
grammar-generated blocks) that every block this path takes decodes exactly as the LALR path
decodes it, and that it takes the typical ones.
"""

from __future__ import annotations

import functools
import json
import re
from json.encoder import encode_basestring

from . import grammar, marker_search, tokens
from .model import ToolCall
from .error_base import Gemma4Error

_INFINITY = float("inf")
# json.loads refuses an int of more digits than the interpreter's limit, which may be above this
# project's (values.integer_digit_limit); a run of this many digits goes to LALR, which knows.
_LONGEST_DIGIT_RUN = 640
# Past this many characters in all, and this many on average, the strings cost more to JSON-encode
# and decode (about 6 ns a character) than to put back into the decoded value by a walk over it:
# the template then holds a token per string (`"'3"`: no key or bare word holds `'`), and the walk
# puts the texts in as they are, never copied or read again. (Many short strings stay encoded: a
# token and its decoded copy would cost more memory than the string.)
_LONG_STRINGS = 2048
_LONG_STRING_AVERAGE = 64
# Past this size a block with many short strings is left to LALR: each string costs this path a
# piece and an encoded copy (about 100 bytes for `<|"|>x<|"|>,`), LALR about 8.
_SHORT_STRINGS_BLOCK = 16 * 1024
_PLACEHOLDER = "'"          # no terminal of the structure holds one: the grammar's BARE_WORD and
_REFUSED = ('"', "\\", "'")  # KEY exclude it, and JSON reads `"` and `\` as its own


class _Refused(Gemma4Error):
    pass


def _float(text: str) -> float:
    value = float(text)
    if value == _INFINITY or value == -_INFINITY:  # the grammar: a number has to be a double
        raise _Refused
    return value


def _constant(_name: str):
    raise _Refused  # NaN, Infinity, -Infinity: JSON's, not the grammar's


def _unique(pairs):
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Refused  # a repeated key: the LALR path reports where (the caller asked for that)
    return value


_decode = json.JSONDecoder(parse_float=_float, parse_constant=_constant).decode
_decode_unique = json.JSONDecoder(parse_float=_float, parse_constant=_constant, object_pairs_hook=_unique).decode


def _quoted(m) -> str:
    """The key or bare word of a `words` match, quoted, after what opened it; a word that ends
    where no value can (its last group matched) refuses the block. A function, not a template:
    Python 3.11 and 3.10 expand a template's group references in a Python function per match that
    costs more than twice this one (10 words: 22 µs against 8, on top of 7.5 µs of matching)."""
    opener, key, before, word, stuck = m.groups()
    if stuck is not None:
        raise _Refused
    return f'{opener}"{key}"' if key is not None else f'{before}"{word}"'


def _pattern(name: str) -> str:
    return grammar.terminal_pattern(name).pattern


@functools.lru_cache(maxsize=1)
def _compiled():
    """The fast path's regexes, built from the grammar's terminals on first use."""
    lit = grammar.terminal_literal
    blank = f"(?:{_pattern('WS')})?"
    head = re.compile(re.escape(lit("TOOL_CALL_OPEN")) + blank + re.escape(lit("CALL_KEYWORD")) + blank
                      + f"({_pattern('NAME')})" + blank + re.escape(lit("LBRACE")))
    # Where a key or a value stands, and where one ends: after `{` or `,` (a key) or `:` `[` `,` (a
    # value), before `:` (a key) or `,` `}` `]` (a value), whitespace aside. Each pattern starts
    # with that character, not a look-behind, so that the regex engine skips to it.
    opens_key = "[" + re.escape(lit("LBRACE") + lit("COMMA")) + "]"
    opens_value = "[" + re.escape(lit("COLON") + lit("LBRACKET") + lit("COMMA")) + "]"
    ends_value = "[" + re.escape(lit("COMMA") + lit("RBRACE") + lit("RBRACKET")) + "]"
    colon = re.escape(lit("COLON"))
    # A bare word is what the lexer reads there: BARE_WORD, unless it is exactly one of the
    # literal terminals (Lark's lexer gives the literal precedence over a pattern matching it).
    # It must be the lexer's whole match, not a longer one found by backtracking to meet the
    # lookahead (`fa<|think|>lse`): a lookahead is atomic, and the backreference takes exactly
    # what it matched. Keys and bare words are quoted by one pass: one alternative each, and
    # the groups of the one that did not match are None.
    # A bare word that ends where no value can (before `[`, `{`, a string, a control token) is
    # taken too, its last group matching empty: JSON could not read the block, so it is refused
    # there, at once. Left untaken, the search went on inside the word, and a word of n colons
    # (BARE_WORD holds `:`) was read again from each of them: quadratic, 8 s for a 16 KB block.
    literals = "|".join(re.escape(lit(n)) for n in ("TRUE", "FALSE", "NULL"))
    words = re.compile(f"({opens_key}{blank})({_pattern('KEY')})(?={blank}{colon})"
                       f"|({opens_value}{blank})(?!(?:{literals}){blank}{ends_value})"
                       f"(?=({_pattern('BARE_WORD')}))\\4(?:(?={blank}{ends_value})|())")
    digits = re.compile(f"[0-9]{{{_LONGEST_DIGIT_RUN}}}")
    null_spellings = (lit("NULL_PYTHON"), lit("NULL_OMP"))
    return (head.match, lit("RBRACE") + lit("TOOL_CALL_CLOSE"), words.sub, null_spellings,
            digits.search, (lit("LBRACE"), lit("LBRACKET")), lit("NULL"))


def parse_call(text: str, max_depth: int, *, unique_keys: bool = False, delimiters: list[int] | None = None):
    """The ToolCall `text` decodes to, exactly as the grammar decodes it; or None when this path
    does not take `text` (the LALR path then decides, error or value). With `unique_keys`, a block
    that repeats a key in some object is not taken either: a caller that wants the duplicate-key
    report (with each key's position) gets it from the LALR path, and one whose block has no
    repeated key still gets this path's speed. `delimiters`: where every string delimiter of
    `text` is, in order, when the caller found them already (a stream's scan does); not looked
    for again."""
    head, close, words, null_spellings, digits, (brace, bracket), null = _compiled()
    start = head(text)
    if start is None or not text.endswith(close):  # (whitespace before the closer: LALR's)
        return None
    body, end = start.end() - 1, len(text) - len(close) + 1
    if delimiters is None:
        if end - body < marker_search.SHORT:  # (the common block: no call more than needed)
            pieces = text[body:end].split(tokens.STRING_DELIMITER)
        else:
            pieces = marker_search.split(text, tokens.STRING_DELIMITER, body, end)
    elif not delimiters:
        pieces = [text[body:end]]
    elif delimiters[0] < body or delimiters[-1] >= end:
        return None  # (a delimiter in the head or the closer: not a block this path takes)
    else:
        size = len(tokens.STRING_DELIMITER)
        pieces = [text[begin:finish] for begin, finish in zip([body] + [at + size for at in delimiters], delimiters + [end])]
    if not len(pieces) & 1:  # an unclosed string
        return None
    strings = pieces[1::2]
    length = sum(map(len, strings))
    by_token = length > _LONG_STRINGS and length > _LONG_STRING_AVERAGE * len(strings)
    if not by_token and strings and len(text) > _SHORT_STRINGS_BLOCK:
        return None
    structure = pieces[::2]
    for piece in structure:
        for char in _REFUSED:
            if char in piece:
                return None
    template = _PLACEHOLDER.join(structure)
    if template.count(brace) + template.count(bracket) > max_depth or digits(template):
        return None
    if any(spelling in template for spelling in null_spellings):
        # A bare word that is exactly `None` or `none` is the null the lexer reads; one that only
        # holds it (`:None` after a key's colon) stays a word: decided on the lexer's whole match.
        def quoted(m):
            if m.group(5) is not None:
                raise _Refused
            if m.group(2) is not None:
                return f'{m.group(1)}"{m.group(2)}"'
            word = m.group(4)
            return m.group(3) + (null if word in null_spellings else f'"{word}"')
    else:
        quoted = _quoted
    try:
        template = words(quoted, template)
    except _Refused:
        return None
    if by_token:
        template = template.replace("%", "%%").replace(_PLACEHOLDER, '"\'%d"') % tuple(range(len(strings)))
    elif strings:
        template = template.replace("%", "%%").replace(_PLACEHOLDER, "%s") % tuple(map(encode_basestring, strings))
    try:
        arguments = (_decode_unique if unique_keys else _decode)(template)
        if by_token:
            arguments = _put_back(arguments, strings)
    except (ValueError, _Refused, RecursionError):
        return None
    return ToolCall(start.group(1), arguments)


def _put_back(value: dict, strings: list) -> dict:
    """`value` with each string token (`'N`) replaced by the Nth string, keys included; iterative.
    Refuses two keys of one object that are the same string once put back (`{a:1,<|"|>a<|"|>:2}`):
    the LALR path says which wins and reports the repeat."""
    def back(item):
        if type(item) is str and item[:1] == _PLACEHOLDER:
            return strings[int(item[1:])]
        return item

    root = {"": value}
    todo = [root]
    while todo:
        container = todo.pop()
        if type(container) is dict:
            items = list(container.items())
            container.clear()
            for key, item in items:
                key = back(key)
                if key in container:
                    raise _Refused
                container[key] = back(item)
                if type(item) is dict or type(item) is list:
                    todo.append(item)
        else:
            for i, item in enumerate(container):
                if type(item) is str:
                    container[i] = back(item)
                elif type(item) is dict or type(item) is list:
                    todo.append(item)
    return root[""]
