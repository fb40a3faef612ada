"""A finished benchmark run's clean-up: its checkpoints go once its results are written, unless --keep_checkpoints.

A run keeps checkpoints only to resume after a kill; once its `results.json` (or the benchmark's own results file)
is written, a rerun skips the run and nothing reads them again. Only files we wrote go, each named by pattern:
our model_dirs' tf.train checkpoints (`checkpoints/checkpoint`, `checkpoints/ckpt-*`, the folder once empty), the
final weights no later step reads (`model.weights.h5`, and `model.safetensors` at the top of a directory, e.g. a
start checkpoint, and in `encoder/` and `pretrainer/`), and the PyTorch side's training state (`train_pytorch`'s
`state_path`). Everything else in those directories stays: the results, `task.json`, `run.json`, the configs.
"""

import fnmatch
import os
import shutil

CHECKPOINT_FILES = {"checkpoints": ("checkpoint", "ckpt-*")}  # tf.train.CheckpointManager's, in a model_dir
WEIGHT_FILES = {"": ("model.weights.h5", "model.safetensors"), "encoder": ("model.safetensors",),
                "pretrainer": ("model.safetensors",)}


def add_keep_checkpoints_flag(parser):
    """Adds `--keep_checkpoints` (default off: a finished run's checkpoints are deleted)."""
    parser.add_argument("--keep_checkpoints", action="store_true",
                        help="keep every run's checkpoints and final weights after its results are written (by "
                             "default they are deleted then; a killed run keeps them and resumes)")


def _remove_matching(directory, patterns):
    if not os.path.isdir(directory):
        return []
    removed = [os.path.join(directory, name) for name in sorted(os.listdir(directory))
               if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]
    for path in removed:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)  # a checkpoint TensorFlow was still writing (`ckpt-<n>_temp/`)
        else:
            os.remove(path)
    return removed


def remove_checkpoints(work, model_dirs=(), weights=(), torch_states=()):
    """Deletes a finished run's checkpoints; call it once the run's results file is written.

    Args:
        work: the run's work directory; the other arguments are paths relative to it.
        model_dirs: our model_dirs (a task CLI's --model_dir) whose tf.train checkpoints go.
        weights: model_dirs or start checkpoints whose final weights go too: only those no later step of the
            benchmark reads (an export, a distillation teacher and a model_dir loaded again keep theirs).
        torch_states: `train_pytorch` state files (their `.tmp` too).

    Returns: the removed paths.
    """
    removed = []
    for model_dir in model_dirs:
        for folder, patterns in CHECKPOINT_FILES.items():
            directory = os.path.join(work, model_dir, folder)
            removed += _remove_matching(directory, patterns)
            if os.path.isdir(directory) and not os.listdir(directory):
                os.rmdir(directory)
    for model_dir in weights:
        for folder, patterns in WEIGHT_FILES.items():
            removed += _remove_matching(os.path.join(work, model_dir, folder), patterns)
    for state in torch_states:
        for path in (os.path.join(work, state), os.path.join(work, state) + ".tmp"):
            if os.path.isfile(path):
                os.remove(path)
                removed.append(path)
    return removed
