"""`to_openai_message` as JSON text, gathered while the events come: memory bounded by one event.

The message is `{"role": ..., "content": ..., "reasoning_content": ..., "tool_calls": [...],
"tool_call_errors": [...]}`, the text `json.dumps(to_openai_message(...), ensure_ascii=False)`
gives, byte for byte. Its parts arrive interleaved (text, thoughts, calls, failed blocks), so each
waits, escaped, in a temporary file of its own (in memory up to a megabyte, then on disk) and
`close()` writes them out in order: a 50 MB output never sits in memory, whatever it holds, and a
stream that fails midway writes nothing (`discard()`), not half a message.
"""

from __future__ import annotations

import json
import tempfile
from typing import Callable

from gemma4_lark.events import Event, Text, ThinkingDelta, ThinkingEnd, ThinkingStart, ToolCallEnd, ToolCallError
from .openai import tool_call_error_entry

__all__ = ["OpenAIMessageWriter"]

_SPOOL_BYTES = 1 << 20  # each waiting part stays in memory up to this, then goes to disk
_COPY_CHARS = 1 << 16


def _escaped(text: str) -> str:
    """`text` as inside a JSON string, as json.dumps(ensure_ascii=False) writes it (it escapes
    character by character, so pieces escaped apart join to the whole escaped)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class _Part:
    """One of the message's keys: a JSON string or list, kept in a spooled file until the end."""

    def __init__(self, key: str, opener: str):
        self.key, self.opener = key, opener
        self.file = None
        self.items = 0  # thoughts begun, or entries written

    def write(self, text: str) -> None:
        if self.file is None:
            self.file = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES, mode="w+", encoding="utf-8",
                                                      errors="surrogatepass")
        self.file.write(text)

    def add_item(self, text: str, separator: str) -> None:
        """One more thought or entry: `separator` before it unless it is the first."""
        self.write(separator + text if self.items else text)
        self.items += 1

    def copy_to(self, write: Callable[[str], object]) -> None:
        if self.file is None:
            return
        self.file.seek(0)
        write(f', "{self.key}": {self.opener}')
        while True:
            piece = self.file.read(_COPY_CHARS)
            if not piece:
                break
            write(piece)
        write('"' if self.opener == '"' else "]")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


class OpenAIMessageWriter:
    """Events of one stream in (`add`), the assistant message out through `write` (any callable
    taking a str, e.g. `sys.stdout.write`) when `close()` is called, in pieces."""

    def __init__(self, write: Callable[[str], object]):
        self._write = write
        self._content = _Part("content", '"')
        self._reasoning = _Part("reasoning_content", '"')
        self._calls = _Part("tool_calls", "[")
        self._errors = _Part("tool_call_errors", "[")
        self._parts = (self._content, self._reasoning, self._calls, self._errors)  # in the message's order
        self._in_thought = False
        self._closed = False

    def _add_content(self, text: str) -> None:
        if text:
            self._content.write(_escaped(text))

    def add(self, event: Event) -> None:
        kind = type(event)
        if kind is Text:
            self._add_content(event.text)
        elif kind is ThinkingStart:
            # a thought counts once it ends (collect); the stream ends every thought it begins
            self._in_thought = True
            self._reasoning.add_item("", "\\n")
        elif kind is ThinkingDelta and self._in_thought:
            self._reasoning.write(_escaped(event.text))
        elif kind is ThinkingEnd:
            self._in_thought = False
        elif kind is ToolCallEnd:
            self._calls.add_item(json.dumps(event.to_openai(), ensure_ascii=False), ", ")
        elif kind is ToolCallError:
            self._add_content(event.raw)
            entry = tool_call_error_entry(event, self._errors.items)
            self._errors.add_item(json.dumps(entry, ensure_ascii=False), ", ")

    def close(self) -> None:
        """Write the message's end: the content's close (or `null`), then the waiting parts."""
        if self._closed:
            return
        self._closed = True
        try:
            self._write('{"role": "assistant"')
            if self._content.file is None:
                self._write(', "content": null')
            for part in self._parts:
                part.copy_to(self._write)
            self._write("}")
        finally:
            self.discard()

    def discard(self) -> None:
        """Drop what waits (the temporary files) without writing anything. `close` does this
        after writing it."""
        self._closed = True
        for part in self._parts:
            part.close()
