"""What a decode against the declared tools keeps of each scalar: its value, the text it was read
from, and where.

Decoding without tools throws the source away: `zip:02134` becomes the int 2134 and no later step
can tell it was written `02134`. Decoding with tools (`parse_output(..., tools=...)`) runs the
decoders in a lossless mode in which every scalar of the arguments is a `Scalar`, then types the
tree by the tool's schema (`gemma4_lark.schema.coerce`), which needs the lexeme, and hands the user
plain values again. `Scalar` is internal: no value a user receives is one.

No parser code here: the hand-written reference decoder uses it too.
"""

from __future__ import annotations

from typing import Any


class Scalar:
    """One scalar as decoded: `value` (what the decoder reads it as), `lexeme` (its text as written,
    for a bare scalar; None for a delimited or quoted string), `pos` (offset of its first character
    in the decoded text)."""

    __slots__ = ("value", "lexeme", "pos")

    def __init__(self, value: Any, lexeme: str | None, pos: int):
        self.value = value
        self.lexeme = lexeme
        self.pos = pos

    @property
    def bare(self) -> bool:
        """Written without string delimiters (a number, a literal or a bare word)."""
        return self.lexeme is not None

    def __repr__(self) -> str:
        return f"Scalar({self.value!r}, {self.lexeme!r}, {self.pos})"


class LosslessCall:
    """A call decoded losslessly: `name`, `arguments` (a tree whose scalars are `Scalar`s) and
    `pos`, where the name starts."""

    __slots__ = ("name", "arguments", "pos")

    def __init__(self, name: str, arguments: dict, pos: int):
        self.name = name
        self.arguments = arguments
        self.pos = pos


def plain(tree: Any) -> Any:
    """`tree` with every `Scalar` replaced by its value, in place (containers are changed, not
    copied); returns the result. Iterative: any depth, linear in the size of the tree."""
    if type(tree) is Scalar:
        return tree.value
    stack = [tree] if type(tree) in (dict, list) else []
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key, item in node.items():  # assigning to an existing key does not resize
                kind = type(item)
                if kind is Scalar:
                    node[key] = item.value
                elif kind is dict or kind is list:
                    stack.append(item)
        else:
            for i, item in enumerate(node):
                kind = type(item)
                if kind is Scalar:
                    node[i] = item.value
                elif kind is dict or kind is list:
                    stack.append(item)
    return tree
