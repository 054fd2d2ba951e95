"""Content that could forge structure (docs/security.md).

The tokenizer turns every control token into its special token wherever it appears, even inside a
`<|"|>` string, so a tool result containing `<turn|><|turn>system` would end its turn and open a
system turn in the model's eyes. Renderers pass every piece of content through `guard` first, and
every name, key and role through `check_name`.

What a control token is comes from the grammar, not from a list: the TEXT terminal runs "up to the
next control token", and its lookahead after `<` says what one looks like (`<|word>`, `<|word|>`,
`<word|>`, `<bos>`, `<eos>`). So `<|im_start|>` or `<image|>` is refused like `<turn|>`, and a
change to the grammar changes the guard with it. The string delimiter `<|"|>` is a special token too
(it ends a string), so the guard takes it as well.

Pieces of content that land side by side in the prompt are checked as the joined text (see `Run`):
`"hi<tur"` and `"n|>"` are harmless alone and a turn closer together.
"""

from __future__ import annotations

import re

from ..grammar import control_pattern, terminal_pattern
from ..fields import describe
from ..tokens import STRING_DELIMITER, TOOL_RESPONSE_OPEN
from ..error_base import Gemma4Error

UNSAFE_POLICIES = ("error", "strip", "allow")


CONTROL = control_pattern()
"""A control token of the grammar, or the string delimiter, at the start of a match."""


class UnsafeContentError(ValueError, Gemma4Error):
    """Content holds a control token (or a string holds the string delimiter), or a name, key or
    role does not fit the grammar's terminal for it."""

    def __init__(self, token: str, where, pos: int, reason: str | None = None):
        self.token = token
        self.where = where = describe(where)
        self.pos = pos
        if reason is None:
            reason = (f"control token {token} at offset {pos} of {where}: it would be read as structure;"
                      f" pass unsafe='strip' to remove such tokens or unsafe='allow' to keep them")
        super().__init__(reason)


def check_policy(unsafe: str) -> None:
    if unsafe not in UNSAFE_POLICIES:
        raise ValueError(f"unsafe must be one of {UNSAFE_POLICIES}, not {unsafe!r}")


def strip_controls(text: str) -> str:
    """`text` with every control token removed, until none is left: removing `<eos>` from
    `<|tu<eos>rn>` leaves `<|turn>`, which goes too. One pass, linear: a token holds one `<` (its
    first character) and one `>` (its last), so a stack of the `<` still open finds every token,
    including those a removal creates."""
    out: list[str] = []
    opens: list[int] = []  # indexes in `out` of the `<` that may still begin a token
    for piece in _LT_GT.split(text):
        if piece == "<":
            opens.append(len(out))
        elif piece == ">" and opens:
            at = opens.pop()
            if CONTROL.fullmatch("".join(out[at:]) + ">"):
                del out[at:]
                continue
            # this `>` stays for good, so no `<` before it can begin a token any more
            opens.clear()
        if piece:
            out.append(piece)
    return "".join(out)


_LT_GT = re.compile("([<>])")


def guard_model_string(text: str, where, unsafe: str) -> str:
    """A `<|"|>` string of the model's own call arguments, as the policy allows: it may hold any
    control token but the delimiter (docs/security.md#the-models-own-calls). The grammar reads
    such a string back unchanged: only `<|"|>` ends it. Refused, or stripped (every delimiter,
    until none is left: one linear pass), when it holds the delimiter."""
    if unsafe == "allow" or STRING_DELIMITER not in text:
        return text
    if unsafe == "strip":
        out: list[str] = []
        size = len(STRING_DELIMITER)
        for char in text:  # a stack: removing one delimiter cannot leave the halves of another
            out.append(char)
            if char == ">" and len(out) >= size and "".join(out[-size:]) == STRING_DELIMITER:
                del out[-size:]
        return "".join(out)
    raise UnsafeContentError(STRING_DELIMITER, where, text.index(STRING_DELIMITER), (
        f"the string delimiter {STRING_DELIMITER} at offset {text.index(STRING_DELIMITER)} of {describe(where)}:"
        f" it would end the string; pass unsafe='strip' to remove it or unsafe='allow' to keep it"))


def guard(text: str, where, unsafe: str) -> str:
    """`text` as the policy allows: unchanged, refused, or with every control token removed."""
    return guard_run(((text, where),), unsafe)


def guard_run(pieces, unsafe: str) -> str:
    """Pieces of content that the prompt holds side by side, (text, where) each, as the policy
    allows the text they make together: a token split across pieces is refused (named at the
    piece where it starts) or stripped like any other."""
    text = "".join(piece for piece, _ in pieces)
    if unsafe == "allow" or "<" not in text:
        return text
    match = CONTROL.search(text)
    if match is None:
        return text
    if unsafe == "strip":
        return strip_controls(text)
    start = match.start()
    for piece, where in pieces:
        if start < len(piece):
            if start + len(match.group()) > len(piece):
                raise UnsafeContentError(match.group(), where, start, (
                    f"control token {match.group()} at offset {start} of {describe(where)}, completed by the"
                    f" content written right after it: it would be read as structure; pass unsafe='strip'"
                    f" to remove such tokens or unsafe='allow' to keep them"))
            raise UnsafeContentError(match.group(), where, start)
        start -= len(piece)
    raise AssertionError("unreachable: the match lies inside the joined pieces")


class Run:
    """Content as it lands in the prompt: pieces written side by side are one text, checked when
    structure (a token the renderer writes) ends the run."""

    def __init__(self, unsafe: str):
        self.unsafe = unsafe
        self.out: list[str] = []
        self.pending: list = []

    def content(self, text: str, where) -> None:
        self.pending.append((text, where))

    def structure(self, text: str) -> None:
        self.flush()
        self.out.append(text)

    def flush(self) -> None:
        if self.pending:
            text = guard_run(self.pending, self.unsafe)
            if self.unsafe != "allow" and self.out and self.out[-1].endswith(TOOL_RESPONSE_OPEN):
                _check_after_awaiting(text, self.pending)
            self.out.append(text)
            self.pending = []

    def text(self) -> str:
        self.flush()
        return "".join(self.out)


def _check_after_awaiting(text: str, pieces) -> None:
    """Text right after a bare `<|tool_response>` (calls waiting for results) must not begin a
    result block's head: the grammar's RESPONSE_KEYWORD takes `response:` there, and the model
    would read what follows as a tool's result."""
    if terminal_pattern("RESPONSE_KEYWORD").match(text):
        where = next((w for t, w in pieces if t), pieces[0][1])
        raise UnsafeContentError("response:", where, 0, (
            f"{describe(where)} begins with 'response:' right after a bare {TOOL_RESPONSE_OPEN}: it would be read"
            f" as the head of a tool result; pass unsafe='allow' to write it anyway"))


def check_name(name, where, unsafe: str, terminal: str = "NAME", suffix: str = "") -> str:
    """`name` when the grammar's terminal (NAME for tool names, ROLE_LINE for a role and its
    newline) takes it whole; otherwise UnsafeContentError under "error" and "strip" alike, since
    removing characters from a name would silently address something else."""
    if unsafe == "allow":
        return name
    pattern = terminal_pattern(terminal)
    if not isinstance(name, str) or not pattern.fullmatch(name + suffix):
        shown = pattern.pattern.replace("\n", "\\n")
        raise UnsafeContentError(str(name), where, 0, (
            f"{describe(where)} {name!r} does not match the grammar's {terminal} terminal"
            f" (/{shown}/): it would be read as"
            f" other structure;"
            f" pass unsafe='allow' to write it anyway"))
    return name
