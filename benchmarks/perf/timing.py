"""Repeated timing after warm-up (the median and the spread of several runs, or one time per input), and the size
of an export on disk."""

import os
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


def per_call_times(call, inputs, warmup=3):
    """Calls `call` on the first `warmup` inputs untimed, then on every input, timing each call.

    Returns: a list of durations in seconds, one per input.
    """
    for item in inputs[:warmup]:
        call(item)
    times = []
    for item in inputs:
        start = time.perf_counter()
        call(item)
        times.append(time.perf_counter() - start)
    return times


def size_on_disk(path):
    """Bytes of a file, or of every file under a directory (e.g. a SavedModel version directory)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)
