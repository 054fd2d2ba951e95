"""What the entry points take as model output: a str, or a subclass of it read once as a str."""

from __future__ import annotations

from typing import Any

__all__ = ["plain_finish_reason", "plain_str"]


def plain_str(value: Any, what: str = "chunks") -> str:
    """`value` as a str of Python's own type: a subclass (lark's Token, a caller's own) read once
    at an entry point, so nothing after it meets one; else TypeError naming `what`."""
    if isinstance(value, str):
        return str.__str__(value)  # (not str(): a subclass may say something else in __str__)
    raise TypeError(f"{what} must be str, not {type(value).__name__}")


def plain_finish_reason(value: Any) -> str | None:
    """An engine's finish reason: None, or a str of Python's own type (a server's str enum reads as
    its value); else TypeError. Checked where each entry point takes it, before anything is done."""
    return value if value is None or type(value) is str else plain_str(value, "finish_reason")
