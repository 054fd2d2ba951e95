"""`Gemma4Error`, the base of every exception the library raises on purpose.

It imports nothing, so every module may derive its errors from it without an import cycle: each
subclass keeps its built-in base too (`ValueError`, `TypeError`), so an `except ValueError`
written before it existed still catches what it caught.
"""

__all__ = ["Gemma4Error"]


class Gemma4Error(Exception):
    """The library refused something on purpose: input that is not in the format, a schema or
    content it cannot write, a command it cannot run. `except gemma4_lark.Gemma4Error` catches
    them all; each message says what was refused and where."""
