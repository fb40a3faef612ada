"""Our side of the fine-tuning benchmarks: a task CLI run with the shared recipe, and its results."""

import json
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_our_cli(module, flags, model_dir, args, seq_length=128, checkpoint_steps=100000):
    """Runs `python -m <module>` with the benchmark recipe and returns its results.

    Args:
        module: the entry point, e.g. "tasks.run_classifier".
        flags: task-specific flags (data, checkpoint, ...), as `--name=value` strings.
        model_dir: the run's --model_dir.
        args: the benchmark's parsed arguments (learning_rate, epochs, seed, jit_compile, mixed_precision).
        seq_length: --max_seq_length.
        checkpoint_steps: --checkpoint_steps; a rerun on the same `model_dir` resumes from the last checkpoint.
    Returns: `(eval_results dict, steady training examples/second, training wall seconds)`.
    """
    command = [sys.executable, "-m", module, *flags, f"--model_dir={model_dir}", f"--max_seq_length={seq_length}",
               "--train_batch_size=32", f"--learning_rate={args.learning_rate}", f"--num_train_epochs={args.epochs}",
               "--warmup_proportion=0.1", "--weight_decay=0.01", "--adam_epsilon=1e-8", f"--seed={args.seed}",
               f"--checkpoint_steps={checkpoint_steps}"]
    if args.jit_compile is not None:
        command.append(f"--jit_compile={str(args.jit_compile).lower()}")
    if args.mixed_precision:
        command.append(f"--mixed_precision={args.mixed_precision}")
    print("ours:", " ".join(command), flush=True)
    subprocess.run(command, cwd=REPO_ROOT, check=True)
    with open(os.path.join(model_dir, "eval_results.json")) as f:
        metrics = json.load(f)
    with open(os.path.join(model_dir, "train_results.json")) as f:
        train = json.load(f)
    return metrics, train["steady_examples_per_second"], train["seconds"]
