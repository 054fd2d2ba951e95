"""The lenient decoder's walk over one call's arguments (`Decoder`): values, strings, keys and
containers, each recovery noted as a diagnostic whose span covers what it skipped or read
unusually (the package's docstring lists them). `Abandon`: the call is beyond recovery.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring as _json_string

from .. import tokens
from ..diagnostics import CODES, Diagnostic, LineIndex
from ..error_base import Gemma4Error
from ..schema.lexeme import Scalar
from .scalars import LITERALS, MAX_INT_DIGITS, looks_numeric, read_number

__all__ = ["Abandon", "Decoder", "MAX_NOTES", "WS"]

_DELIM = tokens.STRING_DELIMITER
WS = " \t\r\n"  # the WS terminal's characters (no grammar code here: tests/unit/test_recovery.py)
# A bare key that is anything else means the member split went wrong (an undelimited string
# with commas and colons): the decoder gives up rather than invent arguments.
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$@")
_ESCAPE = "<escape>"  # FunctionGemma's string delimiter, not Gemma 4's
_INTERIOR_DELIMITER = f"{_DELIM} inside a string read as a quote"
_UNCLOSED_BEFORE_MEMBER = f"the string opened here is not closed by {_DELIM}; it ends where the next member starts"
_STRAY_DELIMITER = f"{_DELIM} after an unquoted value closes nothing; skipped"
# Scanning helpers: one C-level search instead of a Python loop per character.
_WS_RUN = re.compile("[ \t\r\n]*")
_SCALAR_END = re.compile(r"[,}\]]|" + re.escape(_DELIM))
_SCALAR_END_IN_PARENS = re.compile(r"[,}\])]|" + re.escape(_DELIM))
_COMMA_RUN = re.compile("[, \t\r\n]*")
_BRACE_BEFORE_CALL = re.compile(r"\}[ \t\r\n]*call[ \t\r\n]*:")
_KEY = re.compile(r"[A-Za-z0-9_.\-$@]+")  # the characters of _KEY_CHARS
_PLAIN_START = frozenset("0123456789")
_QUOTE_START = frozenset("<\"'")  # a key that is not bare: `<|"|>...`, `"..."`, `'...'`
_COMMA_OR_WS = frozenset("," + WS)
_KEY_END = re.compile(r"[:=,})\]]")
_QUOTED_BODY = {q: re.compile(r"[^%s\\]*(?:\\.[^%s\\]*)*" % (q, q), re.S) for q in "\"'"}
# Diagnostics kept per call; beyond, one `more-diagnostics` entry spans the rest (memory stays a
# constant however many recoveries a block needs).
MAX_NOTES = 1000
# Diagnostics that say the block was cut off rather than finished: its arguments are incomplete.
_CUT_OFF = frozenset({"missing-bracket", "unterminated-string-at-end"})
# Diagnostics that say text the model wrote inside the arguments is in no decoded value (a key
# without its value is left out): the call is then `lossy` (docs/leniency.md#lossy-recoveries).
_DROPS = frozenset({"missing-value"})


class Decoder:
    """One pass over one call in a block. Positions in diagnostics are offsets from `base` (where
    the call starts in the block); line and column count from there too."""

    def __init__(self, text: str, max_depth: int, lines: LineIndex, base: int = 0, lossless: bool = False):
        self.text = text
        self.lossless = lossless  # scalars as `Scalar`s (value, lexeme, position): decoding against tools
        self.max_depth = max_depth
        self.lines = lines
        self.base = base
        self.base_line, self.base_column = lines.line_and_column(base)
        self.diagnostics: list[Diagnostic] = []
        self.suppressed = None  # [count, first pos, furthest end] of the notes beyond MAX_NOTES
        self.complete = True
        self.lossy = False      # text of the arguments left out of every value (`_DROPS`)
        self.in_parens = False  # the arguments are a `(...)` shell: `)` closes too
        # Schema-gated recovery (decoding against tools, lenient): the tool's declared keys and
        # those whose schema allows only a string; see `string_run`.
        self.keys = self.string_keys = None
        self.open_object = True
        self._next_key = None
        self._last_brace = None
        self._further_call = None

    def note(self, code: str, message, pos: int, severity: str = "warning", end: int | None = None) -> None:
        """Record a finding about text[pos:end] (absolute offsets). `message` is a str, or a
        (format, arguments...) tuple formatted only when the finding is kept."""
        end = pos if end is None else end
        if code in _CUT_OFF:
            self.complete = False
        elif code in _DROPS:
            self.lossy = True
        if self.suppressed is not None and severity != "error":
            suppressed = self.suppressed
            suppressed[0] += 1
            if pos < suppressed[1]:
                suppressed[1] = pos
            if end > suppressed[2]:
                suppressed[2] = end
            return
        if len(self.diagnostics) >= MAX_NOTES and severity != "error":
            if self.suppressed is None:
                self.suppressed = [0, pos, end]
            self.suppressed[0] += 1
            self.suppressed[1] = min(self.suppressed[1], pos)
            self.suppressed[2] = max(self.suppressed[2], end)
            return
        if type(message) is tuple:  # (format, arguments): formatted only when kept
            message = message[0].format(*message[1:])
        self.diagnostics.append(self._diagnostic(severity, code, message, pos, end))

    def _diagnostic(self, severity, code, message, pos, end) -> Diagnostic:
        line, column = self.lines.line_and_column(pos)
        if line == self.base_line:
            column -= self.base_column - 1
        return Diagnostic(severity, code, message, line - self.base_line + 1, column, pos - self.base, end - self.base)

    def findings(self) -> list:
        found = self.diagnostics
        if self.suppressed is not None:
            count, pos, end = self.suppressed
            found = found + [self._diagnostic(
                "warning", "more-diagnostics", f"{count} more recoveries in this span, not listed one by one", pos, end)]
        return sorted(found, key=lambda d: d.pos)

    def skip_ws(self, pos: int, end: int) -> int:
        if pos < end and self.text[pos] in WS:
            return _WS_RUN.match(self.text, pos, end).end()
        return pos

    # --- strings -------------------------------------------------------------------------------
    def _member_start(self, low: int, q: int) -> int | None:
        """When text[low:q] ends with `,KEY:` (a delimiter follows at q), where its comma is."""
        text = self.text
        i = q
        while i > low and text[i - 1] in WS:
            i -= 1
        if i <= low or text[i - 1] not in ":=":
            return None
        i -= 1
        while i > low and text[i - 1] in WS:
            i -= 1
        j = i
        while j > low and text[j - 1] in _KEY_CHARS:
            j -= 1
        if j == i:
            return None
        while j > low and text[j - 1] in WS:
            j -= 1
        return j - 1 if j > low and text[j - 1] == "," else None

    def delimited(self, pos: int, end: int, stack: list) -> tuple[str, int]:
        """A `<|"|>` string at `pos`: (its text, the position after it). Delimiters inside it are
        read as `"`, so its text is text[start:stop] with each of them replaced."""
        text = self.text
        start = search = pos + len(_DELIM)
        while True:
            q = text.find(_DELIM, search, end)
            if q < 0:
                break
            after = self.skip_ws(q + len(_DELIM), end)
            if after >= end or text[after] in ",}]:" or text[after] == ")" and self.in_parens:
                return self._string(start, q), q + len(_DELIM)
            member = self._member_start(search, q)
            if member is not None:
                # `<|"|>one,second:<|"|>two`: the first string was never closed, and the next
                # member starts at the comma; read it as a member rather than as string text
                self.note("unterminated-string", _UNCLOSED_BEFORE_MEMBER, pos, end=member)
                return self._string(start, member), member
            # a delimiter inside the string: the model meant a quote character
            self.note("interior-delimiter", _INTERIOR_DELIMITER, q, end=q + len(_DELIM))
            search = q + len(_DELIM)
        # never closed: the string runs to the end, less the closers the open structures need
        stop = end
        while stop > search and text[stop - 1] in WS:
            stop -= 1
        needed = "".join(reversed([c["closer"] for c in stack]))
        if needed and stop - search >= len(needed) and text.startswith(needed, stop - len(needed)):
            stop -= len(needed)
            self.note("unterminated-string", f"the string opened here is never closed by {_DELIM}; it ends before"
                      " the closing brackets", pos, end=stop)
            return self._string(start, stop), stop
        self.note("unterminated-string-at-end", f"the string opened here is never closed by {_DELIM}: the block"
                  " ends inside it", pos, end=end)
        return self._string(start, end), end

    def _string(self, start: int, stop: int) -> str:
        value = self.text[start:stop]
        return value.replace(_DELIM, '"') if _DELIM in value else value

    def quoted(self, pos: int, end: int) -> tuple[str, int]:
        """A JSON `"string"` or a `'string'` at `pos`."""
        text = self.text
        quote = text[pos]
        if quote == '"':
            try:
                value, after = _json_string(text, pos + 1, False)
            except ValueError:
                pass
            else:
                if after <= end:
                    self.note("json-string", "JSON-quoted string decoded as JSON", pos, end=after)
                    return value, after
        q = _QUOTED_BODY[quote].match(text, pos + 1, end).end()
        if q >= end or text[q] != quote:
            self.note("unterminated-string-at-end", f"the {quote}-quoted string opened here is never closed", pos, end=end)
            return text[pos + 1:end], end
        raw = text[pos:q + 1]
        if quote == '"':
            self.note("json-string", "JSON-quoted string decoded as JSON", pos, end=q + 1)
            try:
                return json.loads(raw), q + 1
            except ValueError:
                return raw[1:-1], q + 1
        self.note("single-quoted-string", "single-quoted string", pos, end=q + 1)
        return raw[1:-1], q + 1

    # --- values --------------------------------------------------------------------------------
    def string_run(self, pos: int, end: int, key: str):
        """Ollama's repair, gated on the schema: the undelimited value at `pos` of the top-level
        member `key`, whose schema allows only a string, runs to the next `,KEY:` of a declared key
        or to the object's closing brace, when the plain reading would stop sooner (at a comma or
        a bracket inside it). (value, position after it), or None when the plain reading stands.
        A run over a `<|` is not taken: markup inside means something else went wrong."""
        text = self.text
        found = _SCALAR_END.search(text, pos, end)
        plain_end = found.start() if found else end
        # The object's closing brace: the `}` before a further call of the block, else the last
        # one. Both searches are remembered, so many runs in one block read it once (linear).
        if self._last_brace is None:
            self._last_brace = text.rfind("}", 0, end)
        further = self._further_call
        if further is None or further[0] is not None and further[0] < plain_end:
            match = _BRACE_BEFORE_CALL.search(text, plain_end, end)
            further = self._further_call = (match.start() if match else None,)
        close = further[0] if further[0] is not None else self._last_brace
        if close < 0 or plain_end >= close or text[plain_end] == "<":
            return None
        if self._next_key is None:
            keys = "|".join(re.escape(k) for k in sorted(self.keys, key=len, reverse=True))
            if self.open_object:  # any key may follow: a member the schema allows is never swallowed
                keys = _KEY.pattern
            # a key as the model may write it: bare, or JSON- or single-quoted (a `<|"|>` one stops the run anyway)
            self._next_key = re.compile(r",[ \t\r\n]*(?:\"(?:%s)\"|'(?:%s)'|(?:%s))[ \t\r\n]*[:=]" % (keys, keys, keys))
        following = self._next_key.search(text, plain_end, close)
        stop = following.start() if following else close
        if stop <= plain_end or "<|" in text[plain_end:stop]:
            return None
        value = text[pos:stop].strip(WS)
        self.note("string-run", ("the string field `{!s:.40}` has an undelimited value with commas or brackets: read"
                                 " to the {}", key, "next declared key" if following else "closing brace"),
                  pos, end=stop)
        return (Scalar(value, value, pos - self.base) if self.lossless else value), stop

    def scalar(self, pos: int, end: int) -> tuple[object, int]:
        """An unquoted value: up to the next top-level delimiter. In lossless mode, a `Scalar`
        that keeps the word as written and where it starts."""
        value, after, word = self._scalar(pos, end)
        if self.lossless:
            start = self.text.find(word[:1], pos) if word else pos
            return Scalar(value, word, start - self.base), after
        return value, after

    def _scalar(self, pos: int, end: int) -> tuple[object, int, str]:
        text = self.text
        found = (_SCALAR_END_IN_PARENS if self.in_parens else _SCALAR_END).search(text, pos, end)
        q = found.start() if found else end
        word = text[pos:q]
        if word[-1:] in WS or word[:1] in WS:
            word = word.strip(WS)
        after = q
        if word and text[q:q + 1] == "<" and text.startswith(_DELIM, q):
            # `city:Tokyo<|"|>}`: a closing delimiter for a string never opened; it closes nothing
            following = self.skip_ws(q + len(_DELIM), end)
            if following >= end or text[following] in ",}]" or text[following] == ")" and self.in_parens:
                self.note("stray-delimiter", _STRAY_DELIMITER, q,
                          end=q + len(_DELIM))
                after = q + len(_DELIM)
        if word in LITERALS:
            return LITERALS[word], after, word
        if word.isdigit() and len(word) <= 600 and word.isascii():
            return int(word), after, word
        if looks_numeric(word):
            digits = len(word) - (word[:1] in "+-")
            if digits > MAX_INT_DIGITS and word.lstrip("+-").isdigit():
                self.note("number-too-long", f"an integer of {digits} digits (more than {MAX_INT_DIGITS}) is"
                          " refused", pos, "error", end=q)
                raise Abandon(self.findings())
            number = read_number(word)
            if number is not None:
                return number, after, word
            self.note("malformed-number", ("`{}` starts like a number but is not one; kept as text", word[:40]), pos,
                      end=q)
        if _ESCAPE in word:
            first = text.find(_ESCAPE, pos, q)
            self.note("functiongemma-escape", f"FunctionGemma's {_ESCAPE} delimiter inside an unquoted value: kept"
                      f" as text (Gemma 4 quotes strings with {_DELIM})", first,
                      end=text.rfind(_ESCAPE, pos, q) + len(_ESCAPE))
        return word, after, word

    def value(self, pos: int, end: int, stack: list) -> tuple[object, int, bool]:
        """(value, position after it, True when it opened a container now on `stack`)."""
        text = self.text
        if text.startswith(_DELIM, pos):
            value, after = self.delimited(pos, end, stack)
            return (Scalar(value, None, pos - self.base) if self.lossless else value), after, False
        ch = text[pos]
        if ch in "\"'":
            value, after = self.quoted(pos, end)
            if text.startswith(_DELIM, after):  # `'abc'<|"|>}`: a delimiter that closes nothing
                following = self.skip_ws(after + len(_DELIM), end)
                if following >= end or text[following] in ",}]" or text[following] == ")" and self.in_parens:
                    self.note("stray-delimiter", _STRAY_DELIMITER, after, end=after + len(_DELIM))
                    after += len(_DELIM)
            return (Scalar(value, None, pos - self.base) if self.lossless else value), after, False
        if ch in "{[":
            if len(stack) >= self.max_depth:
                self.note("too-deep", f"nesting deeper than {self.max_depth} levels", pos, "error")
                raise Abandon(self.findings())
            container = {} if ch == "{" else []
            stack.append({"value": container, "closer": "}" if ch == "{" else "]", "count": 0, "start": pos})
            return container, pos + 1, True
        value, after = self.scalar(pos, end)
        return value, after, False

    def key(self, pos: int, end: int, stack: list) -> tuple[str | None, int]:
        text = self.text
        if text.startswith(_DELIM, pos):
            return self.delimited(pos, end, stack)
        if text[pos] in "\"'":
            return self.quoted(pos, end)
        found = _KEY_END.search(text, pos, end)
        q = found.start() if found else end
        key = text[pos:q]
        if key[:1] in WS or key[-1:] in WS:
            key = key.strip(WS)
        if not _KEY.fullmatch(key):
            self.note("unreadable-key", f"`{key[:40]}` cannot be a key: the arguments cannot be read safely", pos,
                      "error", end=q)
            raise Abandon(self.findings())
        return key, q

    def container(self, pos: int, end: int, opener: str) -> tuple[object, int]:
        """The object (or the `(...)` shell) or list that starts at `pos`, iteratively.

        This loop runs once per member, comma and closer of the block: it keeps its state in locals
        (what is on top of the stack, whether it is an object) for speed on large blocks."""
        text = self.text
        note = self.note
        ws_run = _WS_RUN.match
        comma_run = _COMMA_RUN.match
        scalar_end = (_SCALAR_END_IN_PARENS if opener == "(" else _SCALAR_END).search
        key_end = _KEY_END.search
        key_chars = _KEY.fullmatch
        root_closer = ")" if opener == "(" else ("}" if opener == "{" else "]")
        self.in_parens = opener == "("
        root = [] if opener == "[" else {}
        stack = [{"value": root, "closer": root_closer, "count": 0, "start": pos}]
        top, closer, is_object, count = root, root_closer, isinstance(root, dict), 0
        pos += 1
        expect_value_for = None  # the key waiting for its value, in an object
        key_start = pos
        after_comma = False
        # (object, key, start) of the last member when its value is a bare word: a member with no
        # `:` right after it is more of that word (`location:Tokyo, JP`), not a key to drop
        last_word = None
        while True:
            if pos < end:
                ch = text[pos]
                if ch in WS:
                    pos = ws_run(text, pos, end).end()
                    ch = text[pos] if pos < end else None
            else:
                ch = None
            if ch is None:
                note("missing-bracket", ("missing `{}`: the block ends first", closer), pos)
                ch = closer  # close it here, as if the closer were written
            if ch in "}])":
                if ch != closer:
                    note("mismatched-closer", ("`{}` where `{}` closes", ch, closer), pos, end=pos + 1)
                if after_comma:
                    note("trailing-comma", "trailing comma", pos)
                if expect_value_for is not None:
                    note("missing-value", ("no value for `{!s:.40}`", expect_value_for), key_start, end=pos)
                    expect_value_for = None
                stack.pop()
                if pos < end:
                    pos += 1
                after_comma = False
                if not stack:
                    return root, pos
                entry = stack[-1]
                top, closer, count = entry["value"], entry["closer"], entry["count"]
                is_object = type(top) is dict
                continue
            if ch == ",":
                run = pos + 1
                if run < end and text[run] in _COMMA_OR_WS:  # `,,, ,`: empty members after the comma
                    run = comma_run(text, run, end).end()
                empty_from = pos + 1
                if expect_value_for is not None:
                    note("missing-value", ("no value for `{!s:.40}`", expect_value_for), key_start, end=pos + 1)
                    expect_value_for = None
                elif count == 0 or after_comma:
                    empty_from = pos
                if run > empty_from and "," in text[empty_from:run]:
                    note("empty-member", "empty member", empty_from, end=run)
                after_comma = True
                pos = run
                continue
            if count and not after_comma and expect_value_for is None:
                note("missing-comma", "missing comma between members", pos)
            after_comma = False
            if is_object and expect_value_for is None:
                key_start = pos
                if ch in _QUOTE_START:
                    key, pos = self.key(pos, end, stack)
                else:  # a bare key, inlined
                    found = key_end(text, pos, end)
                    q = found.start() if found else end
                    key = text[pos:q]
                    if key[-1:] in WS:
                        key = key.rstrip(WS)
                    if not key_chars(key) and not (last_word is not None and last_word[0] is top and "<" not in key
                                                   and (q >= end or text[q] not in ":=")):
                        self.key(pos, end, stack)  # raises with the diagnostic
                    pos = q
                if pos < end and text[pos] in WS:
                    pos = ws_run(text, pos, end).end()
                if pos < end and text[pos] in ":=":
                    if text[pos] == "=":
                        note("equals", "`=` instead of `:`", pos, end=pos + 1)
                    pos += 1
                    expect_value_for = key
                    last_word = None
                    continue
                if last_word is not None and last_word[0] is top and ch not in _QUOTE_START:
                    # no `:` after a bare word's comma: the word goes on (its text is kept whole)
                    _, word_key, word_start = last_word
                    stop = key_start + len(key)
                    word = text[word_start:stop]
                    note("comma-in-word", ("the undelimited value of `{!s:.40}` holds a comma: read as one string",
                                           word_key), word_start, end=stop)
                    top[word_key] = Scalar(word, word, word_start - self.base) if self.lossless else word
                    continue
                note("missing-value", ("member `{!s:.40}` has no value", key), key_start, end=pos)
                count += 1
                continue
            opened = False
            run = None
            value_start = pos
            if (self.string_keys is not None and is_object and len(stack) == 1 and ch not in _QUOTE_START
                    and ch not in "{[" and expect_value_for in self.string_keys):
                run = self.string_run(pos, end, expect_value_for)
            if run is not None:
                value, pos = run
            elif ch in _PLAIN_START:
                # the most frequent value, inlined: an unsigned integer ended by `,` or a closer
                found = scalar_end(text, pos, end)
                q = found.start() if found else end
                word = text[pos:q]
                if word.isdigit() and len(word) <= 600 and word.isascii() and text[q:q + 1] != "<":
                    value = Scalar(int(word), word, pos - self.base) if self.lossless else int(word)
                    pos = q
                else:
                    value, pos = self.scalar(pos, end)
            else:
                stack[-1]["count"] = count + 1  # kept for when a container opened here closes
                value, pos, opened = self.value(pos, end, stack)
            if is_object:
                last_word = None
                if not opened and run is None and ch not in _QUOTE_START:
                    word = value.value if type(value) is Scalar else value
                    if type(word) is str:
                        last_word = (top, expect_value_for, value_start)
                if expect_value_for in top:
                    # the last value wins, as in the grammar; the span (from the object's opener)
                    # covers the value it replaces
                    note("duplicate-key", (CODES["duplicate-key"].message, expect_value_for),
                         stack[-2 if opened else -1]["start"], end=pos)
                top[expect_value_for] = value
                expect_value_for = None
            else:
                top.append(value)
            count += 1
            if opened:
                entry = stack[-1]
                top, closer, count = entry["value"], entry["closer"], 0
                is_object = type(top) is dict


class Abandon(Gemma4Error):
    """The block is beyond recovery (too deep, or its members cannot be told apart)."""

    def __init__(self, diagnostics=()):
        super().__init__()
        self.diagnostics = list(diagnostics)
