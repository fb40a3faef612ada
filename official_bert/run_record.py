"""What defines a training run, recorded in `<model_dir>/run.json`, so a resume never continues another run.

A run is defined by its task (task.json's facts and the task's training settings), its training flags and its
training data: each file's size and SHA-256 (of its first and last MiB when the data is over 1 GiB in all), a
TFDS split by name. A later training run into a model_dir that holds progress of an earlier one (checkpoints or
trained weights) must have the same record; the first difference is named (another task kind or task first), and
`--overwrite` (or another `--model_dir`) starts over.

Examples:

>>> record = run_record(config, task, lower_case=True)
>>> check_same_training("out/mrpc", record)  # raises ValueError naming the first difference
>>> write_run_record("out/mrpc", record)
"""

import hashlib
import json
import logging
import os

from official_bert import model_dir as model_dirs

logger = logging.getLogger(__name__)

RUN_FILE = "run.json"
# RunConfig fields that change what a run trains (not: where it writes, how often it checkpoints, the
# evaluation batch, the strategy or XLA, which a resumed run on another machine may change).
TRAINING_FIELDS = ("init_checkpoint", "max_seq_length", "train_batch_size", "learning_rate", "num_train_epochs",
                   "num_train_steps", "warmup_proportion", "weight_decay", "optimizer", "adam_epsilon",
                   "mixed_precision", "seed", "deterministic")
# Training data larger than this in all is fingerprinted by each file's size and its first and last MiB
# (pre-training corpora), so that starting a run does not read it all.
_FULL_HASH_BYTES = 1 << 30
_MIB = 1 << 20


def file_fingerprint(path, sampled=False):
    """`{"file", "bytes", "sha256"}` of a data file.

    Args:
        path: the file.
        sampled: hash only its first and last MiB (marked `"sampled": true`).
    """
    size = os.path.getsize(path)
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        if not sampled:
            for block in iter(lambda: f.read(_MIB), b""):
                digest.update(block)
        else:
            digest.update(f.read(_MIB))
            f.seek(max(size - _MIB, 0))
            digest.update(f.read(_MIB))
    fingerprint = {"file": os.path.abspath(path), "bytes": size, "sha256": digest.hexdigest()}
    if sampled:
        fingerprint["sampled"] = True
    return fingerprint


def run_record(config, task, lower_case):
    """The record of a training run.

    Args:
        config: the `RunConfig`.
        task: the task (`task_info()`, `training_settings()`, `train_sources()`).
        lower_case: the resolved casing.
    """
    files = [s for s in task.train_sources() if os.path.isfile(s)]
    sampled = sum(os.path.getsize(f) for f in files) > _FULL_HASH_BYTES
    sources = [file_fingerprint(s, sampled) if os.path.isfile(s) else {"source": s} for s in task.train_sources()]
    return {"task": {"kind": task.kind, **task.task_info(), **task.training_settings()},
            "flags": {**{name: getattr(config, name) for name in TRAINING_FIELDS}, "do_lower_case": lower_case},
            "data": sources}


def _first_difference(previous, current, prefix=""):
    """(key path, earlier value, this run's value) of the first difference, or None.

    A data file (a dict with "file") is compared by its content, not its path; where they differ, each value names its
    own run's file.
    """
    if isinstance(previous, dict) and isinstance(current, dict):
        for key in list(previous) + [k for k in current if k not in previous]:
            found = _first_difference(previous.get(key), current.get(key), f"{prefix}.{key}" if prefix else key)
            if found:
                return found
        return None
    if isinstance(previous, list) and isinstance(current, list):
        if len(previous) != len(current):
            return prefix, f"{len(previous)} entries", f"{len(current)} entries"
        for i, (a, b) in enumerate(zip(previous, current)):
            if isinstance(a, dict) and isinstance(b, dict):  # a data file: its content decides, not its path
                if {k: v for k, v in a.items() if k != "file"} != {k: v for k, v in b.items() if k != "file"}:
                    return f"{prefix}[{i}]", a, b
            elif a != b:
                return f"{prefix}[{i}]", a, b
        return None
    return None if previous == current else (prefix, previous, current)


def _run_kind(record):
    """A record's task in words: "a tagging run (task 'ner')"."""
    task = record.get("task") or {}
    return f"a {task.get('kind')} run (task {task.get('task')!r})"


def _difference(previous, current):
    """How `current` differs from the model_dir's `previous` record, in words ("holds ..."), or None.

    The task kind and task come first, so a model_dir of another task is named as such whatever else differs; then
    the rest of the task, the flags and the data.
    """
    before, now = previous.get("task") or {}, current.get("task") or {}
    if any(before.get(key) != now.get(key) for key in ("kind", "task")):
        return f"holds {_run_kind(previous)}, and this is {_run_kind(current)}"
    order = ("task", "flags", "data")
    for key in order + tuple(k for k in {**previous, **current} if k not in order):
        found = _first_difference({key: previous.get(key)}, {key: current.get(key)})
        if found:
            return f"holds another training run: {_in_words(*found)}"
    return None


def _in_words(key, before, now):
    """One difference: a data file each with its own run's path ("data[0] (b.tsv) has {...}, the earlier run's
    (a.tsv) had {...}"), any other value as "key was x, this run has y"."""
    if not (isinstance(before, dict) and isinstance(now, dict) and "file" in before and "file" in now):
        if isinstance(before, dict) and isinstance(now, dict):  # (a TFDS split, or a file against a split)
            before, now = [before.get("file") or before.get("source"), now.get("file") or now.get("source")]
        return f"{key} was {before!r}, this run has {now!r}"
    content = [{k: v for k, v in entry.items() if k != "file"} for entry in (before, now)]
    return f"{key} ({now['file']}) has {content[1]!r}, the earlier run's ({before['file']}) had {content[0]!r}"


def has_progress(model_dir):
    """Whether `model_dir` holds training progress: a checkpoint or trained weights."""
    checkpoints = os.path.join(model_dir, "checkpoints")
    return (os.path.isfile(os.path.join(model_dir, model_dirs.WEIGHTS_FILE))
            or os.path.isdir(checkpoints) and any(name.startswith("ckpt") for name in os.listdir(checkpoints)))


def read_run_record(model_dir):
    """The model_dir's run.json, or None."""
    path = os.path.join(model_dir, RUN_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_same_training(model_dir, record):
    """Refuses to continue, in `model_dir`, an earlier run that `record` does not describe.

    Nothing is refused when the model_dir holds no progress (an earlier run that stopped before its first
    checkpoint is started again). A model_dir of an older official-bert without run.json is checked by its
    task.json only.

    Raises:
        ValueError: naming the first difference, both values and the way out.
    """
    if not has_progress(model_dir):
        return
    previous = read_run_record(model_dir)
    if previous is None:  # written before run.json: compare what its task.json recorded
        logger.warning("%s has no %s (an older official-bert wrote it): only its task.json is compared with this "
                       "run", model_dir, RUN_FILE)
        recorded = model_dirs.read_task_info(model_dir)
        task = {**record["task"], "max_seq_length": record["flags"]["max_seq_length"],
                "do_lower_case": record["flags"]["do_lower_case"]}
        model_dirs.check_same_run(model_dir, task.pop("kind"), {k: v for k, v in task.items() if k in recorded})
        return
    difference = _difference(previous, record)
    if difference:
        raise ValueError(f"{model_dir} {difference}; pass --overwrite to start over there, or use another "
                         f"--model_dir")


def write_run_record(model_dir, record):
    """Writes run.json."""
    model_dirs.write_json(os.path.join(model_dir, RUN_FILE), record)

