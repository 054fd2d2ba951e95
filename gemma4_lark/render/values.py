"""Python values into the value language, for every profile (docs/README.md, "Values in Python"; docs/omp-compatibility.md).

One writer, configured per profile: how numbers are written (Python's `str`, or JavaScript's),
how keys are written (bare when the grammar's KEY terminal accepts them, or always bare, or always
quoted), whether object keys are sorted, and the safety policy for every string. It keeps an
explicit stack, so any nesting depth works; the renderers ask it to refuse values the parser
could not read back (`check_depth`).
"""

from __future__ import annotations

import math

from ..grammar import terminal_pattern
from ..tokens import STRING_DELIMITER
from .safety import UnsafeContentError, describe, guard, guard_model_string
from ..fields import ShapeError

_KEY = terminal_pattern("KEY")


def python_number(value) -> str:
    """What the official template writes: Python's `str`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} has no text in the value language")
    return str(value)


def check_depth(level: int, where, max_depth: int | None, what: str = "the value") -> None:
    """Refuse to write a `level`-th nested array or object (the outermost braces of a call,
    result or declaration are level 1) when the parser, at `max_depth`, would refuse to read it:
    render or refuse, never write what cannot be read back. None: any depth."""
    if max_depth is not None and level > max_depth:
        raise ShapeError(where, f"{what} nests deeper than {max_depth} levels once rendered,"
                                f" more than the parser reads (max_depth)")


def key_bare_if_possible(key: str) -> str:
    """Canonical keys: bare when the grammar's KEY terminal takes them, else a delimited string."""
    return key if _KEY.fullmatch(key) else delimited(key)


def key_bare(key: str) -> str:
    return key


def key_quoted(key: str) -> str:
    return delimited(key)


def _case_insensitive(item):
    key = item[0]
    return key.lower() if isinstance(key, str) else key


def delimited(text: str) -> str:
    """A string value of the format: between `<|"|>` delimiters, nothing escaped."""
    return STRING_DELIMITER + text + STRING_DELIMITER


class ValueWriter:
    def __init__(self, *, number=python_number, key=key_bare_if_possible, string=delimited,
                 sort_keys: bool = False, unsafe: str = "error", separators: tuple = (",", ":"),
                 model_strings: bool = False):
        # model_strings: the model's own call arguments, whose delimited strings and keys may hold
        # any control token but the delimiter (guard_model_string); every other value is content
        self.guard = guard_model_string if model_strings else guard
        self.number = number
        self.item_separator, self.key_separator = separators
        self.key = key
        self.string = string
        self.sort_keys = sort_keys
        self.unsafe = unsafe

    def _string(self, text: str, where) -> str:
        # guard() refuses or strips the delimiter like any control token; with unsafe="allow" it
        # passes through, and the text no longer parses as the value it came from.
        return self.string(self.guard(text, where, self.unsafe))

    def write(self, value, where: str = "value", *, depth: int = 0, max_depth: int | None = None) -> str:
        """`value`'s text. `depth`: how many arrays and objects the caller has opened around it;
        with `max_depth`, a value nesting deeper than that in all is a ValueError naming its field."""
        out: list[str] = []
        stack: list = [(value, where, depth)]
        unsafe = self.unsafe
        while stack:
            item, path, depth = stack.pop()
            if path is None:  # literal punctuation
                out.append(item)
            elif item is None:
                out.append("null")
            elif item is True:
                out.append("true")
            elif item is False:
                out.append("false")
            elif isinstance(item, str):
                out.append(self._string(item, path))
            elif isinstance(item, (int, float)):
                try:
                    out.append(self.number(item))
                except ValueError as error:  # NaN and infinities: a bare word would read back as a string
                    raise UnsafeContentError(repr(item), path, 0, f"{describe(path)}: {error}") from None
            elif isinstance(item, dict):
                check_depth(depth + 1, path, max_depth)
                members = []
                for k, v in item.items():
                    if not isinstance(k, str):
                        raise ShapeError(path, f"object keys must be str, not {type(k).__name__}")
                    child = (path, k)
                    members.append((self.guard(k, child, unsafe), k, v, child))
                if self.sort_keys:  # by the key as written, so that a stripped key sorts where it lands
                    members.sort(key=_case_insensitive)
                if unsafe == "strip" and len({m[0] for m in members}) < len(members):
                    # `a<eos>` stripped is `a`: two members with one key, and one would be lost
                    seen = set()
                    for key, k, _, child in members:
                        if key in seen:
                            raise UnsafeContentError(k, child, 0, f"{describe(child)}: once stripped of control"
                                                     f" tokens, key {k!r} is another key of the same object")
                        seen.add(key)
                pending = [("}", None, 0)]
                comma, colon = self.item_separator, self.key_separator
                for i in range(len(members) - 1, -1, -1):
                    key, _, v, child = members[i]
                    pending.append((v, child, depth + 1))
                    pending.append((comma * (i > 0) + self.key(key) + colon, None, 0))
                pending.append(("{", None, 0))
                stack.extend(pending)
            elif isinstance(item, (list, tuple)):
                check_depth(depth + 1, path, max_depth)
                pending = [("]", None, 0)]
                for i in range(len(item) - 1, -1, -1):
                    pending.append((item[i], (path, i), depth + 1))
                    if i:
                        pending.append((self.item_separator, None, 0))
                pending.append(("[", None, 0))
                stack.extend(pending)
            else:
                raise ShapeError(path, f"{type(item).__name__} has no text in the value language")
        return "".join(out)


CANONICAL = ValueWriter()


def _python_json_number(value) -> str:
    # what json.dumps writes: repr for floats (NaN and Infinity as Python's json spells them)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    return int.__repr__(value)


def _json_string(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)


def json_dumps(value) -> str:
    """`json.dumps(value, ensure_ascii=False)` with the one serializer, so any nesting depth works
    (json.dumps recurses and raises RecursionError past ~1000 levels)."""
    return _JSON.write(value)


_JSON = ValueWriter(number=_python_json_number, key=_json_string, string=_json_string, unsafe="allow",
                    separators=(", ", ": "))


def dump_value(value, *, unsafe: str = "error") -> str:
    """The canonical text of a value: no whitespace, bare keys where possible, strings in
    `<|"|>`, numbers as Python writes them."""
    return (CANONICAL if unsafe == "error" else ValueWriter(unsafe=unsafe)).write(value)
