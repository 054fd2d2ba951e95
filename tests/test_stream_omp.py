"""StreamParser against OMP's recorded streams (../shared/data/omp-stream-cases.jsonl)."""

from gemma4_incremental import ToolCallEnd, collect

from conftest import load_jsonl
from stream_helpers import assert_tiles, merged, run
from conftest import numbers_by_value


def _cases(kind=None):
    return [c for c in load_jsonl("omp-stream-cases.jsonl") if kind is None or c["kind"] == kind]


def test_strict_cases_match_omp():
    cases = _cases("strict")
    assert len(cases) > 200
    for case in cases:
        events = run(case["chunks"], parse_thinking=case["parseThinking"])
        text = "".join(e.text for e in events if e.type == "text")
        thinking = collect(events).thinking
        calls = [{"name": e.name, "arguments": numbers_by_value(e.arguments)} for e in events if isinstance(e, ToolCallEnd)]
        expected_calls = [{"name": c["name"], "arguments": numbers_by_value(c["arguments"])} for c in case["omp"]["calls"]]
        assert (text, thinking, calls) == (case["omp"]["text"], case["omp"]["thinking"], expected_calls), case["id"]


def test_every_case_tiles_and_does_not_depend_on_chunking():
    cases = _cases()
    assert len(cases) > 400
    for case in cases:
        options = {"parse_thinking": case["parseThinking"]}
        chunked = run(case["chunks"], **options)
        whole = run([case["text"]], **options)
        assert_tiles(chunked, case["text"])
        assert merged(chunked) == merged(whole), case["id"]
