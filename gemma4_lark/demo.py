"""`make demo`: validate and decode every block of a sample model output shipped in the package."""

from __future__ import annotations

import json
from importlib import resources

from .model import ToolCall
from .parser import parse_model_output
from .validate import validate


def sample_output() -> str:
    return resources.files("gemma4_lark.samples").joinpath("model_output.txt").read_text(encoding="utf-8")


def run() -> int:
    text = sample_output()
    print(f"sample model output: {len(text)} characters")
    diagnostics = validate(text)
    for d in diagnostics:
        print(d.format("sample"))
    print("valid" if not diagnostics else f"{len(diagnostics)} problem(s)")
    output = parse_model_output(text)
    for part in output.parts:
        if isinstance(part, ToolCall):
            print(json.dumps({"name": part.name, "arguments": part.arguments}, ensure_ascii=False))
    print(f"stop marker: {output.stop}")
    return 0 if not diagnostics else 1
