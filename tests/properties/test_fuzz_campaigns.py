"""The short fuzz campaign: every campaign of `fuzz/` with a small, derandomized budget, the known
hostile inputs of `fuzz/corpus.jsonl`, and small doubling checks of time and memory.

The deep campaign is `make fuzz` (docs/fuzzing.md). Every check here must pass: the corpus keeps
each failure the campaigns ever found, so a regression shows as a failing corpus row.
"""

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO))  # fuzz/ is a tool of the repo

from fuzz import corpus, linear, properties, runner  # noqa: E402
from fuzz.properties import CAMPAIGNS, campaign  # noqa: E402
from timing import Guard, guard_tests  # noqa: E402
from gemma4_lark.events import Text  # noqa: E402
from gemma4_lark.reference import ReferenceScanner  # noqa: E402

EXAMPLES = 10          # per campaign (the command line: 2; it runs a process per example)


@pytest.mark.parametrize("row", [pytest.param(row, id=row["id"]) for row in corpus.rows()])
def test_known_hostile_input(row):
    c = campaign(row["campaign"])
    c.check(corpus.example(c, row["example"]))


@pytest.mark.parametrize("c", [pytest.param(c, id=c.name) for c in CAMPAIGNS])
def test_campaign(c):
    examples = max(2, int(EXAMPLES * min(1.0, c.weight * 5)))
    runner.test_function(c, examples, derandomize=True, shrink=True)()


# (shape, entry point, n): the doubling checks of CI, small; `make fuzz` runs every pair, larger.
TIME_CASES = [
    # big blocks (64,000 items at 16x and more): the accept-only fast path takes every size
    ("list-items", "parse_call", 4000),
    ("delimiter-runs", "decode_call", 250),
    ("calls-in-output", "StreamParser", 250),
    ("tiny-calls", "StreamParser(64-char chunks)", 500),
]


# timed as every guard of the suite is (tests/timing.py: n against 16n); `make fuzz` uses fuzz/linear's 4x
_TIME_GUARDS = [Guard(f"{shape}-{entry}", linear.ENTRY_POINTS[entry], linear.SHAPES[shape], n, min_time=0.02)
                for shape, entry, n in TIME_CASES]
test_time_is_linear = guard_tests(_TIME_GUARDS)[0]


MEMORY_CASES = ["lt-dense-block", "bare-word-block", "cjk-block", "ascii-block"]


@pytest.mark.parametrize("shape", MEMORY_CASES)
def test_memory_is_bounded(shape):
    linear.check_memory(shape, 20_000)


class _LossyScanner(ReferenceScanner):
    """A scanner that loses the text of chunks shorter than 10 characters."""

    def feed(self, chunk):
        events = super().feed(chunk)
        return events if len(chunk) >= 10 else [e for e in events if not isinstance(e, Text)]


def test_stream_properties_can_fail():
    """The properties that pass today are not vacuous: they catch a scanner that loses text."""
    text = "Hello <|tool_call>call:f{a:1}<tool_call|> world"
    case = (text, [text[:4], text[4:]], {**corpus.STREAM_DEFAULTS, "strict": True})  # the oracle reads strictly
    with pytest.raises(AssertionError, match="does not start where the last event ended"):
        properties.check_stream_tiles(case, _LossyScanner)
    with pytest.raises(AssertionError, match="differ by chunking"):
        properties.check_stream_chunking(case, _LossyScanner)
    properties.check_stream_tiles(case, ReferenceScanner)
    properties.check_stream_chunking(case, ReferenceScanner)
