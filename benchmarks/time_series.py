"""BERT over sequences of feature vectors on the UEA archive's BasicMotions and JapaneseVowels (the `sktime` wheel's
`.ts` files), ours (`python -m tasks.run_time_series_classifier`) against the same recipe in PyTorch
(`benchmarks/time_series_torch.py`), on the same machine in the same run.

    python -m benchmarks.time_series --out=out/bench/time_series              # 5 seeds, resumable
    python -m benchmarks.time_series --datasets=BasicMotions --seeds=1 --out=/tmp/ts_smoke

The recipe is the paper's head at hidden 64 (`tasks.run_time_series_classifier`'s defaults: one pre-LN block, 8
heads, key-keep rate 0.8, dropout 0.8 before the head, per-channel standardisation; batch 16, AdamW at 1e-3 with
10% warmup). The one choice, the number of training steps (`--steps`), is made per dataset on a validation split
carved from the training split (`--validation_share` of it, drawn under `--data_seed`), never on the test split:
ours is trained on the rest under `--seed` for each candidate and the best validation accuracy wins (ties: fewer
steps). Then both sides train on the whole training split for that many steps under each seed and are evaluated on
the default test split.

Prints, per dataset, each seed's test accuracy and macro F1 on both sides, each side's mean and sample standard
deviation, the difference with its standard error, the training examples/second of both (the first step left
out) and their ratio, and the batch-1 latency of our SavedModel and TFLite model and of the peer's eager forward
(`benchmarks/time_series_latency.py`, each in its own process, on a model of the recipe's shape). Work directory: `<out>/<dataset>/` holds the `.npz` files, `select-<steps>/` (the selection
runs) and `seed-<k>/` (`ours/`, our model_dir; `theirs.json`; `results.json` once both sides are done); a rerun
with the same flags skips what has results and resumes our unfinished runs from their checkpoints. Checkpoints and
weights go once a run's results are written, unless `--keep_checkpoints`.
"""

import argparse
import os
import subprocess
import sys

import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints
from benchmarks.resumable import check_same_flags, read_json, write_json, write_results
from benchmarks.seeds import add_seed_flags, check_seed_flags, over_seeds, spread
from benchmarks.uea_archive import DATASETS, longest, write_npz

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _prepare(work, dataset, args):
    """Writes `train`, `test`, `fit` and `validation` `.npz` files (time axes padded to the longest of both splits);
    returns their paths."""
    paths = {split: os.path.join(work, f"{split}.npz") for split in ("train", "test", "fit", "validation")}
    if all(os.path.exists(path) for path in paths.values()):
        return paths
    max_time = longest(dataset)
    write_npz(dataset, "TRAIN", paths["train"], max_time)
    write_npz(dataset, "TEST", paths["test"], max_time)
    with np.load(paths["train"]) as train:
        fields = {name: train[name] for name in train.files}
    order = np.random.default_rng(args.data_seed).permutation(len(fields["labels"]))
    held = int(round(args.validation_share * len(order)))
    np.savez(paths["validation"], **{name: values[order[:held]] for name, values in fields.items()})
    np.savez(paths["fit"], **{name: values[order[held:]] for name, values in fields.items()})
    return paths


def _ours(train, test, model_dir, steps, seed, threads):
    """Our CLI's run (`threads`: TensorFlow's intra-op threads, 0 its default); returns (eval results, steady
    training examples/second)."""
    command = [sys.executable, "-m", "tasks.run_time_series_classifier", f"--train_file={train}",
               f"--eval_file={test}", f"--model_dir={model_dir}", f"--num_train_steps={steps}", f"--seed={seed}",
               "--checkpoint_steps=500"]
    with np.load(test) as data:
        command.append(f"--max_time={data['features'].shape[1]}")
    print("ours:", " ".join(command), flush=True)
    env = {**os.environ, **({"TF_NUM_INTRAOP_THREADS": str(threads)} if threads else {})}
    subprocess.run(command, cwd=REPO_ROOT, check=True, env=env)
    results = read_json(os.path.join(model_dir, "eval_results.json"))
    return results, read_json(os.path.join(model_dir, "train_results.json"))["steady_examples_per_second"]


def _select_steps(work, paths, args):
    """The candidate of `--steps` with the best validation accuracy of ours (ties: fewer steps)."""
    scores = {}
    for steps in args.steps:
        run = os.path.join(work, f"select-{steps}")
        path = os.path.join(run, "results.json")
        if not os.path.exists(path):
            results, _ = _ours(paths["fit"], paths["validation"], os.path.join(run, "ours"), steps, args.seed,
                               args.threads)
            write_json(path, {"validation_accuracy": results["accuracy"]})
        if not args.keep_checkpoints:
            remove_checkpoints(run, model_dirs=["ours"], weights=["ours"])
        scores[steps] = read_json(path)["validation_accuracy"]
        print(f"select: {steps} steps -> validation accuracy {scores[steps]:.4f}", flush=True)
    return min(args.steps, key=lambda steps: (-scores[steps], steps))


def _latency(work, paths, args):
    """Batch-1 latency of our SavedModel and TFLite model and of the PyTorch peer's eager forward, each timed in a
    process of its own (`benchmarks.time_series_latency`), on a model of the recipe's shape trained 2 steps (the
    weights do not change the time)."""
    path = os.path.join(work, "latency.json")
    if os.path.exists(path):
        return read_json(path)
    run = os.path.join(work, "latency")
    model_dir, version_dir = os.path.join(run, "ours"), os.path.join(run, "export", "1")
    tflite_file = os.path.join(run, "model.tflite")
    _ours(paths["fit"], paths["validation"], model_dir, 2, args.seed, args.threads)
    if not os.path.exists(version_dir):
        subprocess.run([sys.executable, "-m", "export.saved_model", f"--model_dir={model_dir}",
                        f"--export_dir={os.path.dirname(version_dir)}", "--version=1"], cwd=REPO_ROOT, check=True)
    if not os.path.exists(tflite_file):
        subprocess.run([sys.executable, "-m", "export.tflite", f"--saved_model_dir={version_dir}",
                        f"--output={tflite_file}"], cwd=REPO_ROOT, check=True)
    results = {}
    for side, target in (("saved_model", version_dir), ("tflite", tflite_file), ("torch", model_dir)):
        out = os.path.join(run, f"{side}.json")
        subprocess.run([sys.executable, "-m", "benchmarks.time_series_latency", f"--side={side}", f"--path={target}",
                        f"--model_dir={model_dir}", f"--out={out}", f"--threads={args.threads}"], cwd=REPO_ROOT,
                       check=True)
        results[side] = read_json(out)
    write_json(path, results)
    if not args.keep_checkpoints:
        remove_checkpoints(run, model_dirs=["ours"], weights=["ours"])
    return results


def _run_seed(paths, steps, threads):
    def run(seed_args, seed_work):
        ours, ours_rate = _ours(paths["train"], paths["test"], os.path.join(seed_work, "ours"), steps, seed_args.seed,
                                threads)
        theirs_path = os.path.join(seed_work, "theirs.json")
        if not os.path.exists(theirs_path):
            subprocess.run([sys.executable, "-m", "benchmarks.time_series_torch", f"--train={paths['train']}",
                            f"--test={paths['test']}", f"--steps={steps}", f"--seed={seed_args.seed}",
                            f"--out={theirs_path}", f"--threads={threads}"], cwd=REPO_ROOT, check=True)
        theirs = read_json(theirs_path)
        write_results(seed_work, {k: ours[k] for k in ("accuracy", "macro_f1")},
                      {k: theirs[k] for k in ("accuracy", "macro_f1")}, ours_rate, theirs["examples_per_second"])
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the work directory (resumable)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help=f"comma-separated, of {', '.join(DATASETS)}")
    parser.add_argument("--steps", default="500,1000,2000", help="candidate training steps, chosen on validation")
    parser.add_argument("--validation_share", type=float, default=0.2, help="of the training split, for the choice")
    parser.add_argument("--data_seed", type=int, default=0, help="draws the validation split")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads of both sides (TensorFlow's intra-op "
                        "threads, torch.set_num_threads); 0: each library's default. On a CPU other processes "
                        "share, 1 keeps PyTorch's threads from waiting on each other")
    add_seed_flags(parser, default_seeds=5)
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()
    check_seed_flags(parser, args)
    args.datasets = args.datasets.split(",")
    unknown = sorted(set(args.datasets) - set(DATASETS))
    if unknown:
        parser.error(f"--datasets: {unknown[0]!r} is not one of {', '.join(DATASETS)}")
    args.steps = [int(steps) for steps in args.steps.split(",")]
    check_same_flags(args.out, args)
    for dataset in args.datasets:
        work = os.path.join(args.out, dataset)
        os.makedirs(work, exist_ok=True)
        paths = _prepare(work, dataset, args)
        steps = _select_steps(work, paths, args)
        print(f"{dataset}: {steps} steps (chosen on validation)", flush=True)
        done = over_seeds(args, work, _run_seed(paths, steps, args.threads), resumes=True,
                          checkpoints={"model_dirs": ["ours"], "weights": ["ours"]})
        for seed, results in done:
            print(f"{dataset} seed {seed}: ours accuracy {results['ours']['accuracy']:.4f} macro F1 "
                  f"{results['ours']['macro_f1']:.4f} | PyTorch accuracy {results['theirs']['accuracy']:.4f} "
                  f"macro F1 {results['theirs']['macro_f1']:.4f}", flush=True)
        summary = spread([r["ours"]["accuracy"] for _, r in done], [r["theirs"]["accuracy"] for _, r in done])
        ours_rate = float(np.mean([r["ours_examples_per_second"] for _, r in done]))
        their_rate = float(np.mean([r["theirs_examples_per_second"] for _, r in done]))
        print(f"{dataset} test accuracy over {summary['n']} seeds: ours {summary['ours_mean']:.4f} ± "
              f"{summary['ours_std']:.4f}, PyTorch {summary['theirs_mean']:.4f} ± {summary['theirs_std']:.4f}, "
              f"difference {summary['difference']:+.4f} ± {summary['difference_se']:.4f}; training examples/s: "
              f"ours {ours_rate:.0f}, PyTorch {their_rate:.0f} ({ours_rate / their_rate:.2f}x)", flush=True)
        latency = _latency(work, paths, args)
        print(f"{dataset} batch-1 latency (median ms): SavedModel {latency['saved_model']['median_ms']:.2f}, TFLite "
              f"{latency['tflite']['median_ms']:.2f}, PyTorch eager {latency['torch']['median_ms']:.2f}", flush=True)
        write_json(os.path.join(work, "summary.json"), {**summary, "steps": steps, "ours_examples_per_second":
                                                        ours_rate, "theirs_examples_per_second": their_rate,
                                                        "latency": latency})


if __name__ == "__main__":
    main()
