"""Seed spread of fine-tuning, ours vs Hugging Face transformers on PyTorch: mean, spread and the difference.

    python -m benchmarks.seed_spread --task=ner --seeds=5 --dropout=0.1,0 --out=out/seed_spread
    python -m benchmarks.seed_spread --task=mrpc --seeds=5 --out=out/seed_spread
    python -m benchmarks.seed_spread --task=squad --seeds=3 --dropout=0.1,0 --out=out/seed_spread
    python -m benchmarks.seed_spread --task=ner --seeds=5 --dropout=0.1,0 --out=out/seed_spread --report_only

One fine-tuning run at a short budget says little: at 94 NER steps the score moves by points from one seed to
the next. This runs a task's benchmark (`benchmarks.ner_finetune`, `glue_finetune`, `squad_finetune`) once per
seed and dropout rate, each run with both sides starting from one start checkpoint drawn under that seed (the
encoder plus a head drawn by transformers; `--seed` also draws each side's batch order and dropout masks), and
prints for each dropout rate: each side's mean and sample standard deviation over the seeds, the difference of
the means with its standard error (Welch), and the mean of the per-seed (paired) differences with its standard
error. A difference beyond two standard errors is flagged.

Budgets (`--task`):
    ner:   CoNLL-2003, a seeded 3,000-sentence subset of train, 1 epoch (94 steps), scored on the test split.
    mrpc:  GLUE MRPC, the whole train split, 3 epochs (344 steps), scored on dev.
    squad: SQuAD v1.1, the first 2,000 questions of the benchmark's train articles, 2 epochs (127 steps at
           seq 384), scored on its 10 held-out articles.

Each run writes `<out>/<task>/dropout-<rate>/seed-<k>/results.json`; a rerun of the same command skips the runs
that have one and starts the others again (SQuAD runs resume from their last checkpoint), so the table can grow
over several sessions; a run's checkpoints are deleted once its results.json is written, unless
`--keep_checkpoints`. `--report_only` prints the table of what is there.
"""

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys


from benchmarks.cleanup import add_keep_checkpoints_flag
from benchmarks.resumable import read_json
from benchmarks.seeds import spread

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Budget:
    """One task's short-budget recipe.

    Args:
        module: the benchmark run once per seed.
        flags: its flags for this budget.
        metric: the key of its results' metrics dict that the table reports.
        scale: multiplies the metric (entity and GLUE F1 are fractions; SQuAD's are percentages already).
        resumes: the benchmark resumes a killed run in the same --out (else a partial run starts over).
    """

    module: str
    flags: tuple
    metric: str
    scale: float
    resumes: bool = False


PEER_AS_MEASURED = "--pytorch_attention=eager"  # the peer's attention in issue 27's spreads (not its default, SDPA)
BUDGETS = {
    "ner": Budget("benchmarks.ner_finetune", ("--max_train_sentences=3000", "--epochs=1", PEER_AS_MEASURED),
                  "f1", 100.0),
    "mrpc": Budget("benchmarks.glue_finetune", ("--task=MRPC", PEER_AS_MEASURED, "--pytorch_padding=max_length"),
                   "f1", 100.0),
    "squad": Budget("benchmarks.squad_finetune", ("--max_train_examples=2000", PEER_AS_MEASURED), "f1", 1.0,
                    resumes=True),
}


def run_dir(out, task, dropout, seed):
    return os.path.join(out, task, f"dropout-{dropout:g}", f"seed-{seed}")


def run_one(budget, directory, dropout, seed, keep_checkpoints=False):
    """Runs the task's benchmark for one seed and dropout rate into `directory`, unless it has results (its
    checkpoints are deleted then, unless `keep_checkpoints`)."""
    results = os.path.join(directory, "results.json")
    if os.path.exists(results):
        print(f"seed_spread: {directory} done, reusing it", flush=True)
        return
    if os.path.exists(directory) and not budget.resumes:
        shutil.rmtree(directory)  # a killed run of a benchmark that cannot resume starts over
    command = [sys.executable, "-m", budget.module, *budget.flags, f"--seed={seed}", "--seeds=1",
               f"--dropout={dropout}", f"--out={directory}", *["--keep_checkpoints"] * keep_checkpoints]
    print("seed_spread:", " ".join(command), flush=True)
    subprocess.run(command, cwd=REPO_ROOT, check=True)


def collect(out, task, budget, dropout):
    """The finished seeds' scores of both sides for one dropout rate: `(seeds, ours, theirs)`."""
    seeds, ours, theirs = [], [], []
    directory = os.path.dirname(run_dir(out, task, dropout, 0))
    for name in sorted(os.listdir(directory) if os.path.isdir(directory) else [], key=lambda n: int(n.split("-")[1])):
        path = os.path.join(directory, name, "results.json")
        if os.path.exists(path):
            results = read_json(path)
            seeds.append(int(name.split("-")[1]))
            ours.append(results["ours"][budget.metric] * budget.scale)
            theirs.append(results["theirs"][budget.metric] * budget.scale)
    return seeds, ours, theirs


def report(out, task, budget, dropouts):
    print(f"\n{task}: {budget.module} {' '.join(budget.flags)}; metric {budget.metric} (x{budget.scale:g}); "
          "each seed: one shared start, both sides")
    print(f"{'dropout':>8s}{'n':>4s}{'ours mean':>11s}{'sd':>7s}{'HF mean':>10s}{'sd':>7s}"
          f"{'ours-HF':>9s}{'SE':>6s}{'paired':>8s}{'SE':>6s}  verdict")
    for dropout in dropouts:
        seeds, ours, theirs = collect(out, task, budget, dropout)
        if not seeds:
            print(f"{dropout:8g}   0  (no finished seed yet)")
            continue
        s = spread(ours, theirs)
        beyond = abs(s["difference"]) > 2 * s["difference_se"] if s["n"] > 1 else False
        verdict = "beyond 2 SE" if beyond else ("within 2 SE" if s["n"] > 1 else "one seed")
        print(f"{dropout:8g}{s['n']:4d}{s['ours_mean']:11.2f}{s['ours_std']:7.2f}{s['theirs_mean']:10.2f}"
              f"{s['theirs_std']:7.2f}{s['difference']:+9.2f}{s['difference_se']:6.2f}"
              f"{s['paired_difference']:+8.2f}{s['paired_se']:6.2f}  {verdict}")
        print(f"{'':12s}seeds {seeds}: ours {' '.join(f'{v:.2f}' for v in ours)}; "
              f"HF {' '.join(f'{v:.2f}' for v in theirs)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=sorted(BUDGETS), required=True)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 (with --first_seed)")
    parser.add_argument("--first_seed", type=int, default=0)
    parser.add_argument("--dropout", default="0.1", help="comma-separated rates, e.g. 0.1,0")
    parser.add_argument("--out", default=os.path.join("out", "seed_spread"))
    parser.add_argument("--report_only", action="store_true", help="print the table of the finished runs")
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()
    try:
        dropouts = [float(v) for v in args.dropout.split(",")]
    except ValueError:
        parser.error(f"--dropout: expected comma-separated numbers, got {args.dropout!r}")
    if any(not 0 <= d < 1 for d in dropouts):
        parser.error(f"--dropout: every rate must be in [0, 1), got {args.dropout!r}")

    budget = BUDGETS[args.task]
    if not args.report_only:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for dropout in dropouts:
                run_one(budget, run_dir(args.out, args.task, dropout, seed), dropout, seed, args.keep_checkpoints)
    report(args.out, args.task, budget, dropouts)


if __name__ == "__main__":
    main()
