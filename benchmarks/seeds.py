"""Several seeds per fine-tuning benchmark: one run per seed, then each side's mean, spread and the difference.

One short fine-tuning run is one draw (at 94 CoNLL steps the entity F1 moves by points from seed to seed), so the
GLUE, NER and SQuAD benchmarks run `--seeds` seeds by default, `--seed`, `--seed + 1`, ...; each seed draws the
head, the batch order and the dropout masks on both sides. A seed's run lives in `<out>/seed-<seed>` (in `<out>`
itself with `--seeds=1`) and is skipped once its `results.json` exists, so a killed benchmark goes on from the
seed it was in. Once a seed has its `results.json`, its checkpoints are deleted (`benchmarks/cleanup.py`) unless
`--keep_checkpoints`.
"""

import argparse
import math
import os
import shutil

import numpy as np

from benchmarks.cleanup import remove_checkpoints
from benchmarks.resumable import read_json


def add_seed_flags(parser, default_seeds=3):
    """`--seed` (the first seed) and `--seeds` (how many)."""
    parser.add_argument("--seed", type=int, default=42, help="the first seed")
    parser.add_argument("--seeds", type=int, default=default_seeds,
                        help="runs, under seeds --seed .. --seed + N - 1; 1 for a single draw")


def check_seed_flags(parser, args):
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")


def over_seeds(args, work, run_seed, resumes=False, checkpoints=None):
    """Runs one benchmark per seed, skipping the seeds that have results.

    Args:
        args: the parsed flags (`seed`, `seeds`; `keep_checkpoints` with `checkpoints`).
        work: the benchmark's work directory.
        run_seed: `run_seed(seed_args, seed_work)` runs one seed (its flags with `seed` set) and writes
            `<seed_work>/results.json` (`resumable.write_results`).
        resumes: the benchmark resumes a killed run in its work directory; otherwise a seed directory left without
            results by a killed run starts over.
        checkpoints: where a seed's run keeps its checkpoints: `cleanup.remove_checkpoints`' keyword arguments,
            paths relative to the seed's directory; deleted once it has results, unless `args.keep_checkpoints`.

    Returns:
        list of `(seed, results dict)`, in seed order.
    """
    done = []
    for seed in range(args.seed, args.seed + args.seeds):
        seed_work = work if args.seeds == 1 else os.path.join(work, f"seed-{seed}")
        path = os.path.join(seed_work, "results.json")
        if os.path.exists(path):
            print(f"seed {seed}: {path} exists, reusing it", flush=True)
        else:
            if args.seeds > 1 and os.path.isdir(seed_work) and not resumes:
                shutil.rmtree(seed_work)  # our own seed directory, left by a killed run that cannot resume
            run_seed(argparse.Namespace(**{**vars(args), "seed": seed}), seed_work)
        done.append((seed, read_json(path)))  # (raises without results: the checkpoints stay for a resume)
        if checkpoints is not None and not args.keep_checkpoints:
            remove_checkpoints(seed_work, **checkpoints)
    return done


def spread(ours, theirs):
    """Summary statistics of two equal-length score lists drawn under the same seeds.

    Returns: dict of each side's mean and sample standard deviation, the difference of means with its Welch
        standard error, and the mean paired difference with its standard error (nan where n < 2).
    """
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    n = len(ours)
    std = (lambda x: float(np.std(x, ddof=1))) if n > 1 else (lambda x: math.nan)
    paired = ours - theirs
    return {"n": n, "ours_mean": float(ours.mean()), "ours_std": std(ours), "theirs_mean": float(theirs.mean()),
            "theirs_std": std(theirs), "difference": float(ours.mean() - theirs.mean()),
            "difference_se": math.sqrt(std(ours) ** 2 / n + std(theirs) ** 2 / n),
            "paired_difference": float(paired.mean()), "paired_se": std(paired) / math.sqrt(n)}


def print_over_seeds(results, keys, scale=1.0):
    """Prints each metric's per-seed values, each side's mean ± sd, and ours − HF with its standard errors.

    Args:
        results: from `over_seeds` (two seeds at least; one prints nothing).
        keys: the metrics to report (those both sides have).
        scale: multiplies the metrics (100 for fractions).
    """
    if len(results) < 2:
        return
    seeds = [seed for seed, _ in results]
    print(f"\nOver {len(seeds)} seeds ({', '.join(map(str, seeds))}): mean ± sample sd per side; ours - HF with the "
          "Welch standard error of the difference of means, and the mean paired (same-seed) difference with its SE")
    print(f"{'':20s}{'ours':>16s}{'HF PyTorch':>16s}{'ours - HF':>16s}{'paired':>16s}  per seed (ours/HF)")
    for key in keys:
        if not all(key in r["ours"] and key in r["theirs"] for _, r in results):
            continue
        ours = [r["ours"][key] * scale for _, r in results]
        theirs = [r["theirs"][key] * scale for _, r in results]
        s = spread(ours, theirs)
        flag = "  beyond 2 SE" if abs(s["difference"]) > 2 * s["difference_se"] else ""
        print(f"{key:20s}{s['ours_mean']:9.2f} ± {s['ours_std']:4.2f}{s['theirs_mean']:9.2f} ± {s['theirs_std']:4.2f}"
              f"{s['difference']:+9.2f} ± {s['difference_se']:4.2f}{s['paired_difference']:+9.2f} ± "
              f"{s['paired_se']:4.2f}  {', '.join(f'{a:.2f}/{b:.2f}' for a, b in zip(ours, theirs))}{flag}")
    rates = [(r["ours_examples_per_second"], r["theirs_examples_per_second"]) for _, r in results]
    print(f"{'train examples/s':20s}{np.mean([a for a, _ in rates]):16.1f}{np.mean([b for _, b in rates]):16.1f}"
          f"{np.mean([a / b for a, b in rates]):15.2f}x  (mean of the seeds; `benchmarks.run` measures speed)")


def print_seed_table(rows, rates, seconds, unit="examples", digits=4):
    """One seed's comparison: each metric on both sides and ours - HF, then both sides' steady training rate with
    its ratio, and their training wall seconds.

    Args:
        rows: `(label, ours, theirs)` per metric.
        rates: `(ours, theirs)` steady training `unit`s per second.
        seconds: `(ours, theirs)` training wall seconds.
        unit: what the rate counts ("examples", "windows").
        digits: the metrics' decimals.
    """
    print(f"{'':28s}{'ours (TF/Keras)':>18s}{'HF PyTorch':>14s}{'ours - HF':>12s}")
    for label, ours, theirs in rows:
        print(f"{label:28s}{ours:18.{digits}f}{theirs:14.{digits}f}{ours - theirs:+12.{digits}f}")
    print(f"{f'train {unit}/s (steady)':28s}{rates[0]:18.1f}{rates[1]:14.1f}{rates[0] / rates[1]:11.2f}x")
    print(f"{'train wall seconds':28s}{seconds[0]:18.1f}{seconds[1]:14.1f}")
