"""The outputs every adapter test streams through a framework."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STREAMS = sorted((ROOT / "tests" / "conformance" / "streams").glob("*.json"))
# Outputs the corpus lacks, that the adapters must carry through a server: a thought then a call,
# several calls, a failed block between calls, a call cut off at the end, strings that read as
# other types, and a call whose arguments are long enough to stream in several fragments.
OUTPUTS = [
    '<|channel>thought\nThe user wants Paris.<channel|>Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>',
    'Two calls.<|tool_call>call:a{x:1}<tool_call|><|tool_call>call:b{y:[true,null,<|"|>z<|"|>]}<tool_call|>',
    '<|tool_call>calldone{x:1}<tool_call|><|tool_call>call:g{q:<|"|>ok<|"|>}<tool_call|>after',
    'Cut off: <|tool_call>call:write{path:<|"|>/tmp/a<|"|>,text:<|"|>half of it',
    '<|tool_call>call:set{a:<|"|>null<|"|>,b:null,c:<|"|>true<|"|>,d:<|"|>108.<|"|>,e:108.}<tool_call|>',
    '<|tool_call>call:note{body:<|"|>' + "a long line of text, " * 8 + '<|"|>,n:12345678901234567890}<tool_call|>',
    'Just text, no call: call:x{y:1} stays prose.',
    '<|channel>thought\nfirst<channel|>A<|channel>thought\nsecond<channel|>B',
]


def corpus():
    """(id, text, StreamParser options) of every recorded stream and every output above."""
    cases = []
    for path in STREAMS:
        case = json.loads(path.read_text(encoding="utf-8"))
        cases.append((path.stem, case["text"], case["options"]))
    return cases + [(f"output-{i}", text, {}) for i, text in enumerate(OUTPUTS)]
