"""What a matcher says of one token sequence, in the same terms for both engines."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    taken: int      # tokens let through before the first one refused (all of them when none is)
    complete: bool  # every token taken, and the grammar may end there: it accepts the whole

    def describe(self, n: int) -> str:
        if self.complete:
            return "accepts"
        return "takes every token, not complete" if self.taken == n else f"refuses token {self.taken}"
