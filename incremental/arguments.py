"""A call's arguments as JSON text while the block is being written: the grammar's LALR tables run
as a push parser over the tokens of the open block.

`ArgumentStream.feed(text)` takes the block's text from its arguments' `{` on, in pieces of any size,
and returns the JSON fragment that the pieces complete. The fragments concatenated are a prefix of
`json.dumps(arguments, ensure_ascii=False)` (Python's default layout: `", "` between items, `": "`
after keys) of the call the whole block decodes to, when the grammar accepts it. What goes out:

- only tokens that the grammar's parser has shifted: each token is checked against the action table
  of `gemma4_lark.parser.block_parser()` (Lark's own tables, the same the strict parser runs), with
  the lexer of the parser's state, so the text sent is always a viable prefix of the grammar;
- a token only once no further input can change it: a bare scalar, number, key or bare word once the
  next `,` `}` `]` or `:` is in sight (`108.` may become `108.02`, `tru` a word or `true`); an
  open string's content as it comes (JSON escaping works character by character), holding back a
  possible half `<|"|>` and the closing quote until the delimiter has arrived;
- a `,` only with the token after it (a trailing comma, which the grammar rejects, never goes out);
- never the object's closing `}`: the caller sends it (the rest of `json.dumps`) when the block has
  been decoded, so the fragments of a block that fails never form complete JSON.

A repeated key goes out as the model wrote it, again (`repeated` turns True): the JSON then states
the key twice, and reads (last value wins, as `json.loads`, `JSON.parse` and pydantic read it) as the
decoded call, which keeps the last value at the first key's place; it is no longer a prefix of
`json.dumps` of the decoded call, so the caller checks that reading when the call is decoded.

The stream stops (sends nothing more; `stopped` is True) at the first token the grammar rejects,
at a number out of range, at nesting deeper than `max_depth`, and at a token
longer than `MAX_TOKEN_CHARS` (so that re-reading a token that is still growing costs at most that
much: the stream stays linear). Stopping is not failing: the caller sends the rest when the call
is decoded.
"""

from __future__ import annotations

import json
import re

from gemma4_lark import tokens
from gemma4_lark.grammar import whitespace
from gemma4_lark.parser import block_parser

from .pieces import COMPACT_EVERY, Pieces

__all__ = ["ArgumentStream", "MAX_TOKEN_CHARS"]

MAX_TOKEN_CHARS = 4096
_D = tokens.STRING_DELIMITER
_DELIMITER_PREFIXES = tuple(_D[:k] for k in range(len(_D) - 1, 0, -1))  # longest first
# Terminals of one character that no other terminal can contain or extend: final once matched.
_SINGLE = {"LBRACE": "{", "RBRACE": "}", "LBRACKET": "[", "RBRACKET": "]", "COLON": ": "}
_FINAL = frozenset(_SINGLE) | {"COMMA"}  # a `,` too is final once matched
_OPENERS, _CLOSERS = ("LBRACE", "LBRACKET"), ("RBRACE", "RBRACKET")
_LITERALS = {"TRUE": "true", "FALSE": "false", "NULL": "null", "NULL_PYTHON": "null", "NULL_OMP": "null"}
# A token other than a string or the single characters above is final once one of these follows it
# (after whitespace): no terminal but a string holds them, and no terminal's lookahead reads past them.
_CONFIRMER = re.compile("[" + re.escape(whitespace()) + r"]*[,}\]:]")
_ANY_CONFIRMER = re.compile(r"[,}\]:]")
# What json.dumps writes for a finite float (json.encoder's `floatstr`), without its encoder's
# per-call set-up (several µs a number)
_float_json = float.__repr__
_INFINITIES = (float("inf"), float("-inf"))
# json's own string encoder for ensure_ascii=False (C when available): what json.dumps does to a str
_encode_string = json.encoder.encode_basestring


# What json.dumps(..., ensure_ascii=False) escapes in a string (its own ESCAPE pattern)
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\\"]')


def _escaped(text: str) -> str:
    """`text` as inside a JSON string (escaping is per character, so pieces concatenate)."""
    return _encode_string(text)[1:-1] if _NEEDS_ESCAPE.search(text) else text


class ArgumentStream:
    """Push-parse one call's arguments, from their `{`; `feed` returns the JSON that is sure."""

    def __init__(self, *, max_depth: int = 512, typed: bool = False):
        lean = block_parser()
        # The call is decoded against its tool's schema, which may retype any bare scalar (`01`
        # as "01"): the stream stops before the first one, so what it sent stays a prefix of the
        # typed call (keys and delimited strings are never retyped).
        self._typed = typed
        self._actions = lean.actions
        self._lexers = lean.lexers
        self._stack = [lean.start_states["value_document"]]
        self._max_depth = max_depth
        self._buffer = ""         # text not yet read into tokens
        self._look_from = 0       # where in `_buffer` to look for a confirming character next
        self._in_string = False   # inside an open `<|"|>` string (already shifted)
        self._string_key: list[str] | None = None   # the text of an open string key
        self._comma = False       # a `,` accepted but not sent: it goes out with the next token
        self._containers: list = []   # per open bracket: None for an array, the set of keys for an object
        self._expect_key = False
        self.stopped = False
        self.closed = False       # the top-level object's `}` was read (and not sent)
        self.repeated = False     # a key was repeated in an object (and sent again)
        # Inside a string value with nothing buffered, still streaming: most pieces of a long call
        # are then content as a whole (`feed`'s first test; kept up to date at the end of `feed`).
        self._plain = False
        self._sent = Pieces()     # what went out, kept compactly (a fragment per 1-char chunk is common)

    def stop(self) -> None:
        """Send nothing more (the caller sends the rest once the call is decoded)."""
        self.stopped = True
        self._plain = False

    @property
    def sent(self) -> str:
        """All the JSON sent so far."""
        return self._sent.text()

    def feed_content(self, text: str) -> str | None:
        """When the stream is inside a string value with nothing held back and `text` holds no
        delimiter: `text` is the string's content (but for a possible half delimiter at its end,
        held back), and this is its JSON fragment, as `feed` would return it. Else None, and
        nothing is read. Raises nothing."""
        if not self._plain:
            return None
        if "<" in text:
            if _D in text:
                return None
            if text.endswith(_DELIMITER_PREFIXES):  # the content before a possible half delimiter
                for half in _DELIMITER_PREFIXES:  # (longest first)
                    if text.endswith(half):
                        break
                self._buffer = half
                self._plain = False
                text = text[:-len(half)]
        if _NEEDS_ESCAPE.search(text) is not None:
            text = _encode_string(text)[1:-1]
        if text:
            small = self._sent.small  # (Pieces.append, inlined: the hot path)
            small.append(text)
            if len(small) >= COMPACT_EVERY:
                self._sent.compact()
        return text

    def feed(self, text: str) -> str:
        """The JSON that `text` (the next piece of the block) makes sure. Raises nothing."""
        if self._plain and "<" not in text:
            # the common case inside a long string value: all of it is content
            if _NEEDS_ESCAPE.search(text) is not None:
                text = _encode_string(text)[1:-1]
            small = self._sent.small  # (Pieces.append, inlined: the hot path)
            small.append(text)
            if len(small) >= COMPACT_EVERY:
                self._sent.compact()
            return text
        if self.stopped or self.closed or not text:
            return ""
        out: list[str] = []
        buffer = self._buffer + text if self._buffer else text
        pos = 0
        try:
            pos = self._read(buffer, out)
        except (ValueError, OverflowError, RecursionError):  # a number Python cannot hold: the call decides
            self.stopped = True
        self._buffer = buffer[pos:] if not self.stopped and not self.closed else ""
        self._look_from = max(0, self._look_from - pos)
        if len(self._buffer) > MAX_TOKEN_CHARS:
            self.stopped = True
            self._buffer = ""
        self._plain = (self._in_string and self._string_key is None and not self._buffer and not self.stopped
                       and not self.closed)
        fragment = "".join(out)
        if fragment:
            self._sent.append(fragment)
        return fragment

    # --- reading tokens ---------------------------------------------------------------------------
    def _read(self, buffer: str, out: list) -> int:
        pos = 0
        n = len(buffer)
        stack = self._stack
        lexers = self._lexers
        shift = self._shift
        emit = self._emit
        while pos < n:
            if self._in_string:
                pos = self._read_string(buffer, pos, out)
                if self._in_string or self.stopped:
                    return pos
                continue
            match, ignore, keywords = lexers[stack[-1]]
            if buffer.startswith(_D, pos):
                if not self._open_string(match, out):
                    self.stopped = True
                    return pos
                pos += len(_D)
                continue
            if self._look_from and _ANY_CONFIRMER.search(buffer, self._look_from) is None:
                # still waiting for what confirms the token at `pos`: do not re-read it
                self._look_from = n
                return pos
            m = match(buffer, pos)
            if m is None:
                rest = buffer[pos:]
                # a half delimiter, or a token that needs more text to match at all
                if _D.startswith(rest) or (_ANY_CONFIRMER.search(buffer, pos) is None and n - pos < 64):
                    return pos
                self.stopped = True
                return pos
            type_ = m.lastgroup
            end = m.end()
            if type_ in ignore:
                if end == n:  # whitespace may go on; nothing to send for it anyway
                    return end
                pos = end
                continue
            if type_ not in _FINAL and (
                    self._look_from > end or _CONFIRMER.match(buffer, end) is None):
                # (most tokens are confirmed by what follows at once: one match; else) wait for
                # what confirms the token, looking only at text not looked at yet
                look = max(end, self._look_from)
                if look >= n or _ANY_CONFIRMER.search(buffer, look) is None:
                    self._look_from = n
                    return pos
                self.stopped = True  # something else follows: never confirmed
                return pos
            self._look_from = 0
            value = m.group()
            if type_ in keywords:
                type_ = keywords[type_](value) or type_
            if not shift(type_):
                self.stopped = True
                return pos
            emit(type_, value, out)
            pos = end
            if self.stopped or self.closed:
                return pos
        return pos

    def _read_string(self, buffer: str, pos: int, out: list) -> int:
        """Inside an open string: send its content up to the delimiter (or a possible half of it)."""
        close = buffer.find(_D, pos)
        if close < 0:
            end = len(buffer)
            for prefix in _DELIMITER_PREFIXES:
                if buffer.endswith(prefix, pos):
                    end -= len(prefix)
                    break
            self._string_text(buffer[pos:end], out)
            return end
        self._string_text(buffer[pos:close], out)
        self._in_string = False
        key = self._string_key
        self._string_key = None
        out.append('"')
        if key is not None:
            self._add_key("".join(key))
        return close + len(_D)

    def _string_text(self, text: str, out: list) -> None:
        if text:
            out.append(_escaped(text))
            if self._string_key is not None:
                self._string_key.append(text)

    def _open_string(self, match, out: list) -> bool:
        """At `<|"|>`: the lexer of this state reads a string here, and the parser takes one."""
        probe = match(_D + _D, 0)
        if probe is None or probe.lastgroup != "STRING" or not self._shift("STRING"):
            return False
        self._in_string = True
        self._string_key = [] if self._expect_key else None
        self._flush_comma(out)
        out.append('"')
        if self._expect_key:
            self._expect_key = False
        return True

    # --- the parser -------------------------------------------------------------------------------
    def _shift(self, type_: str) -> bool:
        """Run the table for one token: its reductions, then its shift. False (and the stack as it
        was) when the grammar rejects the token here."""
        actions = self._actions
        stack = self._stack
        keep = len(stack)       # stack[:keep] is untouched so far
        pushed: list[int] = []  # states pushed above it
        while True:
            state = pushed[-1] if pushed else stack[keep - 1]
            action = actions[state].get(type_)
            if action is None:
                return False
            size, _, origin = action
            if size is None:  # shift
                del stack[keep:]
                stack.extend(pushed)
                stack.append(action[1])
                return True
            if size <= len(pushed):
                del pushed[len(pushed) - size:]
            else:
                keep -= size - len(pushed)
                pushed = []
            state = pushed[-1] if pushed else stack[keep - 1]
            pushed.append(actions[state][origin][1])

    # --- JSON -------------------------------------------------------------------------------------
    def _emit(self, type_: str, value: str, out: list) -> None:
        containers = self._containers
        if type_ == "COMMA":
            self._comma = True
            self._expect_key = bool(containers) and containers[-1] is not None
            return
        if type_ in _CLOSERS:
            self._comma = False  # (the grammar took the closer: there was no comma before it)
            containers.pop()
            self._expect_key = False
            if not containers:
                self.closed = True  # the caller sends the closing `}` once the call is decoded
                return
            out.append(_SINGLE[type_])
            return
        if self._typed and type_ not in _OPENERS and type_ != "COLON" and type_ != "KEY":
            self.stopped = True  # a bare scalar: its type is the schema's to decide
            return
        self._flush_comma(out)
        if type_ in _OPENERS:
            if len(containers) >= self._max_depth:
                self.stopped = True
                return
            containers.append(set() if type_ == "LBRACE" else None)
            self._expect_key = type_ == "LBRACE"
            out.append(_SINGLE[type_])
            return
        if type_ == "COLON":
            out.append(": ")
            return
        if type_ == "KEY":
            self._expect_key = False
            if self._add_key(value):
                out.append(_encode_string(value))
            return
        if type_ in _LITERALS:
            out.append(_LITERALS[type_])
        elif type_ == "INTEGER":
            out.append(str(int(value)))
        elif type_ == "FLOAT":
            number = float(value)
            if number in _INFINITIES:
                self.stopped = True
                return
            out.append(_float_json(number))
        else:  # a bare word (a string is read by _read_string)
            out.append(_encode_string(value))

    def _flush_comma(self, out: list) -> None:
        if self._comma:
            out.append(", ")
            self._comma = False

    def _add_key(self, key: str) -> bool:
        keys = self._containers[-1]
        if key in keys:
            self.repeated = True  # sent again: the JSON reads as the decoded call (last value wins)
        else:
            keys.add(key)
        return True
