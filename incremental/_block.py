"""The open call block: its text as it arrives, kept in few pieces, and its head.

A block of 1-character chunks would cost a `str` object per character: small pieces are joined
every `COMPACT_EVERY`, so the list holds few objects and each character is copied O(1) times;
the block is joined once more when it ends. Past `max_block_chars` only the first characters are
kept (`oversized`): memory stays bounded, and the block is a `too-large` error when it ends.

The head (`call:NAME{`, its `{` within the first `MAX_HEAD` characters) is found as the pieces
come, so `tool_call_start` goes out as soon as the name is known, whatever the chunking.
"""

from __future__ import annotations

from gemma4_lark import tokens
from gemma4_lark.grammar import terminal_pattern, whitespace

__all__ = ["COMPACT_EVERY", "MAX_HEAD", "OpenBlock", "call_name"]

# How far into a block to look for the `{` that completes `call:NAME{`.
MAX_HEAD = 256
# After this many small pieces, the open block's pieces are joined into one.
COMPACT_EVERY = 256
_BLANKS = whitespace()
_NAME = terminal_pattern("NAME")  # (compiled once: a head is decided per block)


class OpenBlock:
    """One call block from its opener (`<|tool_call>`, or `call:` for a bare block) on.

    `start`: its stream offset; `size`: how many characters it has had; `pieces`: its text (the
    first `limit` characters once `oversized`); `head`: its first characters until the head is
    decided ("" once it is, or for a bare block, which emits no start event); `head_end`: the
    stream offset right after `call:NAME{`, -1 until one is seen; `delimiters`: where its string
    delimiters are, when the scan found them."""

    __slots__ = ("start", "id", "bare", "pieces", "small", "size", "head", "head_end", "oversized",
                 "delimiters", "string_start", "depth", "string_openers")

    def __init__(self, opener: str, start: int, call_id: str, bare: bool):
        self.start = start
        self.id = call_id
        self.bare = bare
        self.pieces = [opener] if opener else []
        self.small = len(self.pieces)
        self.size = len(opener)
        self.head = "" if bare else opener
        self.head_end = -1
        self.oversized = False
        self.delimiters: list[int] | None = None
        self.string_start = -1  # where its open string's delimiter is (stream offset)
        self.depth = 0          # a bare block: braces open outside its strings
        self.string_openers: list[int] = []  # stream offsets of the `<|tool_call>`s inside its strings

    def text(self) -> str:
        return "".join(self.pieces)

    def append(self, piece: str, limit: int) -> None:
        """Add `piece` (its head is the caller's: `find_head`). A bare block is never cut: the
        caller turns it to text first (see `StreamMachine.add_to_block`)."""
        pieces = self.pieces
        pieces.append(piece)
        self.small += 1
        if self.size > limit:
            self.oversized = True
            self.pieces = ["".join(pieces)[:limit]]
            self.small = 0
        elif self.small >= COMPACT_EVERY:
            # join the small pieces at the end into one (a joined piece is never small again)
            tail = "".join(pieces[-self.small:])
            del pieces[-self.small:]
            pieces.append(tail)
            self.small = 0

    def find_head(self, piece: str, start: int) -> tuple[str, int] | None:
        """With `piece` (at stream offset `start`) added: the call's NAME and the stream offset
        right after its `{` once `call:NAME{` is complete, else None. Decided once, within the
        first MAX_HEAD characters, independent of `max_block_chars` and of the chunking."""
        offset = len(self.head)  # where `piece` starts in the block
        head = self.head + piece[: MAX_HEAD - offset]
        brace = head.find("{", offset)
        if brace < 0:
            self.head = head if len(head) < MAX_HEAD else ""
            return None
        self.head = ""  # decided
        name = call_name(head, brace)
        return None if name is None else (name, start + (brace - offset) + 1)

    def ends_in_value_start(self, starts: frozenset) -> bool:
        """Whether the block's last character that is not a blank is one of `starts` (or the block
        is only blanks). Reads back over blanks only: each run of them at most once."""
        for piece in reversed(self.pieces):
            stripped = piece.rstrip(_BLANKS)
            if stripped:
                return stripped[-1] in starts
        return True


def call_name(head: str, brace: int) -> str | None:
    """The NAME of `<|tool_call>call:NAME{`, given the block's first characters `head` and where
    its first `{` is (within its first MAX_HEAD characters); None when that is no call's head."""
    words = head[len(tokens.TOOL_CALL_OPEN): brace].strip(_BLANKS)
    if not words.startswith(tokens.CALL_KEYWORD):
        return None
    name = words[len(tokens.CALL_KEYWORD):].strip(_BLANKS)
    return name if _NAME.fullmatch(name) else None
