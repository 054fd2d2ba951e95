"""How long a piece of work takes, for the complexity guards that compare sizes within one run."""

import time


def best_cpu_seconds(run, repeat: int = 3) -> float:
    """The shortest of `repeat` runs of `run()`, in CPU time of this process: the machines are
    shared, and wall time would count the other processes' turns."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best
