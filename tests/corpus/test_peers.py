"""Peers' own test suites as conformance cases (tests/peers/*.jsonl, described in its README).

Each case is an expectation of a peer's test (vLLM, SGLang, Ollama, llama.cpp, LiteRT-LM), its
source named. A case we agree with must come out as the peer expects; a case we deliberately
differ from must still differ, come out as recorded in `ours`, and be listed with its reason in
docs/leniency.md, as must the tally per peer. Every case runs at several chunkings (whole, 1 and 4
characters, random splits, and the peer's own chunks when its test has them), which must all give
the same result.

What is compared, as the peers' tests check it: `content` (the OpenAI message's, stripped of
surrounding whitespace, as the peers strip it), the thoughts joined (stripped), and the calls (name
and arguments; numbers by value for Ollama, whose arguments are Go float64s, else exactly).
"""

import json
import random
import re

import pytest

from conftest import numbers_by_value, same
from gemma4_incremental import StreamParser, collect
from gemma4_incremental.openai import to_openai_message

from stream_helpers import counter_ids, split_every
from conftest import REPO, TESTS

PEERS = TESTS / "peers"
LENIENCY = REPO / "docs" / "leniency.md"
CASES = [json.loads(line) for path in sorted(PEERS.glob("*.jsonl"))
         for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _observe(case, chunks):
    options = dict(case.get("options", {}))
    if "tools" in case:
        options["tools"] = case["tools"]
    parser = StreamParser(id_factory=counter_ids(), **options)
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    out = collect(events + parser.flush(finish_reason=case.get("finish_reason")))
    message = to_openai_message(out)
    return {"content": (message["content"] or "").strip(), "thinking": "".join(out.thinking).strip(),
            "calls": [{"name": call.name, "arguments": call.arguments} for call in out.calls]}


def _matches(observed, expected, by_value):
    for key, want in expected.items():
        got = observed[key]
        if key in ("content", "thinking"):
            want = want.strip()
        if key == "calls" and len(got) == len(want):  # a peer's test may check only a call's name
            got = [{k: call[k] for k in expected_call} for call, expected_call in zip(got, want)]
        if by_value:
            got, want = numbers_by_value(got), numbers_by_value(want)
        if not same(got, want):
            return False
    return True


def _chunkings(case):
    text = case["input"]
    rng = random.Random(text)
    splits = []
    for _ in range(3):
        points = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, 5))) if len(text) > 1 else []
        splits.append([text[a:b] for a, b in zip([0] + points, points + [len(text)])])
    own = [case["chunks"]] if "chunks" in case else []
    return [[text], split_every(text, 1), split_every(text, 4)] + splits + own


def _case_id(case):
    return f"{case['peer']}:{case['test']}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_peer_case(case):
    if "chunks" in case:
        assert "".join(case["chunks"]) == case["input"]
    observed = [_observe(case, chunks) for chunks in _chunkings(case)]
    for other in observed[1:]:
        assert same(other, observed[0]), "the chunking changed the result"
    ours = observed[0]
    by_value = case.get("numbers") == "by-value"
    if case["verdict"] == "agree":
        assert _matches(ours, case["expected"], by_value), (ours, case["expected"])
    else:
        assert case["verdict"] == "differ" and case["why"]
        assert not _matches(ours, case["expected"], by_value), "we agree now: make it an `agree` case, update docs/leniency.md"
        assert _matches(ours, case["ours"], False), (ours, case["ours"])


def test_every_case_names_its_source():
    assert len(CASES) >= 150
    for case in CASES:
        assert {"peer", "repo", "path", "test", "input", "expected", "verdict"} <= set(case), case
        assert case["verdict"] in ("agree", "differ")
        assert set(case["expected"]) <= {"content", "thinking", "calls"} and case["expected"]
    assert len({_case_id(c) for c in CASES}) == len(CASES)


def tally():
    """peer -> (taken, agreeing, deliberately differing)."""
    counts = {}
    for case in CASES:
        row = counts.setdefault(case["peer"], [0, 0, 0])
        row[0] += 1
        if case["verdict"] == "agree":
            row[1] += 1
        else:
            row[2] += 1
    return {peer: tuple(row) for peer, row in counts.items()}


def test_the_tally_and_every_difference_are_in_leniency_md():
    doc = LENIENCY.read_text(encoding="utf-8")
    for peer, (taken, agreeing, differing) in tally().items():
        row = rf"\|\s*`{peer}`[^|\n]*\|[^|\n]*\|\s*{taken}\s*\|\s*{agreeing}\s*\|\s*{differing}\s*\|"
        assert re.search(row, doc), f"docs/leniency.md: the tally row of {peer} is missing or out of date"
    for case in CASES:
        if case["verdict"] == "differ":
            assert f"`{case['test']}`" in doc, f"docs/leniency.md does not list {_case_id(case)}"
