"""Examples of hypothesis strategies outside a test run: the project's own strategies
(gemma4_lark.strategies, tests/schema_strategies.py) make the strings, reproducibly from a seed."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st


def examples(strategy: st.SearchStrategy, n: int, seed: int) -> list:
    """`n` examples of `strategy` (fewer when hypothesis runs out of distinct ones)."""
    out: list = []

    @hypothesis_seed(seed)
    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example):
        out.append(example)

    collect()
    return out
