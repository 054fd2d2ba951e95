"""The short fuzz campaign: every campaign of `fuzz/` with a small, derandomized budget, the known
hostile inputs of `fuzz/corpus.jsonl`, and small doubling checks of time and memory.

The deep campaign is `make fuzz` (docs/fuzzing.md). A check marked xfail fails today because of a
bug issue 9 lists; when that bug is fixed the mark goes (the checks themselves are not weakened).
"""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # fuzz/ is a tool of the repo

from fuzz import corpus, linear, properties, runner  # noqa: E402
from fuzz.properties import CAMPAIGNS, campaign  # noqa: E402
from gemma4_lark.events import Text  # noqa: E402
from gemma4_lark.reference import ReferenceScanner  # noqa: E402

EXAMPLES = 10          # per campaign (the command line: 2; it runs a process per example)

ITEM5_NAME = "issue 9 item 5: names and keys are not checked against the grammar's NAME and KEY"
ITEM5_TOKENS = "issue 9 item 5: the guard knows 17 tokens, not the grammar's <|word>, <|word|>, <word|>"
ITEM5_FIELDS = "issue 9 item 5: the omp image mimeType and the first line of an inventory type are not checked"
ITEM5_SPLIT = "issue 9 item 5: the text as written is not checked, only each part"
ITEM5_READER = "issue 9 item 5: read_official raises AttributeError on media after a dict-valued result"

# Known hostile inputs (fuzz/corpus.jsonl ids) that fail today.
KNOWN_INPUTS = {
    "omp-name-forges-arguments": ITEM5_NAME, "omp-empty-name": ITEM5_NAME, "omp-result-name": ITEM5_NAME,
    "official-result-key": ITEM5_NAME, "official-argument-key": ITEM5_NAME, "official-role": ITEM5_NAME,
    "omp-foreign-token-thinking": ITEM5_TOKENS, "omp-catalog-foreign-token": ITEM5_TOKENS,
    "official-foreign-token": ITEM5_TOKENS,
    "omp-image-mime": ITEM5_FIELDS, "omp-inventory-enum": ITEM5_FIELDS,
    "official-split-token-in-parts": ITEM5_SPLIT, "official-consecutive-assistants": ITEM5_SPLIT,
    "read-official-media-after-dict-result": ITEM5_READER,
    "omp-name-with-newline": ITEM5_NAME, "omp-strip-leaves-bad-name": ITEM5_NAME,
    "omp-inventory-think-enum": ITEM5_FIELDS, "omp-split-delimiter-in-parts": ITEM5_SPLIT,
    "official-strip-then-trim": "fuzz finding F2 (not in issue 9): unsafe='strip' strips after trimming; the prompt does not render again to itself",
    "official-empty-role": ITEM5_NAME, "official-empty-tool-name": ITEM5_NAME,
}

# Campaigns that fail today with the fixed seed and budget below.
KNOWN_CAMPAIGNS = {
    "round-trip-or-refusal.omp.render_tool_call": ITEM5_NAME,
    "round-trip-or-refusal.omp.render_tool_results": ITEM5_NAME,
    "round-trip-or-refusal.omp.render_tool_inventory+catalog": ITEM5_FIELDS + "; " + ITEM5_TOKENS,
    "round-trip-or-refusal.omp.render_transcript+read_omp": ITEM5_NAME + "; " + ITEM5_TOKENS,
    "round-trip-or-refusal.official.render_chat+read_official": ITEM5_NAME + "; " + ITEM5_TOKENS,
}


def _marks(reason):
    return [pytest.mark.xfail(strict=False, reason=reason)] if reason else []


@pytest.mark.parametrize("row", [pytest.param(row, id=row["id"], marks=_marks(KNOWN_INPUTS.get(row["id"])))
                                 for row in corpus.rows()])
def test_known_hostile_input(row):
    c = campaign(row["campaign"])
    c.check(corpus.example(c, row["example"]))


@pytest.mark.parametrize("c", [pytest.param(c, id=c.name, marks=_marks(KNOWN_CAMPAIGNS.get(c.name))) for c in CAMPAIGNS])
def test_campaign(c):
    examples = max(2, int(EXAMPLES * min(1.0, c.weight * 5)))
    # a known failure is not shrunk again on every run (it is slow); a new one is
    runner.test_function(c, examples, derandomize=True, shrink=c.name not in KNOWN_CAMPAIGNS)()


# (shape, entry point, n): the doubling checks of CI, small; `make fuzz` runs every pair, larger.
TIME_CASES = [
    ("list-items", "parse_call", 250, None),
    ("delimiter-runs", "decode_call", 250, None),
    ("calls-in-output", "StreamParser", 250, None),
    ("tiny-calls", "StreamParser(64-char chunks)", 500, None),
]


@pytest.mark.parametrize(("shape", "entry_point", "n"), [
    pytest.param(shape, entry, n, id=f"{shape}-{entry}", marks=_marks(reason)) for shape, entry, n, reason in TIME_CASES])
def test_time_is_linear(shape, entry_point, n):
    linear.check_time(shape, entry_point, n, repeat=3, min_seconds=0.02, max_chars=1 << 17)


MEMORY_CASES = [("lt-dense-block", None), ("bare-word-block", None), ("cjk-block", None), ("ascii-block", None)]


@pytest.mark.parametrize("shape", [pytest.param(shape, id=shape, marks=_marks(reason)) for shape, reason in MEMORY_CASES])
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
    case = (text, [text[:4], text[4:]], dict(corpus.STREAM_DEFAULTS))
    with pytest.raises(AssertionError, match="does not start where the last event ended"):
        properties.check_stream_tiles(case, _LossyScanner)
    with pytest.raises(AssertionError, match="differ by chunking"):
        properties.check_stream_chunking(case, _LossyScanner)
    properties.check_stream_tiles(case, ReferenceScanner)
    properties.check_stream_chunking(case, ReferenceScanner)
