"""Running a campaign: a budget of examples and of seconds, distinct failures collected shrunk.

Hypothesis stops at a number of examples, not at a time, so a campaign runs in batches (each with
its own seed) until either budget is spent. A failure is shrunk by hypothesis; failures that end
in the same line of code are one finding, reported once.
"""

from __future__ import annotations

import re
import time
import traceback
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as with_seed
from hypothesis.errors import InvalidArgument

from .properties import Campaign

_BATCH = 50


def test_function(c: Campaign, examples: int, *, derandomize: bool = False, shrink: bool = True, counter=None):
    """The campaign as a hypothesis test: call it to run `examples` examples (`shrink=False`: report
    the first failure as found, which is quicker)."""
    def check(value):
        if counter is not None:
            counter[0] += 1
        c.check(value)

    config = settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize,
                      suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate] + [Phase.shrink] * shrink,
                      print_blob=False)
    return config(given(c.strategy())(check))


@dataclass
class Finding:
    campaign: str
    entry_point: str
    where: str        # the line the failure ended in
    error: str        # the exception, first lines
    example: str      # the shrunk example, as hypothesis wrote it


@dataclass
class Figures:
    campaign: str
    entry_point: str
    examples: int = 0
    seconds: float = 0.0
    findings: list = field(default_factory=list)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename.rsplit('/', 2)[-1]}:{frames[-1].lineno} ({frames[-1].name})" if frames else "?"


def _signature(exc: BaseException) -> str:
    """Where the failure ended and what kind of message it gave (numbers and quoted text
    dropped), so the same bug met twice counts once and two bugs ending in one line count twice."""
    message = str(exc).split("\n", 1)[0]
    message = re.sub(r"^line \d+, column \d+: ", "", message)
    message = re.sub(r"`[^`]*`|'[^']*'|\"[^\"]*\"|\d+", "_", message)[:60]
    return f"{type(exc).__name__} {_where(exc)} {message}"


def _failures(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _failures(inner)
    else:
        yield exc


def run(c: Campaign, *, examples: int, seconds: float, seed: int = 0, progress=None) -> Figures:
    """Run `c` until `examples` examples or `seconds` have been spent (whichever comes first)."""
    figures = Figures(c.name, c.entry_point)
    seen = set()
    start = time.monotonic()
    batch = 0
    counter = [0]
    while counter[0] < examples and time.monotonic() - start < seconds:
        size = max(1, min(_BATCH, examples - counter[0]))
        runner = with_seed(seed * 1_000_003 + batch)(test_function(c, size, counter=counter))
        batch += 1
        try:
            runner()
        except InvalidArgument:  # a bug of the harness, not a finding
            raise
        except (Exception, BaseExceptionGroup) as exc:  # hypothesis raises the shrunk failure(s)
            for failure in _failures(exc):
                signature = _signature(failure)
                if signature in seen:
                    continue
                seen.add(signature)
                where = _where(failure)
                notes = "\n".join(getattr(failure, "__notes__", []) or getattr(exc, "__notes__", []))
                finding = Finding(c.name, c.entry_point, where,
                                  f"{type(failure).__name__}: {failure}"[:1500], notes[:4000])
                figures.findings.append(finding)
                if progress:
                    progress(finding)
    figures.examples = counter[0]
    figures.seconds = time.monotonic() - start
    return figures
