"""The caller's values checked field by field: `describe` names a field, `expect` checks its
type, and `ShapeError` says what is wrong where (`messages[0].content[0]: must be an object, not
int`). Read by the tools' reader and by the renderers, which build on it."""

from __future__ import annotations

from .error_base import Gemma4Error

__all__ = ["ShapeError", "describe", "expect", "kind_name"]


def describe(where) -> str:
    """A field's name. Renderers pass (parent, key) pairs for nested values and only pay for the
    text when an error needs it."""
    parts = []
    while isinstance(where, tuple):
        where, key = where
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return str(where) + "".join(reversed(parts))


class ShapeError(ValueError, TypeError, Gemma4Error):
    """A message or tool of the wrong shape: a field missing or of the wrong type. Both a
    ValueError and a TypeError, so code that caught either before keeps working. `where` names
    the field."""

    def __init__(self, where, message: str):
        self.where = describe(where)
        super().__init__(f"{self.where}: {message}")


_NAMES = {str: "a string", dict: "an object", list: "an array", tuple: "an array", type(None): "null",
          int: "an integer", float: "a number", bool: "a boolean"}


def kind_name(value) -> str:
    """What JSON calls the type of `value` ("an object", "a string"), for messages."""
    return _NAMES.get(type(value), type(value).__name__)


def expect(value, kinds: tuple, where, optional: bool = False):
    """`value` when it is an instance of one of `kinds` (or None, when `optional`); a ShapeError
    naming `where` otherwise."""
    if (optional and value is None) or isinstance(value, kinds):
        return value
    wanted = " or ".join(dict.fromkeys(_NAMES.get(k, k.__name__) for k in kinds))
    raise ShapeError(where, f"must be {wanted}{' or null' if optional else ''}, not {kind_name(value)}")
