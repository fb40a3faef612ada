"""What `--deterministic` (TensorFlow's op determinism) costs, and whether reruns end with the same weights.

    python -m benchmarks.determinism --out=out/determinism
    python -m benchmarks.determinism --steps=20 --max_seq_length=128 --runs=2

Fine-tunes ../shared/data/all-MiniLM-L6-v2 on MRPC through `tasks.run_classifier`, `--runs` times with and
`--runs` times without `--deterministic`, alternating, on the same machine. Prints each mode's steady training
examples/second (mean and spread over its runs) and the ratio, and the largest weight difference between the
runs of each mode (0 = bit-identical). Finished runs are kept in `--out` and not repeated (delete it to measure
again); a finished run's checkpoints are deleted (its final weights stay: the comparison reads them), unless
`--keep_checkpoints`.
"""

import argparse
import json
import os
import subprocess
import sys

import h5py
import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))


def _weights(model_dir):
    values = {}
    with h5py.File(os.path.join(model_dir, "model.weights.h5"), "r") as f:
        f.visititems(lambda name, item: values.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None)
    return values


def _train(model_dir, deterministic, args):
    """One run (skipped when `model_dir` holds a finished one); returns steady examples/second."""
    results = os.path.join(model_dir, "train_results.json")
    if not os.path.isfile(os.path.join(model_dir, "model.weights.h5")):
        command = [sys.executable, "-m", "tasks.run_classifier", "--task=MRPC",
                   f"--data_dir={os.path.join(SHARED_DATA, 'glue', 'MRPC')}",
                   f"--init_checkpoint={os.path.join(SHARED_DATA, 'all-MiniLM-L6-v2')}", f"--model_dir={model_dir}",
                   f"--max_seq_length={args.max_seq_length}", f"--train_batch_size={args.batch_size}",
                   f"--num_train_steps={args.steps}", "--do_eval=false", "--checkpoint_steps=100000",
                   f"--deterministic={str(deterministic).lower()}", "--overwrite"]
        print(" ".join(command), flush=True)
        subprocess.run(command, cwd=REPO_ROOT, check=True)
    if not args.keep_checkpoints:
        remove_checkpoints(os.path.dirname(model_dir), model_dirs=(os.path.basename(model_dir),))
    with open(results) as f:
        return json.load(f)["steady_examples_per_second"]


def _max_difference(model_dirs):
    first = _weights(model_dirs[0])
    return max(float(np.max(np.abs(first[name] - other[name]))) for d in model_dirs[1:]
               for other in [_weights(d)] for name in first)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out/determinism")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()

    speeds, dirs = {True: [], False: []}, {True: [], False: []}
    for i in range(args.runs):
        for deterministic in (False, True):
            model_dir = os.path.join(args.out, f"{'deterministic' if deterministic else 'default'}-{i}")
            speeds[deterministic].append(_train(model_dir, deterministic, args))
            dirs[deterministic].append(model_dir)
    print(f"\nMRPC, all-MiniLM-L6-v2, {args.steps} steps, batch {args.batch_size}, sequence {args.max_seq_length}")
    print(f"{'mode':<16}{'examples/s':>22}{'max weight diff between runs':>32}")
    for deterministic in (False, True):
        s = np.asarray(speeds[deterministic])
        difference = _max_difference(dirs[deterministic]) if args.runs > 1 else float("nan")
        print(f"{'--deterministic' if deterministic else 'default':<16}{s.mean():>14.2f} +- {s.std():<5.2f}"
              f"{difference:>32.3g}")
    print(f"speed ratio deterministic / default: {np.mean(speeds[True]) / np.mean(speeds[False]):.3f}")


if __name__ == "__main__":
    main()
