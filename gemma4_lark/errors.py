"""The one error type of the strict parser, the diagnostics of validation, and the translation of
Lark's exceptions into messages a person can act on.

A message is chosen from three facts Lark gives: where the parse stopped, which terminals the
parser state would have accepted there, and what stood there instead (a terminal of the grammar, or
no terminal at all). Terminal names come from the grammar; nothing here re-states its patterns.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import lark

from .grammar import first_terminals, literal_terminals, terminal_literal, whitespace
from .diagnostics import LineIndex, shown_line
from .tokens import STRING_DELIMITER
from .error_base import Gemma4Error

# Tokens that end a brace block, and everything that ends some enclosing structure.
_BRACE_BLOCK_CLOSERS = {"TOOL_CALL_CLOSE", "TOOL_RESPONSE_CLOSE", "TOOL_CLOSE"}
_BLOCK_CLOSERS = _BRACE_BLOCK_CLOSERS | {"CHANNEL_CLOSE"}
_CLOSERS = _BLOCK_CLOSERS | {"TURN_CLOSE", "EOS"}
_HEAD_KEYWORDS = {"CALL_KEYWORD", "RESPONSE_KEYWORD", "DECLARATION_KEYWORD"}
# Characters that begin something that looks like a number (`[+-]?[0-9.]`: docs/spec/BARE_WORD.md).
_NUMBER_LIKE = "+-.0123456789"
_WHITESPACE = whitespace()
# Characters that end a malformed number's excerpt.
_EXCERPT_END = whitespace() + ",{}[]<:"


class GemmaSyntaxError(ValueError, Gemma4Error):
    """Text that is not in the language.

    Attributes: `line` and `column` (1-based), `pos` (0-based character offset), `expected`
    (readable names of what the grammar would have accepted), `text` (the offending text),
    `message` (one line), `source_line` (the line of input the error is on; a line longer than
    `SHOWN_LINE_CHARS` is cut to that many characters around the error, each cut marked `…`),
    `code` (what kind of error, for code to decide on: "too-deep" when nesting exceeds `max_depth`,
    else "syntax").

    `lines`, when given, is a `LineIndex` of `source`: whoever reports many errors in one text
    passes one, so no error counts lines from the start of the text again.
    """

    def __init__(self, message: str, *, source: str, pos: int, expected=(), text: str = "",
                 lines: LineIndex | None = None, code: str = "syntax"):
        self.message = message
        self.code = code
        self.pos = pos
        self.line, self.column = (lines or LineIndex(source)).line_and_column(pos)
        self.expected: list[str] = list(expected)
        self.text = text
        self.source_line, self.caret_offset = shown_line(source, pos, pos - self.column + 1)
        super().__init__(str(self))

    def __str__(self) -> str:
        caret = " " * self.caret_offset + "^"
        return f"line {self.line}, column {self.column}: {self.message}\n{self.source_line}\n{caret}"

    def __reduce__(self):  # keep the exception picklable for multiprocessing users
        return (_rebuild, (type(self), self.__dict__))


class PromptError(ValueError, Gemma4Error):
    """A prompt in the language that a reader cannot take: it does not end where a model's output
    can start (`StreamParser.for_prompt`), or it holds what the profile it is read as never writes
    (`messages.read_omp`). The message names the turn or the offset."""


def _rebuild(cls, state):
    err = cls.__new__(cls)
    err.__dict__.update(state)
    ValueError.__init__(err, str(err))
    return err


def readable(name: str) -> str:
    """A terminal's name as a person reads it: its literal in backticks, or its name in words."""
    if name == "$END":
        return "end of input"
    literal = terminal_literal(name)
    if literal is not None:
        return "`" + literal.replace("\n", "\\n") + "`"
    return name.lower().replace("_", " ")


def _found_terminal(source: str, pos: int) -> str | None:
    """The fixed-string terminal that starts at `pos`, if any (the longest)."""
    best = None
    for literal, name in literal_terminals().items():
        if source.startswith(literal, pos) and (best is None or len(literal) > len(best[0])):
            best = (literal, name)
    return best[1] if best else None


def _excerpt(source: str, pos: int) -> str:
    end = pos + 1
    while end < len(source) and source[end] not in _EXCERPT_END and end - pos < 40:
        end += 1
    return source[pos:end]


def _describe(found: str | None, found_text: str, expected: set[str], previous: str) -> str:
    """The one-line message for an error: the specific cases first, then the general one.

    `previous` is the last character before the error that is not whitespace.
    """
    want = sorted(expected)
    value_starts = first_terminals("value")  # wherever a value may stand, these are expected
    if found_text.startswith(STRING_DELIMITER) and "STRING" in expected:
        return f"unterminated string: the `{STRING_DELIMITER}` that opens it is never closed"
    if found_text.startswith('"') and expected & ({"KEY", "STRING"} | value_starts):
        return f"JSON-quoted string: strings are written between `{STRING_DELIMITER}` delimiters, not `\"`"
    if found_text.startswith("=") and "COLON" in expected:
        return "`=` instead of `:` between a key and its value"
    if found_text[:1] and found_text[0] in _NUMBER_LIKE and expected & {"INTEGER", "FLOAT"}:
        return f"malformed number `{found_text}`: a value that starts like a number must be a decimal number"
    if found == "$END":
        closers = [n for n in want if n in _BLOCK_CLOSERS or n in {"RBRACE", "RBRACKET"}]
        if closers:
            return f"missing {readable(closers[0])}: the input ends first"
        return "unexpected end of input; expected " + _alternatives(want)
    if expected & _HEAD_KEYWORDS and found not in _HEAD_KEYWORDS:
        keyword = next(iter(expected & _HEAD_KEYWORDS))
        return f"missing {readable(keyword)} at the start of the block"
    if found in _CLOSERS and expected & _BLOCK_CLOSERS:
        closer = sorted(expected & _BLOCK_CLOSERS)[0]
        return f"wrong closer {readable(found)}: this block is closed by {readable(closer)}"
    if found == "CHANNEL_CLOSE":
        return f"{readable(found)} closes no thought: nothing opened one"
    if found == "RBRACKET" and "RBRACE" in expected or found == "RBRACE" and "RBRACKET" in expected:
        return f"unbalanced brackets: {readable(found)} where {readable(next(iter(expected & {'RBRACE', 'RBRACKET'})))} is needed"
    if found in {"RBRACE", "RBRACKET", "COMMA"} and previous == ":" and expected & value_starts:
        return f"missing value: {readable(found)} right after `:`"
    if found in {"RBRACE", "RBRACKET"} and previous == "," and expected & ({"KEY"} | value_starts):
        return f"trailing comma before {readable(found)}"
    if found == "COMMA" and expected & ({"KEY"} | value_starts):
        return "empty member: a comma with nothing before it"
    if found in {"RBRACE", "RBRACKET"} and expected <= _CLOSERS | {"$END"}:
        return f"unbalanced brackets: {readable(found)} closes nothing"
    if expected & _BRACE_BLOCK_CLOSERS and not expected & {"RBRACE", "RBRACKET", "COMMA"}:
        closer = sorted(expected & _BRACE_BLOCK_CLOSERS)[0]
        return f"text after the closing brace: expected {readable(closer)}"
    shown = readable(found) if found else "`" + found_text + "`"
    if want in ([], ["$END"]):
        return f"unexpected {shown} where the input should end"
    return f"unexpected {shown}; expected {_alternatives(want)}"


def _alternatives(names) -> str:
    words = [readable(n) for n in names]
    if len(words) <= 1:
        return "".join(words) or "nothing more"
    return ", ".join(words[:-1]) + " or " + words[-1]


def _viable(exc: lark.exceptions.UnexpectedInput, candidates: set[str]) -> set[str]:
    """Of `candidates`, the terminals the parser could really take next.

    LALR merges look-ahead sets, so the set Lark reports can hold terminals that only fit in
    another context (after an object that closes a call, `]` is listed too). Feeding each candidate
    to a copy of the parser state, callbacks off, keeps the ones that fit, as Lark's own
    `InteractiveParser.accepts` does.
    """
    import lark
    from lark.parsers.lalr_parser_state import ParserState

    parser_state = exc.interactive_parser.parser_state if exc.interactive_parser else exc.state
    if not isinstance(parser_state, ParserState):
        return candidates
    conf = copy.copy(parser_state.parse_conf)
    conf.callbacks = _quiet(parser_state.parse_conf.callbacks)
    viable = set()
    for name in candidates:
        trial = parser_state.copy(deepcopy_values=False)
        trial.parse_conf = conf
        try:
            trial.feed_token(lark.Token(name, ""), is_end=name == "$END")
        except lark.exceptions.UnexpectedToken:
            continue
        viable.add(name)
    return viable or candidates


def _ignore(*_args):
    return None


_quiet_callbacks: dict[int, tuple[dict, dict]] = {}


def _quiet(callbacks: dict) -> dict:
    """`callbacks` with every callback ignoring its input; made once per parser, not per error."""
    known = _quiet_callbacks.get(id(callbacks))
    if known is None or known[0] is not callbacks:  # (the first holds the id: it cannot be reused)
        known = _quiet_callbacks[id(callbacks)] = (callbacks, dict.fromkeys(callbacks, _ignore))
    return known[1]


def _last_visible(source: str, lo: int, hi: int) -> int:
    """The end of `source[lo:hi]` without its trailing whitespace, reading back only over it."""
    while hi > lo:
        chunk_start = max(lo, hi - 256)
        stripped = len(source[chunk_start:hi].rstrip(_WHITESPACE))
        if stripped:
            return chunk_start + stripped
        hi = chunk_start
    return lo


def from_lark(exc: lark.exceptions.UnexpectedInput, source: str, *, start: int = 0,
              lines: LineIndex | None = None) -> GemmaSyntaxError:
    """Translate a Lark exception raised while parsing `source[start:]`.

    The cost is independent of the length of `source` (given `lines` for the line number).
    """
    import lark  # loaded with the LALR parser that raised `exc`

    if isinstance(exc, lark.exceptions.UnexpectedToken) and exc.token.type != "$END":
        pos = exc.token.start_pos
        found = exc.token.type
        if found == "TEXT" or found not in literal_terminals().values():
            # A pattern terminal of another lexer state (often the catch-all TEXT) matched here;
            # what the person wrote is better described character by character.
            found = _found_terminal(source, pos)
        expected = set(exc.expected)
    elif isinstance(exc, lark.exceptions.UnexpectedToken):  # end of input
        pos = _last_visible(source, start, len(source))
        found = "$END"
        expected = set(exc.expected)
    elif isinstance(exc, lark.exceptions.UnexpectedCharacters):
        pos = exc.pos_in_stream
        found = _found_terminal(source, pos)
        expected = set(exc.allowed or ())
    else:  # UnexpectedEOF
        pos = len(source)
        found = "$END"
        expected = set(getattr(exc, "expected", ()) or ())
    expected.discard("WS")
    if "<END-OF-FILE>" in expected:  # Lark's name for the end in a lexer state with no terminals
        expected = (expected - {"<END-OF-FILE>"}) | {"$END"}
    expected = _viable(exc, expected)
    found_text = "" if found == "$END" else (terminal_literal(found) if found and terminal_literal(found) else _excerpt(source, pos))
    before = _last_visible(source, start, pos)
    previous = source[before - 1:before] if before > start else ""
    message = _describe(found, found_text, expected, previous)
    return GemmaSyntaxError(
        message,
        source=source,
        pos=pos,
        expected=[readable(n) for n in sorted(expected)],
        text=found_text,
        lines=lines,
    )
