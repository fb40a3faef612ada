"""What the resumable benchmarks share: a work directory that remembers the flags it was started with."""

import json
import os

# Flags that say what happens after a run, not what the run is: a resumed run may change them.
AFTER_THE_RUN_FLAGS = ("keep_checkpoints",)


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, value):
    """Writes `value` to `path` whole or not at all (a temporary file renamed), so a reader can trust it."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
    os.replace(path + ".tmp", path)


def write_results(work, ours, theirs, ours_rate, their_rate):
    """Writes both sides' metrics and training rates to `<work>/results.json` (what benchmarks.seed_spread reads)."""
    write_json(os.path.join(work, "results.json"), {
        "ours": ours, "theirs": theirs, "ours_examples_per_second": ours_rate,
        "theirs_examples_per_second": their_rate})


def check_same_flags(work, args, ignore=("out",)):
    """Records the run's flags in `<work>/benchmark.json`, or checks that a resumed run's flags equal them.

    Args:
        work: the benchmark's --out directory (created).
        args: the parsed arguments.
        ignore: flags a resumed run may change (besides `AFTER_THE_RUN_FLAGS`).

    Raises:
        ValueError: naming the first flag that differs from the recorded run's.
    """
    ignore = (*ignore, *AFTER_THE_RUN_FLAGS)
    flags = {name: value for name, value in sorted(vars(args).items()) if name not in ignore}
    path = os.path.join(work, "benchmark.json")
    if os.path.exists(path):
        recorded = read_json(path)
        for name in sorted((set(flags) | set(recorded)) - set(ignore)):
            if flags.get(name) != recorded.get(name):
                raise ValueError(f"{path}: --{name} was {recorded.get(name)!r} in the run being resumed, now "
                                 f"{flags.get(name)!r}; pass the same flags or a fresh --out")
        print(f"Resuming the run in {work}", flush=True)
        return
    os.makedirs(work, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(flags, f, indent=2)
