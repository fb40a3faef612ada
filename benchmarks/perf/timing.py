"""Repeated timing after warm-up: the median and the spread of several runs."""

import statistics
import time


def measure(fn, repeats=5, warmup=2):
    """Calls `fn()` `warmup` times, then times `repeats` calls.

    Returns: dict with `median_s`, `min_s`, `max_s` and all `times_s`.
    """
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "times_s": times}


def percentiles(times, points=(50, 99)):
    """Nearest-rank percentiles of a list of durations."""
    ordered = sorted(times)
    return {p: ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))] for p in points}
