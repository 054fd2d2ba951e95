"""How long a piece of work takes, and the complexity guards that compare sizes within one run.

A guard times one piece of work at n and at GROWTH * n (n doubled first until a run is long
enough to time), in CPU time, best of three, with the garbage collector paused: what is compared is
the code's own work, not the machine's load or when a collection happened to fall. At 16x a linear
path reads 16 (a little more where a bigger working set misses the caches) and a quadratic one 256,
so the bound (48) sits far from both; a result over it is measured again before it fails, so one
unlucky run is not a failure. `assert_catches_quadratic` proves a guard can fail: the same work
plus a quadratic term that costs as much as the work at n (at 16n: 256 times that) must read over
the bound: (r + 256) / 2 >= 128 whatever the work's own ratio r, even where fixed costs dominate.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any, Callable

GROWTH = 16
MAX_RATIO = 48.0  # linear: 16 (up to ~24 with cache effects); quadratic: 256
MIN_TIME = 0.002  # seconds: the small run is doubled until it takes this long
ATTEMPTS = 3  # a ratio over the bound is measured again, up to this many times in all


def best_cpu_seconds(run, repeat: int = 3) -> float:
    """The shortest of `repeat` runs of `run()`, in CPU time of this process (the machines are
    shared: wall time would count the other processes' turns), with the collector paused."""
    best = float("inf")
    # the young generations only: what the last runs left behind. A full collection walks the test
    # process's whole heap (hypothesis, Lark's tables: about 35 ms here), more than the runs it
    # precedes, and buys nothing: no collection can fall inside a run, the collector is paused.
    gc.collect(1)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            start = time.process_time()
            run()
            best = min(best, time.process_time() - start)
    finally:
        if enabled:
            gc.enable()
    return best


@dataclass(frozen=True)
class Guard:
    """`run(make(n))` must cost linear time in n. `size`: where the doubling starts; `max_size`:
    where it stops even if runs are still short. Whatever `make` does (compiling tools, splitting
    chunks) is outside the timing."""

    name: str
    run: Callable[[Any], Any]
    make: Callable[[int], Any]
    size: int
    max_size: int | None = None
    min_time: float = MIN_TIME
    min_size: int = 64  # where the halving stops: below a bound the work is held to, sizes say nothing

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Measured:
    size: int
    small: float
    large: float

    @property
    def ratio(self) -> float:
        return self.large / max(self.small, 1e-4)


def _small_size(guard: Guard, run: Callable[[Any], Any]) -> tuple[int, float]:
    """The size at which one run takes between min_time and 2 * min_time (doubled or halved from
    guard.size, within [min_size, max_size]; halving stops before a run gets shorter than min_time), and
    its time: long enough to time, short enough that the 16x run, and a quadratic twin's, stay cheap."""
    largest = guard.max_size if guard.max_size is not None else 64 * guard.size

    def timed(size):
        case = guard.make(size)
        return best_cpu_seconds(lambda: run(case))

    size = guard.size
    run(guard.make(size))  # warm up: parsers built, caches filled
    small = timed(size)
    while small < guard.min_time and size < largest:
        size = min(size * 2, largest)
        small = timed(size)
    while small >= 2 * guard.min_time and size // 2 >= guard.min_size:
        half = timed(size // 2)
        if half < guard.min_time:
            break
        size, small = size // 2, half
    return size, small


def measure(guard: Guard, *, size: int | None = None, repeat: int = 3) -> Measured:
    """The guard's work at its small size (found, or `size` as given) and GROWTH times it."""
    if size is None:
        size, small = _small_size(guard, guard.run)
    else:
        small_case = guard.make(size)
        small = best_cpu_seconds(lambda: guard.run(small_case))
    case = guard.make(size * GROWTH)
    return Measured(size, small, best_cpu_seconds(lambda: guard.run(case), repeat))


def assert_linear(guard: Guard) -> Measured:
    """Fails when `guard.run` costs more than linear time, after ATTEMPTS measurements over the bound."""
    for _ in range(ATTEMPTS):
        result = measure(guard)
        if result.ratio < MAX_RATIO:
            return result
    raise AssertionError(f"{guard.name}: {GROWTH}x {result.size} took {result.ratio:.1f}x the time "
                         f"(linear: {GROWTH}, bound {MAX_RATIO:.0f})")


def _spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i
    return total


def _spins_per_second() -> float:
    iterations = 20_000
    while True:
        seconds = best_cpu_seconds(lambda: _spin(iterations), 1)
        if seconds >= 0.01:
            return iterations / seconds
        iterations *= 4


def assert_catches_quadratic(guard: Guard) -> Measured:
    """The guard fails on the same work plus a quadratic term as large as the work at its small size."""
    size, small = _small_size(guard, guard.run)
    spins_at_small = max(1, int(small * _spins_per_second()))

    def quadratic(sized):
        n, case = sized
        guard.run(case)
        _spin(int(spins_at_small * (n / size) ** 2))

    # measured at the guard's own small size: the quadratic term is calibrated there
    twin = Guard(guard.name + " (quadratic twin)", quadratic, lambda n: (n, guard.make(n)), size)
    result = measure(twin, size=size, repeat=1)
    assert result.ratio >= MAX_RATIO, (
        f"{guard.name}: a quadratic twin read only {result.ratio:.1f}x at {GROWTH}x {result.size}: "
        "the guard could not fail")
    return result


def guard_tests(guards: list[Guard], *, twins: list[Guard] | None = None):
    """The two tests every family of guards has: each guard's work is linear, and each guard (or
    each of `twins`, a representative few where the family is large and its twins cost alike) can
    fail. Bind both at module level: `test_linear, test_can_fail = guard_tests(GUARDS)`."""
    import pytest

    @pytest.mark.parametrize("guard", guards, ids=str)
    def test_linear(guard):
        assert_linear(guard)

    @pytest.mark.parametrize("guard", guards if twins is None else twins, ids=str)
    def test_can_fail(guard):
        assert_catches_quadratic(guard)

    return test_linear, test_can_fail
