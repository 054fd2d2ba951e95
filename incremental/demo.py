"""`make demo`: stream a sample model output through the incremental parser in token-sized chunks,
show the events as they come, then the calls in OpenAI's shape."""

from __future__ import annotations

import json
import sys
from importlib import resources

from gemma4_lark import tokens
from gemma4_lark.validate import validate

from gemma4_lark.events import ToolCallEnd
from .parser import StreamParser

_COLOURS = {
    "text": "0", "thinking_start": "2;36", "thinking_delta": "36", "thinking_end": "2;36",
    "tool_call_start": "1;33", "tool_call_end": "33", "tool_call_error": "1;31", "stop": "1;35",
}


def sample_output() -> str:
    return resources.files("gemma4_lark.samples").joinpath("model_output.txt").read_text(encoding="utf-8")


def token_chunks(text: str, size: int = 4):
    """Split roughly as a tokenizer would: every control token alone, other text in short pieces."""
    specials = sorted(tokens.CONTROL_TOKENS, key=len, reverse=True)
    i = 0
    while i < len(text):
        special = next((t for t in specials if text.startswith(t, i)), None)
        if special:
            yield special
            i += len(special)
            continue
        j = i + 1
        while j < len(text) and j - i < size and not any(text.startswith(t, j) for t in specials):
            j += 1
        yield text[i:j]
        i = j


def _show(event, colour: bool, count: int = 1) -> str:
    data = event.to_dict()
    kind = data.pop("type")
    span = data.pop("span")
    detail = json.dumps(data, ensure_ascii=False)
    label = kind if count == 1 else f"{kind} x{count}"
    line = f"{span[0]:>4}-{span[1]:<4} {label:<18} {detail}"
    return f"\x1b[{_COLOURS[kind]}m{line}\x1b[0m" if colour else line


class _Log:
    """Prints events; a run of text or thinking deltas is shown as one line with its count."""

    def __init__(self, out, colour):
        self.out, self.colour = out, colour
        self.run, self.count = None, 0

    def add(self, event):
        if self.run is not None and type(event) is type(self.run):
            self.run = type(event)(self.run.text + event.text, (self.run.span[0], event.span[1]))
            self.count += 1
            return
        self.close()
        if event.type in ("text", "thinking_delta"):
            self.run, self.count = event, 1
        else:
            print(_show(event, self.colour), file=self.out)

    def close(self):
        if self.run is not None:
            print(_show(self.run, self.colour, self.count), file=self.out)
            self.run = None


def run(out=None) -> int:
    out = out or sys.stdout
    colour = out.isatty()
    text = sample_output()
    chunks = list(token_chunks(text))
    print(f"sample model output: {len(text)} characters in {len(chunks)} token-sized chunks", file=out)
    problems = validate(text)
    print("grammar check: " + ("valid" if not problems else f"{len(problems)} problem(s)"), file=out)
    parser = StreamParser(id_factory=iter(f"call_{i}" for i in range(1000)).__next__)
    calls = []
    log = _Log(out, colour)
    for chunk in chunks + [None]:
        events = parser.flush() if chunk is None else parser.feed(chunk)
        for event in events:
            log.add(event)
            if isinstance(event, ToolCallEnd):
                calls.append(event)
    log.close()
    print("\ncalls, OpenAI shape:", file=out)
    print(json.dumps([c.to_openai() for c in calls], indent=2, ensure_ascii=False), file=out)
    return 0 if not problems else 1
